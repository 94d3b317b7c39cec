"""Stub devices: the generation and rows of cores a build resolves against."""


class _Device:
    def __init__(self, name, columns):
        self.name = name
        self.columns = columns
        self.core_rows = [2, 3, 4, 5]


def NPU1():
    return _Device("npu1", 4)


def NPU2():
    return _Device("npu2", 8)
