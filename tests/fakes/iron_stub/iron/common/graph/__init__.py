"""Stub of iron.common.graph: a traced graph's values, expressions and bindings."""
