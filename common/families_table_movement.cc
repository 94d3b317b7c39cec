// The catalogue's data-movement and sampling classes:
// iron/operators/transpose.py @ kIronCommit (607010e), iron/operators/
// {copy,dequant,emit,repeat,sample}.py @ kIronBaseCommit (0274eac), which
// declare no domains: those rules are irontune's (OwnRule).
#include <utility>

#include "common/families_table.h"
#include "common/op_access.h"
#include "common/value.h"

namespace irontune::catalogue {
namespace {

Family Copy() {
  Family f = Entry("Copy",
                   "gather by src, scatter by dst, over num_channels memtiles");
  f.dims = {P("input_buffer_size"),
            Pf("output_buffer_size", "the src walk's elements")};
  f.tunable_specs = {R(T("tile_size", "the per-channel share of the walk"),
                       OwnList({256, 512, 1024, 2048, 4096})),
                     R(T("num_channels", 1), OwnList({1, 2}))};
  f.other_fields = {"src", "dst", "dtype"};
  f.buffers = {{"x", v1::BUFFER_ROLE_IN, "[input_buffer_size]", "bf16",
                "flat; read by the src walk"},
               {"y", v1::BUFFER_ROLE_OUT, "[output_buffer_size]", "bf16",
                "flat; written by the dst walk"}};
  f.values = {{"in_offset", "element offset added to x (default 0)", ""},
              {"out_offset", "element offset added to y (default 0)", ""},
              {"src_valid", "the src walk's bounded axis", ""},
              {"dst_valid", "the dst walk's bounded axis", ""}};
  return Finish(
      std::move(f), {"exact", Exact()},
      "the walks' innermost axis not a multiple of num_channels; tile_size "
      "not dividing the per-channel transfer",
      "iron/operators/copy.py");
}

Family Dequant() {
  Family f = Entry(
      "Dequant",
      "int4 to bf16: packed nibbles times their group's bf16 scale (group "
      "32)");
  f.dims = {P("size"), Pf("packed", "size / 2 + size / 32 * 2")};
  f.tunable_specs = {
      R(T("num_aie_columns", "every column"), OwnRule(WidthRule())),
      R(T("num_channels", 1), OwnList({1, 2})),
      R(T("tile_size", 4096), OwnList({256, 512, 1024, 2048, 4096}))};
  f.derived = {"per_tile", "in_tile"};
  f.other_fields = {"group_size"};
  f.buffers = {{"x", v1::BUFFER_ROLE_IN, "[packed]", "u8",
                "per tile: tile_size / 2 bytes of nibbles, then a bf16 scale "
                "per group"},
               {"y", v1::BUFFER_ROLE_OUT, "[size]", "bf16", "flat"}};
  f.values = {{"count", "tiles per core", ""}};
  return Finish(std::move(f), {"rtol 0.01", Close(0, 0.01)},
                "more than 16 cores; size not a multiple of the cores or of "
                "tile_size per core",
                "iron/operators/dequant.py");
}

Family Emit() {
  Family f =
      Entry("Emit",
            "evaluates an emit program: the next call's scratchpad image and "
            "carried state");
  f.dims = {P("slots"), P("carried"), Pf("rows", "slots + carried")};
  f.buffers = {
      {"program", v1::BUFFER_ROLE_IN, "[rows, 5]", "i32",
       "rows of (plane, index, scale, bias, shift)"},
      {"planes", v1::BUFFER_ROLE_IN, "[2, carried]", "i32", "row-major"},
      {"image", v1::BUFFER_ROLE_OUT, "[slots]", "i32", "flat"},
      {"state", v1::BUFFER_ROLE_OUT, "[carried]", "i32", "flat"}};
  return Finish(std::move(f), {"exact", Exact()},
                "rows other than slots + carried", "iron/operators/emit.py");
}

Family Repeat() {
  Family f =
      Entry("Repeat",
            "repeat-interleave along the first axis, in descriptors only (no "
            "cores)");
  f.dims = {P("rows"), P("cols"), P("repeat"), P("seq", IntValue(1)),
            Pf("out_rows", "rows * repeat")};
  f.derived = {"tile_size"};
  f.other_fields = {"dtype"};
  f.buffers = {{"x", v1::BUFFER_ROLE_IN, "[rows, seq, cols]", "bf16",
                "no seq axis when seq is 1"},
               {"y", v1::BUFFER_ROLE_OUT, "[out_rows, seq, cols]", "bf16",
                "no seq axis when seq is 1"}};
  f.values = {{"valid_rows_x", "rows used; bounds rows", "rows"},
              {"valid_seq_x", "seq used; bounds seq", "seq"}};
  return Finish(std::move(f), {"exact", Exact()},
                "a row (seq * cols) with no descriptor split",
                "iron/operators/repeat.py");
}

Family Sample() {
  Family f =
      Entry("Sample",
            "the next token drawn from a row of logits (temperature, top-k), "
            "recorded at its position");
  f.dims = {P("vocab"), P("k_max", IntValue(64)), P("steps", IntValue(1))};
  f.tunable_specs = {
      R(T("cores", 4), OwnRule(WidthRule())),
      R(T("chunk", "the largest even divisor of the slice up to 8192"),
        OwnList({512, 1024, 2048, 4096, 8192}))};
  f.buffers = {{"logits", v1::BUFFER_ROLE_IN, "[vocab]", "bf16", "flat"},
               {"draws", v1::BUFFER_ROLE_IN, "[steps, 4]", "i32",
                "per position: temperature (f32 bits), top-k, 53-bit "
                "uniform (low, high)"},
               {"tokens", v1::BUFFER_ROLE_INOUT, "[steps]", "i32",
                "the token recorded at position `at`"},
               {"token", v1::BUFFER_ROLE_OUT, "[1]", "i32", "the token"}};
  f.values = {
      {"row",
       "element offset of the position's draw row (4 * "
       "position; default 0)",
       ""},
      {"at", "element offset of the position's record (default 0)", ""}};
  return Finish(
      std::move(f), {"exact", Exact()},
      "vocab not a multiple of cores; chunk not dividing vocab / cores, odd "
      "or above 8192",
      "iron/operators/sample.py");
}

Family Transpose() {
  Family f =
      Entry("Transpose", "y = x^T per batch, m x n tiles of s x s sub-tiles");
  f.dims = {P("M"), P("N"), P("num_batches", IntValue(1))};
  f.tunable_specs = {
      R(T("m", 64),
        DivisorsRule(ParamBound("M"), TunableBound("s"),
                     ExprBound("8192 / n",
                               [](const v1::Operator& op, const DomainDevice&) {
                                 const auto n = IntTunable(op, "n");
                                 if (!n.has_value() || *n < 1)
                                   return std::optional<int64_t>();
                                 return std::optional<int64_t>(8192 / *n);
                               }))),
      R(T("n", 64),
        DivisorsRule(ParamBound("N"), TunableBound("s"),
                     ExprBound("8192 / m",
                               [](const v1::Operator& op, const DomainDevice&) {
                                 const auto m = IntTunable(op, "m");
                                 if (!m.has_value() || *m < 1)
                                   return std::optional<int64_t>();
                                 return std::optional<int64_t>(8192 / *m);
                               }))),
      R(T("s", 8), ChoicesRule({IntValue(8), IntValue(4)})),
      R(T("num_aie_columns", "the most that split N into whole n tiles"),
        PerWidth()),
      R(T("num_channels", 1), PerWidth())};
  f.buffers = {{"x", v1::BUFFER_ROLE_IN, "[num_batches, M, N]", "bf16",
                "no leading axis when num_batches is 1"},
               {"y", v1::BUFFER_ROLE_OUT, "[num_batches, N, M]", "bf16",
                "no leading axis when num_batches is 1"}};
  f.values = {{"batches", "num_batches", ""},
              {"col_tiles", "N / n / num_aie_columns", ""},
              {"chan_tiles", "M / m / num_channels", ""}};
  return Finish(
      std::move(f), {"exact", Exact()},
      "m or n not a multiple of s; m * n above 8192; s 8 with m or n at most "
      "16, s 4 with m or n at most 4; M not a multiple of m * num_channels; "
      "N not a multiple of n * num_aie_columns",
      "iron/operators/transpose.py", kIronCommit);
}

}  // namespace

std::vector<Family> MovementFamilies() {
  return {Copy(), Dequant(), Emit(), Repeat(), Sample(), Transpose()};
}

}  // namespace irontune::catalogue
