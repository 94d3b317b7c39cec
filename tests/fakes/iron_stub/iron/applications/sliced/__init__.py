"""A model whose step reads part of a graph buffer (a BufferRef with nbytes):
the reference shows no offset for a part, so it cannot be recorded."""

from iron.operators import SiLU
from iron.tune.autotune import Timed
from iron.tune.measure import BufferRef, Recording, SequenceStep

__all__ = ["SlicedModel"]


class SlicedModel:
    profile = "profiles"

    @classmethod
    def tune_arguments(cls, parser):
        pass

    @classmethod
    def tune_calls(cls, parser, args):
        silu = SiLU(size=256)
        step = SequenceStep(silu, (BufferRef("kv", 512), BufferRef("y")))
        return [Timed(Recording("decode", [step], ["kv"], ["y"]))]
