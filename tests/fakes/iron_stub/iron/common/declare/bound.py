"""Stub of an operator's bound buffers and values, as irontune reads them.

`BoundBuffer`: `name`, `role` (the member's class, `In`/`Out`/`InOut`),
`fills`, `drains`, `shape`, `dtype`, `nbytes` and `extent_axis(value)`, as
the reference's iron/tune/measure.py reads a buffer (`buf.role is Out`,
`buf.fills`, `buf.extent_axis(op.value(extent))`). It has no `direction`:
the reference reads none.

`BoundValue`: `name`, `kind`, `member` (iron/common/declare/bound.py @
050561c6) and `bounds`, the param field an extent bounds or None
(the reference's judge: `op.value(extent).bounds.name`).
"""

from __future__ import annotations

import math

from .member import Extent


class BoundBuffer:
    def __init__(self, member, op) -> None:
        self._member = member
        self._op = op
        self.name = member.name
        self.role = type(member)

    @property
    def fills(self) -> bool:
        return self._member.direction.fills

    @property
    def drains(self) -> bool:
        return self._member.direction.drains

    @property
    def shape(self) -> tuple:
        return tuple(d if isinstance(d, int) else int(getattr(self._op, d))
                     for d in self._member.dims)

    @property
    def dtype(self):
        return self._member.dtype

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def extent_axis(self, value):
        """The axis the param `value` bounds sizes, or None; `value` is `op.value(name)`."""
        if not isinstance(value, BoundValue):
            raise TypeError(f"extent_axis takes op.value(name), not {value!r}")
        if value.bounds is None:
            return None
        dims = self._member.dims
        return dims.index(value.bounds.name) if value.bounds.name in dims else None


class BoundValue:
    def __init__(self, member, op) -> None:
        self.member = member
        self.name = member.name
        self.kind = member.kind
        self.bounds = member.field if isinstance(member, Extent) else None
