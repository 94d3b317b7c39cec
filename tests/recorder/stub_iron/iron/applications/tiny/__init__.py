"""A tiny model: a decode graph (ElementwiseAdd, SiLU, GEMV) and a prompt
graph (a GEMM whose rows a per-call value bounds)."""

import array

from ...common.graph import Affine, Binding, BoundValue, Recording, Ref, Step, Value
from ...operators import GEMM, GEMV, SiLU, ElementwiseAdd
from ...tune.autotune import Point, Timed

__all__ = ["TinyModel", "Config"]


class Config:
    """Exported beside the model, as IRON's packages export more than the model."""


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
        add, silu, gemv = ElementwiseAdd(size=2048), SiLU(size=2048), GEMV(M=256, K=256)
        steps = [
            Step(add, [Ref("x"), Ref("y"), Ref("s")]),
            Step(silu, [Ref("s"), Ref("t")]),
            Step(gemv, [Ref("w0"), Ref("t", 0, 512), Ref("c")]),
        ]
        rec = Recording("decode", [Value("position")], steps, [], ["x", "y"], ["c"])
        x = array.array("H", [0x3F80] * 2048)  # bf16 ones
        points = [Point(0.5, {"position": 0}), Point(0.5, {"position": 100})]
        return Timed(rec, {"position": position}, {"x": x}, points)

    @staticmethod
    def _prompt():
        gemm = GEMM(M=256, K=256, N=256)
        chunk = Value("chunk")
        rows = BoundValue("rows", gemm._members[0])
        steps = [Step(gemm, [Ref("x"), Ref("w1"), Ref("out")])]
        bindings = [Binding(gemm, rows, Affine(chunk, 128, 128))]
        rec = Recording("prompt", [chunk], steps, bindings, ["x"], ["out"],
                        addresses=("table",))
        points = [Point(0.25, {"chunk": 0}), Point(0.75, {"chunk": 1})]
        return Timed(rec, {"chunk": 1}, {}, points)
