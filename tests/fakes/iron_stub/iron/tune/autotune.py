"""Stub of iron/tune/autotune.py: only its placer fit check."""

import os


def refusal(op):
    """Why the placer refuses `op` alone, or None when it fits.

    IRON_STUB_UNPLACEABLE=1 makes every design refused, as a placer that
    cannot place it; no compile runs either way.
    """
    del op  # the stub's placer looks at nothing
    if os.environ.get("IRON_STUB_UNPLACEABLE") == "1":
        return "placer: no column has room for the design's tiles"
    return None
