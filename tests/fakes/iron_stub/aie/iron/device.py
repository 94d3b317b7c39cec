"""Stub of mlir-aie's aie.iron.device: NPU1 and NPU2 as IRON reads them.

IRON reads a device's `cols` (iron/common/declare/domain.py @ 607010e5,
Width) and `name` (iron/common/declare/operator.py @ 607010e5, the label).
"""


class _Device:
    def __init__(self, name: str, cols: int) -> None:
        self.name = name
        self.cols = cols

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NPU1(_Device):
    def __init__(self) -> None:
        super().__init__("npu1", 4)


class NPU2(_Device):
    def __init__(self) -> None:
        super().__init__("npu2", 8)
