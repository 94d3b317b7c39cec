"""Four of IRON's operator classes, with the fields, buffers, extents and
domain rules IRON declares for them, as far as irontune reads them: GEMM
(iron/operators/gemm.py @ 0274eac8; tile_k searched only under
prio_accuracy, as the newest readable GEMM does), GEMV
(iron/operators/gemv.py), ElementwiseAdd and SiLU (iron/operators/
elementwise_add.py and silu.py on iron/common/elementwise.py @ 250c6e12),
with the fields docs/operators.md gives each. Nothing builds; the checks
are those whose messages the tests read.
"""

from __future__ import annotations

import dataclasses

from iron.common.declare import (Choices, Divisors, Extent, In, Operator, Out,
                                 Unresolvable, Width)

__all__ = ["ElementwiseAdd", "SiLU", "GEMV", "GEMM"]


@dataclasses.dataclass(eq=False, kw_only=True)
class _Elementwise(Operator):
    _param_fields = ("size",)
    _tunable_fields = ("num_aie_columns", "num_channels", "tile_size")
    _domains = {"num_aie_columns": Width(), "num_channels": Choices((1, 2)),
                "tile_size": Choices((256, 512, 1024, 2048, 4096))}
    size: int = None
    num_aie_columns: int = None
    num_channels: int = 1
    tile_size: int = 256

    def resolve(self, dev):
        return dataclasses.replace(self, num_aie_columns=self.num_aie_columns or dev.cols)


@dataclasses.dataclass(eq=False, kw_only=True)
class ElementwiseAdd(_Elementwise):
    a = In("size")
    b = In("size")
    y = Out("size")


@dataclasses.dataclass(eq=False, kw_only=True)
class SiLU(_Elementwise):
    x = In("size")
    y = Out("size")


@dataclasses.dataclass(eq=False, kw_only=True)
class GEMV(Operator):
    _param_fields = ("M", "K", "num_batches", "repeat", "num_matrices", "epilogue")
    _tunable_fields = ("num_aie_columns", "tile_size_input", "tile_size_output")
    _domains = {"num_aie_columns": Width(), "tile_size_input": Choices((1, 2, 4)),
                "tile_size_output": Choices((32, 64, 128, 256, 512))}
    A = In("M", "K")
    B = In("K")
    C = Out("M")
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


@dataclasses.dataclass(eq=False, kw_only=True)
class GEMM(Operator):
    _param_fields = ("M", "K", "N", "b_col_maj", "c_col_maj",
                     "emulate_bf16_mmul_with_bfp16", "prio_accuracy",
                     "round_conv_even", "use_scalar")
    _tunable_fields = ("tile_m", "tile_k", "tile_n", "num_aie_columns")
    _domains = {
        "tile_m": Choices((32, 64, 128)),
        "tile_k": Divisors(of=lambda op: op.K, step=32, cap=256, when="prio_accuracy"),
        "tile_n": Choices((32, 64, 128)),
        "num_aie_columns": Width(),
    }
    A = In("M", "K")
    B = In("N", "K")
    C = Out("M", "N")
    rows = Extent("M")
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

    def __post_init__(self):
        if self.K % self.tile_k != 0:
            raise ValueError(f"K ({self.K}) must be a multiple of {self.tile_k}")

    def resolve(self, dev):
        return dataclasses.replace(self, num_aie_columns=self.num_aie_columns or 4)

    def compatible(self):
        width = self.tile_n * self.num_aie_columns
        if self.N % width != 0:
            raise Unresolvable(f"N ({self.N}) must be a multiple of {width}")
