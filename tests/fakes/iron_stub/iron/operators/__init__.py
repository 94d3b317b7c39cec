"""Stub operator catalogue: GEMM only, looked up by attribute as IRON's."""

import dataclasses

from iron.common import In, Incompatible, Out, _Buffer


@dataclasses.dataclass(frozen=True)
class GEMM:
    M: int
    K: int
    N: int
    tile_m: int = 64
    tile_k: int = 64
    tile_n: int = 64
    num_aie_columns: int = 8
    dev: object = None

    def __post_init__(self):
        if self.K % self.tile_k != 0:
            raise ValueError(f"K ({self.K}) must be a multiple of {self.tile_k}")

    def resolved(self, dev):
        if self.N % (self.tile_n * self.num_aie_columns) != 0:
            raise Incompatible(
                f"N ({self.N}) must be a multiple of "
                f"{self.tile_n * self.num_aie_columns}")
        return dataclasses.replace(self, dev=dev)

    @property
    def buffers(self):
        return [_Buffer("A", In, self.M * self.K * 2),
                _Buffer("B", In, self.K * self.N * 2),
                _Buffer("C", Out, self.M * self.N * 2)]
