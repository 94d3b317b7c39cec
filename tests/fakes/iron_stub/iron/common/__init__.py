"""Stub of iron.common: the roles, errors and image construction that
deploy/iron-builder uses."""

import dataclasses
import json
import os
import tempfile


class In:
    pass


class Out:
    pass


class Incompatible(ValueError):
    pass


class Unresolvable(ValueError):
    pass


@dataclasses.dataclass
class _Buffer:
    name: str
    role: type
    nbytes: int

    @property
    def fills(self):
        return self.role is not Out

    @property
    def drains(self):
        return self.role is Out


@dataclasses.dataclass(frozen=True)
class BufferRef:
    buffer: str


@dataclasses.dataclass(frozen=True)
class SequenceStep:
    op: object
    refs: tuple


@dataclasses.dataclass
class FullELF:
    reconfigure: bool = False


@dataclasses.dataclass
class PerStep:
    pass


@dataclasses.dataclass
class Recording:
    name: str
    steps: list
    inputs: list
    outputs: list

    @classmethod
    def of_steps(cls, name, steps, inputs, outputs):
        return cls(name, list(steps), list(inputs), list(outputs))


@dataclasses.dataclass
class _Parameter:
    name: str
    index: int


@dataclasses.dataclass
class _Design:
    image: str = None
    insts: str = None


@dataclasses.dataclass
class _Artifacts:
    kind: str
    image: str
    insts: str
    designs: tuple
    parameter_table: list


class _Compiled:
    def __init__(self, artifacts):
        self.artifacts = artifacts


class Image:
    def __init__(self, recording, packaging):
        self.recording = recording
        self.packaging = packaging

    def compile(self):
        print("aiecc: compiling", self.recording.name)  # IRON's chatter on stdout
        if os.environ.get("IRON_STUB_FAIL") == "1":
            raise RuntimeError("aiecc: error: could not route the design")
        elf = isinstance(self.packaging, FullELF)
        log = os.environ.get("IRON_STUB_LOG")
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({
                    "name": self.recording.name,
                    "packaging": type(self.packaging).__name__,
                    "reconfigure": getattr(self.packaging, "reconfigure", None),
                    "steps": [[r.buffer for r in s.refs]
                              for s in self.recording.steps],
                    "inputs": self.recording.inputs,
                    "outputs": self.recording.outputs}) + "\n")
        cache = tempfile.mkdtemp(prefix="iron-stub-cache-")
        if elf:
            image = os.path.join(cache, "main.elf")
            with open(image, "wb") as f:
                f.write(b"\x7fELF stub " + self.recording.name.encode())
            return _Compiled(_Artifacts("elf", image, None, (_Design(),),
                                        [_Parameter("seq_len", 5),
                                         _Parameter("other", 6)]))
        xclbin = os.path.join(cache, "final.xclbin")
        insts = os.path.join(cache, "insts.bin")
        with open(xclbin, "wb") as f:
            f.write(b"xclbin stub " + self.recording.name.encode())
        with open(insts, "wb") as f:
            f.write(b"\0\1\2\3" * 32)
        return _Compiled(_Artifacts("xclbin", xclbin, insts,
                                    (_Design(xclbin, insts),), []))
