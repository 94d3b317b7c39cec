"""A recorded graph as the tuner reads it: steps over graph buffers, and the
bindings that write operators' per-call values."""

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Value:
    """A per-call scalar of a graph."""

    name: str
    kind: str = "scratchpad"


@dataclasses.dataclass(frozen=True)
class Affine:
    """scale * value + bias."""

    value: Value
    scale: int = 1
    bias: int = 0

    def evaluate(self, values):
        return self.scale * int(values[self.value.name]) + self.bias


@dataclasses.dataclass(frozen=True)
class Ref:
    """Where a step's buffer lies: `nbytes` None for the buffer's own size."""

    root: str
    offset: int = 0
    nbytes: Any = None


@dataclasses.dataclass
class Step:
    op: Any
    slots: list

    def refs(self):
        return list(self.slots)


@dataclasses.dataclass(frozen=True)
class BoundValue:
    name: str
    member: Any = None


@dataclasses.dataclass(frozen=True)
class Binding:
    op: Any
    member: BoundValue
    expression: Affine

    @property
    def symbol(self):
        return self.member.name


@dataclasses.dataclass
class Recording:
    name: str
    values: list
    steps: list
    bindings: list
    inputs: list
    outputs: list
    addresses: tuple = ()
