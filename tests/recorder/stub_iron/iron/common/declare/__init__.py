"""The parts of IRON's operator declarations the recorder reads."""

import dataclasses
from typing import ClassVar


class bfloat16:
    """Stands in for ml_dtypes' bfloat16; only its name is read."""


class _Named:
    def __init__(self, name):
        self.name = name


class Extent:
    """A per-call value bounding the param `field` (e.g. GEMM's rows bound M)."""

    def __init__(self, name, field):
        self.name = name
        self.field = _Named(field)


@dataclasses.dataclass(frozen=True)
class Declaration:
    params: tuple
    tunables: tuple


class BoundBuffer:
    def __init__(self, name, direction, shape, axes=None, dtype=bfloat16):
        self.name, self.direction, self.shape, self.dtype = name, direction, shape, dtype
        self._axes = dict(axes or {})

    def extent_axis(self, extent):
        return self._axes.get(extent.field.name)


@dataclasses.dataclass(eq=False)
class Operator:
    """The base: subclasses are dataclasses naming their declaration."""

    declaration: ClassVar[Declaration]
    _members: ClassVar[tuple] = ()
    domains: ClassVar[dict] = {}
    pinned: frozenset = dataclasses.field(default=frozenset(), kw_only=True)

    def resolve(self, dev):
        return dataclasses.replace(self)

    def resolved(self, dev):
        return self.resolve(dev)

    def _domains(self, dev):
        return {k: v for k, v in self.domains.items() if k in self.declaration.tunables}
