"""Stub of iron/common/declare (its __init__ @ 072dce66 exports these names)."""

from .bound import BoundBuffer, BoundValue
from .domain import Choices, Divisors, Domain, Width
from .member import Direction, Extent, In, InOut, Out, Scratchpad, bfloat16
from .operator import Incompatible, Operator, Unresolvable
