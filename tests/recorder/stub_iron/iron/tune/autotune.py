"""A call as the tuner times it, and the points it is spread over."""

import dataclasses
from typing import Any, Mapping, Sequence


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
