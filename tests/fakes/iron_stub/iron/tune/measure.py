"""Stub of the names the reference's iron/tune/measure.py builds an image with.

Its `Standalone` builds one operator alone as
`Image(Recording.of_steps(name, steps, in_names, out_names),
FullELF(reconfigure=True) | PerStep()).compile()`, each step a
`SequenceStep(op, tuple(map(BufferRef, names)))`; the reference does not
show where they are defined, so the stub puts them here, the one module it
shows using them.

Read as the reference reads them: `BufferRef.root` and `.nbytes` (None: the
operator buffer whole), `SequenceStep.op` and `.refs()`; a recording's
`steps`, `bindings` (`iron.common.graph.trace.Binding`) and `addresses`
(iron/tune/autotune.py, Timed.op_values and op_inputs), and `name`,
`values`, `inputs`, `outputs` as iron/common/graph/trace.py @ 01c8638a's
TracedGraph holds them. The compiled image has `artifacts`
(iron.common.image.artifacts) and `buffer_sizes` (an ArgumentSizes, as
OperatorSequence's, iron/common/image/sequence.py @ 0274eac8).

The compile writes small files into a temporary cache directory, as IRON's
compile cache holds an ELF or an xclbin and its instruction stream.
Scripted by the environment: IRON_STUB_LOG=FILE appends one JSON line per
compile; IRON_STUB_FAIL=1 makes it raise RuntimeError, as aiecc failing;
IRON_STUB_FEEDBACK=N declares an N-byte feedback arena; IRON_STUB_OLD_SIZES=1
gives `buffer_sizes` as the plain (input, output, scratch) tuple of older
IRON (iron/common/image/callable.py @ 0934fae6).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from iron._stub import hide
from iron.common.image.artifacts import Artifacts, Design, Entry, Step
from iron.common.image.fusion import ArgumentSizes

ALIGNMENT = 64  # iron/common/image/sequence.py @ 0274eac8: max(64, a cache line)


@dataclasses.dataclass(frozen=True)
class BufferRef:
    root: str
    nbytes: int | None = None


class SequenceStep:
    def __init__(self, op, refs) -> None:
        self.op = op
        self._refs = tuple(refs)

    def refs(self) -> tuple:
        return self._refs


@dataclasses.dataclass(frozen=True)
class FullELF:
    reconfigure: bool = False


@dataclasses.dataclass(frozen=True)
class PerStep:
    pass


class Recording:
    def __init__(self, name, steps, inputs, outputs, values=(), bindings=(),
                 addresses=()) -> None:
        self.name = name
        self.steps = list(steps)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.values = list(values)
        self.bindings = list(bindings)
        self.addresses = tuple(addresses)
        self.states: dict = {}

    @classmethod
    def of_steps(cls, name, steps, inputs, outputs) -> "Recording":
        return cls(name, steps, inputs, outputs)


@dataclasses.dataclass
class _Compiled:
    artifacts: Artifacts
    buffer_sizes: Any


def _layout(recording) -> tuple[dict, list[int]]:
    """Each buffer's (arena, offset, nbytes), inputs, outputs, then the rest
    packed back to back at ALIGNMENT; and each arena's size."""
    sizes: dict[str, int] = {}
    for step in recording.steps:
        for ref, buf in zip(step.refs(), step.op.buffers):
            sizes.setdefault(ref.root, buf.nbytes)
    arenas = {"input": list(recording.inputs), "output": list(recording.outputs)}
    arenas["scratch"] = [n for n in sizes if n not in arenas["input"] + arenas["output"]]
    layout, ends = {}, []
    for arena, names in arenas.items():
        cursor = end = 0
        for name in names:
            layout[name] = (arena, cursor, sizes[name])
            end = cursor + sizes[name]
            cursor = -(-end // ALIGNMENT) * ALIGNMENT
        ends.append(end)
    return layout, ends


def _sizes(ends):
    if os.environ.get("IRON_STUB_OLD_SIZES") == "1":
        return tuple(ends)
    feedback = os.environ.get("IRON_STUB_FEEDBACK")
    return ArgumentSizes(*ends, feedback=int(feedback) if feedback else None)


class Image:
    def __init__(self, recording, packaging) -> None:
        self.recording = recording
        self.packaging = packaging

    def compile(self) -> _Compiled:
        rec = self.recording
        print("aiecc: compiling", rec.name)  # IRON's chatter on stdout
        if os.environ.get("IRON_STUB_FAIL") == "1":
            raise RuntimeError("aiecc: error: could not route the design")
        self._log()
        layout, ends = _layout(rec)
        cache = Path(tempfile.mkdtemp(prefix="iron-stub-cache-"))
        [op] = {id(s.op): s.op for s in rec.steps}.values()
        label = f"{type(op).__name__}_npu2"
        elf = isinstance(self.packaging, FullELF)
        # sequence.py @ 0274eac8, _record: a fused design is op<i>_<Class>;
        # a chain's is its kernel, fused.py's f<sha1(name)[:6]>_op<i>.
        name = (f"op0_{type(op).__name__}" if elf else
                f"f{hashlib.sha1(rec.name.encode()).hexdigest()[:6]}_op0")
        steps = tuple(Step(i, label, name, tuple(r.root for r in s.refs()))
                      for i, s in enumerate(rec.steps))
        if elf:
            image = cache / "main.elf"
            image.write_bytes(b"\x7fELF stub " + rec.name.encode())
            params = cache / "params.txt"
            params.write_text("2\nseq_len 5 int32 core 0 0\nother 6 int32 addr 0 0\n")
            artifacts = Artifacts("elf", image, None, Entry(params),
                                  (Design(name, (label,)),), steps, layout)
        else:
            image, insts = cache / "final.xclbin", cache / "insts.bin"
            image.write_bytes(b"xclbin stub " + rec.name.encode())
            insts.write_bytes(b"\0\1\2\3" * 32)
            design = Design(name, (label,), Entry(), image, insts)
            artifacts = Artifacts("xclbin", image, None, Entry(), (design,), steps,
                                  layout)
        return _Compiled(artifacts, _sizes(ends))

    def _log(self) -> None:
        log = os.environ.get("IRON_STUB_LOG")
        if not log:
            return
        rec = self.recording
        with open(log, "a") as f:
            f.write(json.dumps({
                "name": rec.name,
                "packaging": type(self.packaging).__name__,
                "reconfigure": getattr(self.packaging, "reconfigure", None),
                "steps": [[r.root for r in s.refs()] for s in rec.steps],
                "inputs": rec.inputs, "outputs": rec.outputs}) + "\n")


hide(__name__, globals())
