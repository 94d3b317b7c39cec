"""Stub of iron/common/graph/trace.py @ 01c8638a: `Binding(op, member,
expression)`, a graph value bound to an operator's value member (a
`BoundValue`), and its device `symbol`."""

import dataclasses
from typing import Any

from .handle import Affine


@dataclasses.dataclass(frozen=True)
class Binding:
    op: Any
    member: Any
    expression: Affine

    @property
    def symbol(self) -> str:
        return f"{type(self.op).__name__.lower()}_{self.member.name}"
