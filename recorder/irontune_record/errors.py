"""The one error the recorder reports: a message naming what is wrong and where."""


class RecordError(Exception):
    """Recording failed; str() is the message shown to the user."""
