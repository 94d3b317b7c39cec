"""Stub of IRON for deploy/iron-builder's test (see ../README.md)."""
