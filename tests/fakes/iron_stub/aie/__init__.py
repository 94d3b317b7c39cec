"""Stub of mlir-aie's python package: the device classes and the current NPU."""
