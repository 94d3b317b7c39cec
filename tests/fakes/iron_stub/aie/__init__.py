"""Stub of mlir-aie's python package: only aie.iron.device."""
