"""Stub of iron.common.design.build: OperatorDesign's compilable()."""

import hashlib


class _Compilable:
    def __init__(self, op, image):
        text = repr((op.M, op.K, op.N, op.tile_m, op.tile_k, op.tile_n,
                     op.num_aie_columns, image))
        self.recipe_hash = hashlib.sha256(text.encode()).hexdigest()
        self.artifact_hash = hashlib.sha256(
            ("artifact " + text).encode()).hexdigest()


class OperatorDesign:
    def __init__(self, op, image="elf"):
        self.op = op
        self.image = image

    def compilable(self, **options):
        return _Compilable(self.op, self.image)
