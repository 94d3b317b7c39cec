"""Stub of IRON's tune package (see ../../README.md)."""
