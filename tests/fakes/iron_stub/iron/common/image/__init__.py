"""Stub of iron.common.image: what a build records (artifacts) and the fused
image's argument sizes (fusion)."""
