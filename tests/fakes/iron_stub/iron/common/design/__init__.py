"""Stub of iron.common.design: OperatorDesign (iron/common/image/fusion.py @
05a1d408 imports it from here)."""

from .build import OperatorDesign

__all__ = ["OperatorDesign"]
