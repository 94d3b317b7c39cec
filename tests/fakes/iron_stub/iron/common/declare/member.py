"""Stub of iron/common/declare/member.py @ 0a215bf9: what an operator body declares.

`In`, `Out`, `InOut` (a buffer's `*dims`, `dtype`; its `direction` with
`fills` and `drains`) and `Extent(field)`, a param a graph may bound per
call (its `field` has the param's `name`). The dims are field names or
integers here, where IRON's are DimRefs.
"""

from __future__ import annotations

import enum


class bfloat16:
    """Stands in for ml_dtypes.bfloat16 (its `__name__` is what is read): 2 bytes."""

    itemsize = 2


class Direction(enum.Enum):
    IN = "in"
    OUT = "out"
    INOUT = "inout"

    @property
    def fills(self) -> bool:
        return self is not Direction.OUT

    @property
    def drains(self) -> bool:
        return self is not Direction.IN


class _Member:
    name = ""

    def __set_name__(self, owner, name) -> None:
        self.name = name


class _Buffer(_Member):
    direction: Direction

    def __init__(self, *dims, dtype=bfloat16) -> None:
        self.dims = dims
        self.dtype = dtype


class In(_Buffer):
    direction = Direction.IN


class Out(_Buffer):
    direction = Direction.OUT


class InOut(_Buffer):
    direction = Direction.INOUT


class _FieldRef:
    def __init__(self, name: str) -> None:
        self.name = name


class _Value(_Member):
    kind = "scratchpad"


class Scratchpad(_Value):
    pass


class Extent(_Value):
    def __init__(self, field: str) -> None:
        self.field = _FieldRef(field)
