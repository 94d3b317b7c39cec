"""Stub of amd/IRON for irontune's tests (see ../README.md)."""
