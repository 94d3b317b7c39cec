"""A tiny model: a decode graph (ElementwiseAdd, SiLU, GEMV) and a prompt
graph (a GEMM whose rows a per-call value bounds), planned the way the
reference's iron/lm/tune.py plans a decoder's calls (Timed, Point)."""

import array

from iron.common.graph.handle import Affine, Value
from iron.common.graph.trace import Binding
from iron.operators import GEMM, GEMV, ElementwiseAdd, SiLU
from iron.tune.autotune import Point, Timed
from iron.tune.measure import BufferRef, Recording, SequenceStep

__all__ = ["TinyModel", "Config"]


class Config:
    """Exported beside the model, as IRON's packages export more than the model."""


def _step(op, *roots):
    return SequenceStep(op, tuple(map(BufferRef, roots)))


class TinyModel:
    profile = "profiles"

    @classmethod
    def tune_arguments(cls, parser):
        parser.add_argument("--position", type=int, default=5,
                            help="the decode position (default: 5)")

    @classmethod
    def tune_calls(cls, parser, args):
        return [cls._decode(args.position), cls._prompt()]

    @staticmethod
    def _decode(position):
        add, silu = ElementwiseAdd(size=2048), SiLU(size=2048)
        # Its input tile given by the caller: pinned, so not searched.
        gemv = GEMV(M=256, K=2048, tile_size_input=4)
        steps = [_step(add, "x", "y", "s"), _step(silu, "s", "t"),
                 _step(gemv, "w0", "t", "c")]
        rec = Recording("decode", steps, ["x", "y", "w0"], ["c"],
                        values=[Value("position")])
        x = array.array("H", [0x3F80] * 2048)  # bf16 ones
        points = [Point(0.5, {"position": 0}), Point(0.5, {"position": 100})]
        return Timed(rec, {"position": position}, {"x": x}, points)

    @staticmethod
    def _prompt():
        gemm = GEMM(M=256, K=256, N=256)
        chunk = Value("chunk")
        bindings = [Binding(gemm, gemm.value("rows"), Affine(chunk, 128, 128))]
        rec = Recording("prompt", [_step(gemm, "x", "w1", "out")], ["x", "w1"],
                        ["out"], values=[chunk], bindings=bindings,
                        addresses=("table",))
        points = [Point(0.25, {"chunk": 0}), Point(0.75, {"chunk": 1})]
        return Timed(rec, {"chunk": 1}, {}, points)
