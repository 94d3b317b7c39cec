"""Stub of mlir-aie's aie.utils: the NPU this machine binds, an npu2.

`ensure_current_device(required=False)` as iron/common/image/fused.py @
0274eac8 and iron/lm/tune.py @ 117fb06b call it.
"""

from aie.iron.device import NPU2


def ensure_current_device(required: bool = False):
    del required  # the stub always has its NPU
    return NPU2()
