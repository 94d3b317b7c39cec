"""Stub of iron/common/declare/operator.py @ 607010e5: the Operator surface irontune reads.

From that file: keyword-only construction, `pinned` (the tunables the
caller gave, set by the metaclass), the class's `_members`,
`_tunable_fields` and `_domains` (name -> `Domain`), `resolve(dev)` and
`resolved(dev=None)`, `domains(dev)` (each tunable's rule asked of the
resolved operator; a pinned tunable, one without a rule and one whose
`when` flag is false are not searched), `buffers` and `value(name)`.

From the reference (IRON's tune docs, iron/tune/autotune.py `Shape`):
`declaration.params`, the dimensions an entry matches on. The reference
shows no `declaration.tunables`; there is none here.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from iron._stub import hide
from .bound import BoundBuffer, BoundValue
from .domain import Domain
from .member import _Buffer, _Member, _Value


class Unresolvable(ValueError):
    """No legal value on the device (a ValueError, as the reference's settings() catches it)."""


class Incompatible(ValueError):
    """The extents do not fit the tunables."""


@dataclasses.dataclass(frozen=True)
class Declaration:
    params: tuple[str, ...]


class _OperatorMeta(type):
    def __call__(cls, *args, **kwargs):
        if args:
            raise TypeError(f"{cls.__name__} is constructed by keyword")
        kwargs.setdefault("pinned", frozenset(
            k for k, v in kwargs.items()
            if k in cls._tunable_fields and v is not None))
        return super().__call__(**kwargs)


@dataclasses.dataclass(eq=False, kw_only=True)
class Operator(metaclass=_OperatorMeta):
    _members: ClassVar[tuple[_Member, ...]] = ()
    _param_fields: ClassVar[tuple[str, ...]] = ()
    _tunable_fields: ClassVar[tuple[str, ...]] = ()
    _domains: ClassVar[dict[str, Domain]] = {}

    pinned: frozenset = frozenset()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        own = tuple(v for v in vars(cls).values() if isinstance(v, _Member))
        if own:
            cls._members = own

    @property
    def declaration(self) -> Declaration:
        return Declaration(tuple(type(self)._param_fields))

    def resolve(self, dev) -> "Operator":
        return dataclasses.replace(self)

    def compatible(self) -> None:
        """Check the extents against the resolved tunables; raise ValueError."""

    def resolved(self, dev=None) -> "Operator":
        if dev is None:
            import aie.utils
            dev = aie.utils.ensure_current_device()
        new = self.resolve(dev)
        missing = [n for n in self._tunable_fields if getattr(new, n) is None]
        if missing:
            raise Unresolvable(f"{type(self).__name__}.resolve() left {missing} unset")
        new.compatible()
        return new

    def domains(self, dev) -> dict[str, tuple[Any, ...]]:
        found = {}
        for name in self._tunable_fields:
            domain = self._domains.get(name)
            if (name in self.pinned or domain is None
                    or (domain.when is not None and not getattr(self, domain.when))):
                continue
            found[name] = domain.values(self, dev, name)
        return found

    @property
    def buffers(self) -> list[BoundBuffer]:
        return [BoundBuffer(m, self) for m in self._members if isinstance(m, _Buffer)]

    def value(self, name: str) -> BoundValue:
        for m in self._members:
            if isinstance(m, _Value) and m.name == name:
                return BoundValue(m, self)
        raise TypeError(f"{type(self).__name__} declares no value {name!r}")


hide(__name__, globals())
