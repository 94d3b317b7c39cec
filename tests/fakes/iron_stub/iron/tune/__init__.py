"""Stub of IRON's tune package as the reference (IRON's tune docs) shows it."""
