"""Stub of iron/common/design/build.py @ 072dce66: OperatorDesign(op, image).compilable().

`compilable()` gives `recipe_hash` and `artifact_hash` (the reference's
Cache.key and refusal read both); the stub hashes the operator's fields.
"""

import dataclasses
import hashlib


class _Compilable:
    def __init__(self, op, image: str) -> None:
        fields = tuple((f.name, getattr(op, f.name)) for f in dataclasses.fields(op)
                       if f.name != "pinned")
        text = repr((type(op).__name__, fields, image))
        self.recipe_hash = hashlib.sha256(text.encode()).hexdigest()
        self.artifact_hash = hashlib.sha256(("artifact " + text).encode()).hexdigest()


class OperatorDesign:
    def __init__(self, op, image: str = "elf") -> None:
        self.op = op
        self.image = image

    def compilable(self, **options) -> _Compilable:
        del options
        return _Compilable(self.op, self.image)
