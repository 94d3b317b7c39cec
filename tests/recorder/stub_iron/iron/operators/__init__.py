"""Four of IRON's operator classes, with the params, tunables, buffers and
domains (npu2) IRON declares for them; nothing builds."""

import dataclasses

from ..common.declare import BoundBuffer, Declaration, Extent, Operator

__all__ = ["ElementwiseAdd", "SiLU", "GEMV", "GEMM"]

_WIDTH = (8, 4, 2, 1)


@dataclasses.dataclass(eq=False)
class ElementwiseAdd(Operator):
    declaration = Declaration(("size",), ("num_aie_columns", "num_channels", "tile_size"))
    domains = {"num_aie_columns": _WIDTH, "num_channels": (1, 2),
               "tile_size": (256, 512, 1024, 2048, 4096)}
    size: int = None
    num_aie_columns: int = None
    num_channels: int = 1
    tile_size: int = 256

    def resolve(self, dev):
        return dataclasses.replace(self, num_aie_columns=self.num_aie_columns or dev.cols)

    @property
    def buffers(self):
        n = [self.size]
        return [BoundBuffer("a", "in", n), BoundBuffer("b", "in", n), BoundBuffer("y", "out", n)]


@dataclasses.dataclass(eq=False)
class SiLU(ElementwiseAdd):
    @property
    def buffers(self):
        return [BoundBuffer("x", "in", [self.size]), BoundBuffer("y", "out", [self.size])]


@dataclasses.dataclass(eq=False)
class GEMV(Operator):
    declaration = Declaration(
        ("M", "K", "num_batches", "repeat", "num_matrices", "epilogue"),
        ("num_aie_columns", "tile_size_input", "tile_size_output"),
    )
    domains = {"num_aie_columns": _WIDTH, "tile_size_input": (1, 2, 4),
               "tile_size_output": (32, 64, 128, 256, 512)}
    M: int = None
    K: int = None
    num_batches: int = 1
    repeat: int = 1
    num_matrices: int = None
    epilogue: str = "none"
    num_aie_columns: int = None
    tile_size_input: int = 2
    tile_size_output: int = 32

    def __post_init__(self):
        if self.num_matrices is None:
            self.num_matrices = self.num_batches // self.repeat

    def resolve(self, dev):
        return dataclasses.replace(self, num_aie_columns=self.num_aie_columns or 4)

    @property
    def buffers(self):
        return [
            BoundBuffer("A", "in", [self.M, self.K], {"M": 0, "K": 1}),
            BoundBuffer("B", "in", [self.K], {"K": 0}),
            BoundBuffer("C", "out", [self.M], {"M": 0}),
        ]


@dataclasses.dataclass(eq=False)
class GEMM(Operator):
    declaration = Declaration(
        ("M", "K", "N", "b_col_maj", "c_col_maj", "emulate_bf16_mmul_with_bfp16",
         "prio_accuracy", "round_conv_even", "use_scalar"),
        ("tile_m", "tile_k", "tile_n", "num_aie_columns"),
    )
    domains = {"tile_m": (32, 64, 128), "tile_k": (32, 64, 128, 256),
               "tile_n": (32, 64, 128), "num_aie_columns": _WIDTH}
    _members = (Extent("rows", "M"),)
    M: int = None
    K: int = None
    N: int = None
    b_col_maj: bool = False
    c_col_maj: bool = False
    emulate_bf16_mmul_with_bfp16: bool = True
    prio_accuracy: bool = False
    round_conv_even: bool = True
    use_scalar: bool = False
    tile_m: int = 64
    tile_k: int = 64
    tile_n: int = 64
    num_aie_columns: int = None

    def resolve(self, dev):
        return dataclasses.replace(self, num_aie_columns=self.num_aie_columns or 4)

    @property
    def buffers(self):
        return [
            BoundBuffer("A", "in", [self.M, self.K], {"M": 0, "K": 1}),
            BoundBuffer("B", "in", [self.N, self.K], {"N": 0, "K": 1}),
            BoundBuffer("C", "out", [self.M, self.N], {"M": 0, "N": 1}),
        ]
