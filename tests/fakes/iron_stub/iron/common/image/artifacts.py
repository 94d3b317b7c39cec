"""Stub of iron/common/image/artifacts.py @ 528f4d3d: the record of one image.

`Artifacts(kind, image, insts, entry, designs, steps, buffers)`: `kind`
"elf" or "xclbin"; `buffers` each buffer name to `(arena, offset, nbytes)`;
`parameter_table`, the rows of the entry's params file (a count, then
`name index dtype kind _ _` per row) as `Parameter(name, index, dtype,
kind)`, `kind` "core" (held shifted left by 2) or "addr".
`Design(name, operators, entry, image, insts)`: in an xclbin chain `name`
is the kernel IRON names (iron/common/image/sequence.py @ 0274eac8,
`_record`). `Step(index, operator, design, buffers)`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


@dataclasses.dataclass(frozen=True)
class Entry:
    """The cache entry's sidecar the table is read from (a CacheEntry's `params`)."""

    params: Path | None = None


@dataclasses.dataclass(frozen=True)
class Design:
    name: str
    operators: tuple[str, ...]
    entry: Any = None
    image: Path | None = None
    insts: Path | None = None


@dataclasses.dataclass(frozen=True)
class Step:
    index: int
    operator: str
    design: str
    buffers: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Parameter:
    name: str
    index: int
    dtype: str
    kind: str


@dataclasses.dataclass(frozen=True)
class Artifacts:
    kind: str
    image: Path
    insts: Path | None
    entry: Entry | None
    designs: tuple[Design, ...]
    steps: tuple[Step, ...]
    buffers: dict[str, tuple[str, int, int]]

    @property
    def params(self) -> Path | None:
        return self.entry.params if self.entry is not None else None

    @property
    def parameter_table(self) -> list[Parameter]:
        if self.params is None:
            return []
        count, *rows = Path(self.params).read_text().splitlines()
        out = []
        for row in rows[: int(count)]:
            name, index, dtype, kind, _, _ = row.split()
            out.append(Parameter(name, int(index), dtype, kind))
        return out

    @property
    def parameters(self) -> frozenset[str]:
        return frozenset(p.name for p in self.parameter_table)
