"""Stub of iron.common: the names its __init__ @ 04e0f3ea exports that irontune reads."""

from .declare import Extent, In, InOut, Operator, Out, Scratchpad, Unresolvable
