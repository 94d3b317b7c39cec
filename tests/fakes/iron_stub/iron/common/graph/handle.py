"""Stub of iron/common/graph/handle.py @ 057b08d4: `Value(name, kind, dtype)`,
a graph's per-call scalar, and `Affine(value, scale=1, bias=0)`, the
expression a binding writes (`evaluate(values)`)."""

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Value:
    name: str
    kind: str = "scratchpad"
    dtype: Any = "int32"


@dataclasses.dataclass(frozen=True)
class Affine:
    value: Value
    scale: int = 1
    bias: int = 0

    def evaluate(self, values) -> int:
        return self.scale * int(values[self.value.name]) + self.bias
