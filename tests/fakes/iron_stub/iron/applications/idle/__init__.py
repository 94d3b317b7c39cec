"""A model that plans no calls."""

__all__ = ["IdleModel"]


class IdleModel:
    profile = "profiles"

    @classmethod
    def tune_arguments(cls, parser):
        pass

    @classmethod
    def tune_calls(cls, parser, args):
        return []
