"""Stub of the reference's iron/tune/autotune.py: Point, Timed and refusal.

`Point(weight, values)`; `Timed(recording, values, contents, points)`, one
call of a recorded graph; `refusal(op)`, the placer's verdict on `op` alone
(None where it fits). IRON_STUB_UNPLACEABLE=1 makes the placer refuse
every design.
"""

import dataclasses
import os
from typing import Any, Mapping, Sequence

from iron._stub import hide


@dataclasses.dataclass(frozen=True)
class Point:
    weight: float
    values: Mapping[str, int]


@dataclasses.dataclass
class Timed:
    recording: Any
    values: Mapping[str, int] = dataclasses.field(default_factory=dict)
    contents: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    points: Sequence[Point] = ()


def refusal(op):
    del op  # the stub's placer looks at nothing
    if os.environ.get("IRON_STUB_UNPLACEABLE") == "1":
        return "placer: no column has room for the design's tiles"
    return None


hide(__name__, globals())
