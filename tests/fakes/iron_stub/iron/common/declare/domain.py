"""Stub of iron/common/declare/domain.py @ 607010e5: a tunable's domain rule.

Same classes and fields (`Domain.when`, `Width`, `Divisors(of, step, cap,
span)`, `Choices(options)`), each `values(op, dev, name)` asked of the
resolved operator, as the file states them; written for the stub, not
taken from it.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any


def evaluate(bound: Any, op: Any, dev: Any) -> Any:
    """`bound`, or its value when it is a callable of (op) or (op, dev)."""
    if not callable(bound):
        return bound
    wants = len(inspect.signature(bound).parameters)
    return bound(op, dev) if wants == 2 else bound(op)


@dataclasses.dataclass(frozen=True)
class Domain:
    when: str | None = dataclasses.field(default=None, kw_only=True)

    def values(self, op: Any, dev: Any, name: str) -> tuple:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Width(Domain):
    """The value and every power of two up to the device's columns, widest first."""

    def values(self, op, dev, name):
        found = {getattr(op, name)}
        power = 1
        while power <= dev.cols:
            found.add(power)
            power *= 2
        return tuple(sorted(found, reverse=True))


@dataclasses.dataclass(frozen=True)
class Divisors(Domain):
    """The value times and over powers of two that divide `of`, multiples of
    `step`, at most `cap`, within `span` octaves; largest first."""

    of: Any
    step: Any = 1
    cap: Any = None
    span: int | None = None

    def values(self, op, dev, name):
        start = getattr(op, name)
        of, step = evaluate(self.of, op, dev), evaluate(self.step, op, dev)
        cap = evaluate(self.cap, op, dev)

        def fits(v):
            return of % v == 0 and (cap is None or v <= cap)

        up, v, octave = [], start * 2, 1
        while fits(v) and (self.span is None or octave <= self.span):
            up.append(v)
            v, octave = v * 2, octave + 1
        down, v, octave = [], start, 1
        while v % 2 == 0 and (v // 2) % step == 0 and (
                self.span is None or octave <= self.span):
            v, octave = v // 2, octave + 1
            if fits(v):
                down.append(v)
        return (*reversed(up), start, *down)


@dataclasses.dataclass(frozen=True)
class Choices(Domain):
    """Fixed values (or a callable of the operator giving them), the value first if not among them."""

    options: Any

    def values(self, op, dev, name):
        options = tuple(evaluate(self.options, op, dev))
        start = getattr(op, name)
        return options if start in options else (start, *options)
