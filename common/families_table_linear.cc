// The catalogue's matrix and attention classes: iron/operators/{gemm,gemv,
// mha,gqa}.py @ kIronCommit (607010e), iron/operators/{rope,
// depthwise_conv1d}.py @ kIronBaseCommit (0274eac).
#include <algorithm>
#include <utility>

#include "common/families_table.h"
#include "common/op_access.h"
#include "common/value.h"

namespace irontune::catalogue {
namespace {

// GEMM.mac_block(dev) (gemm.py): what tile_m, tile_k and tile_n must be
// multiples of, (4r on aie2 else 2r, s, 2t) of the bf16 MAC shape.
std::optional<int64_t> MacBlock(const DomainDevice& dev, int axis) {
  const std::optional<MacShape> mac = Bf16MacShape(dev.generation);
  if (!mac.has_value()) return std::nullopt;
  if (axis == 0) return (dev.generation == "npu1" ? 4 : 2) * mac->r;
  if (axis == 1) return mac->s;
  return 2 * mac->t;
}

DomainBound MacBound(int axis, const char* text) {
  return ExprBound(text, [axis](const v1::Operator&, const DomainDevice& dev) {
    return MacBlock(dev, axis);
  });
}

// Resolved fields a bound reads: a param, else a fallback of the operator.
int64_t ParamOr(const v1::Operator& op, std::string_view name,
                int64_t fallback) {
  return IntParam(op, name).value_or(fallback);
}

// MHA's kv_len: the param, else seq_pad, else seq_len.
std::optional<int64_t> KvLen(const v1::Operator& op) {
  if (auto v = IntParam(op, "kv_len")) return v;
  if (auto v = IntParam(op, "seq_pad")) return v;
  return IntParam(op, "seq_len");
}

// A core's memory over `per` bf16 elements of `field` (a tunable, else
// the param), as MHA's and GQA's caps read it.
DomainBound MemoryOver(const char* field, const char* text) {
  return ExprBound(
      text, [field](const v1::Operator& op, const DomainDevice& dev) {
        std::optional<int64_t> v = IntTunable(op, field);
        if (!v.has_value()) v = IntParam(op, field);
        if (!v.has_value() || *v < 1) return std::optional<int64_t>();
        return std::optional<int64_t>(dev.core_memory_bytes / (*v * 2));
      });
}

Family Gemm() {
  Family f = Entry(
      "GEMM", "C = A @ B, tiled tile_m x tile_k x tile_n over 4 core rows");
  f.dims = {P("M"),
            P("K"),
            P("N"),
            P("b_col_maj", BoolValue(false)),
            P("c_col_maj", BoolValue(false)),
            P("emulate_bf16_mmul_with_bfp16", BoolValue(true)),
            P("prio_accuracy", BoolValue(false)),
            P("round_conv_even", BoolValue(true)),
            P("use_scalar", BoolValue(false))};
  f.tunable_specs = {
      R(T("tile_m",
          "the widest of 64, 32, 16, 8 that splits M over the 4 rows and "
          "the MAC block divides"),
        DivisorsRule(ExprBound("M / n_aie_rows",
                               [](const v1::Operator& op, const DomainDevice&) {
                                 return std::optional<int64_t>(
                                     ParamOr(op, "M", 0) / kCoreRows);
                               }),
                     MacBound(0, "mac_block m (4r npu1, 2r npu2)"))),
      R(T("tile_k", 64),
        When(DivisorsRule(ParamBound("K"), MacBound(1, "mac_block k (s)")),
             "prio_accuracy")),
      R(T("tile_n", 64),
        DivisorsRule(ParamBound("N"), MacBound(2, "mac_block n (2t)"))),
      R(T("num_aie_columns",
          "the most the shim budget allows that split N into whole tiles"),
        PerWidth()),
      R(TunableSpec{"placement", StringValue("shims"), "", {}},
        PlacementRule({"shims", "tiles"}))};
  f.derived = {"n_aie_rows", "n_shim_mem_a", "a_l2", "b_l2", "c_l2"};
  f.other_fields = {"dtype_in", "dtype_out"};
  f.buffers = {{"A", v1::BUFFER_ROLE_IN, "[M, K]", "dtype_in", "row-major"},
               {"B", v1::BUFFER_ROLE_IN, "[K, N]", "dtype_in",
                "row-major; [N, K] when b_col_maj"},
               {"C", v1::BUFFER_ROLE_OUT, "[M, N]", "dtype_out",
                "row-major; [N, M] when c_col_maj"}};
  f.values = {{"k_div_k", "K / tile_k", ""},
              {"n_tiles", "output tiles per core", ""},
              {"n_tiles_valid", "output tiles the bound covers", "M"}};
  return Finish(
      std::move(f),
      {"IRON's GEMM test tolerance (bfp16 inputs by default): rtol 0.04, "
       "atol 0.15",
       Close(0.15, 0.04)},
      "tile_m not a multiple of 4r on npu1 or 2r on npu2, tile_k of s, tile_n "
      "of 2t (the MAC block); K not a multiple of tile_k; M not a multiple of "
      "tile_m * 4; N not a multiple of tile_n * num_aie_columns; the L1 "
      "budget (2 A + 2 B + 2 C tiles + stack); placement other than shims or "
      "tiles",
      "iron/operators/gemm.py", kIronCommit);
}

Family Gemv() {
  Family f = Entry(
      "GEMV",
      "C = A @ B: A [M, K] row blocks per column times the vector B [K], per "
      "batch");
  f.dims = {P("M"),
            P("K"),
            P("num_batches", IntValue(1)),
            P("repeat", IntValue(1)),
            Pf("num_matrices", "num_batches / repeat"),
            P("epilogue", StringValue("none"))};
  f.tunable_specs = {
      R(T("num_aie_columns", "the most that leave each lane whole tiles"),
        PerWidth()),
      R(T("num_channels", 1), PerWidth()),
      R(T("tile_size_input", "2 rows, or 1 where a row is above 8 KiB"),
        DivisorsRule(
            ParamBound("M"), {},
            ExprBound("core memory / (2 * K * 2)",
                      [](const v1::Operator& op, const DomainDevice& dev) {
                        const int64_t k = ParamOr(op, "K", 0);
                        if (k < 1) return std::optional<int64_t>();
                        return std::optional<int64_t>(dev.core_memory_bytes /
                                                      (2 * k * 2));
                      }))),
      R(T("tile_size_output", "tile_size_input, at least 2"),
        DivisorsRule(ParamBound("M"), TunableBound("tile_size_input"), {}, 3))};
  f.derived = {"kernel_vector_size"};
  f.buffers = {{"A", v1::BUFFER_ROLE_IN, "[num_matrices, M, K]", "bf16",
                "row-major; no leading axis when num_matrices is 1"},
               {"B", v1::BUFFER_ROLE_IN, "[num_batches, K]", "bf16",
                "no leading axis when num_batches is 1"},
               {"C", v1::BUFFER_ROLE_OUT, "[num_batches, M]", "bf16",
                "no leading axis when num_batches is 1"}};
  f.values = {{"tiles", "output tiles per lane per batch; bounds M", "M"},
              {"batches", "num_batches", ""}};
  return Finish(
      std::move(f),
      {"the matvec kernel's contract: rtol 0.04, atol 0.15", Close(0.15, 0.04)},
      "tile_size_output not a multiple of tile_size_input; M not a multiple "
      "of num_aie_columns * num_channels * tile_size_output; K with no vector "
      "width in {64, 32, 16} dividing it with K >= 2 * width; repeat not "
      "dividing num_batches; epilogue other than none or gelu (gelu npu2 "
      "only)",
      "iron/operators/gemv.py", kIronCommit);
}

// MHA's tunables (mha.py): a core holds one (B_q, B_kv) score tile, which
// caps either block; a pipeline a column.
std::vector<TunableSpec> MhaTunables() {
  const DomainBound kv_len = ExprBound(
      "kv_len",
      [](const v1::Operator& op, const DomainDevice&) { return KvLen(op); });
  return {R(T("B_q", 64),
            DivisorsRule(kv_len, ConstBound(64),
                         MemoryOver("B_kv", "core memory / (B_kv * 2)"))),
          R(T("B_kv", 64),
            DivisorsRule(kv_len, ConstBound(64),
                         MemoryOver("B_q", "core memory / (B_q * 2)"))),
          R(T("num_pipelines", 1), WidthRule()),
          R(TunableSpec{"placement", StringValue("memtiles"), "", {}},
            PlacementRule({"memtiles", "tiles", "columns"}))};
}

Family Mha() {
  Family f = Entry(
      "MHA",
      "fused attention: num_pipelines QK^T / softmax / PV pipelines over B_q x "
      "B_kv blocks, the queries the last rows of the keys");
  f.dims = {P("num_heads"),
            Pf("num_KV_heads", "num_heads"),
            Pf("seq_len", "seq_pad"),
            Pf("seq_pad", "seq_len rounded up to B_q * num_pipelines"),
            Pf("kv_len", "seq_pad"),
            P("heads_interleaved", BoolValue(false)),
            P("kv_interleaved", BoolValue(false)),
            P("d", IntValue(64)),
            P("emulate_bf16_mmul_with_bfp16", BoolValue(true))};
  f.tunable_specs = MhaTunables();
  f.derived = {"q_shims", "join_rows", "kv_lanes", "width"};
  const char* heads = "[num_heads, seq_pad, d]";
  const char* kv = "[num_KV_heads, kv_len, d]";
  f.buffers = {{"Q", v1::BUFFER_ROLE_IN, heads, "bf16",
                "[seq_pad, num_heads, d] when heads_interleaved"},
               {"K", v1::BUFFER_ROLE_IN, kv, "bf16",
                "[kv_len, num_KV_heads, d] when kv_interleaved"},
               {"V", v1::BUFFER_ROLE_IN, kv, "bf16",
                "[kv_len, num_KV_heads, d] when kv_interleaved"},
               {"O", v1::BUFFER_ROLE_OUT, heads, "bf16",
                "[seq_pad, num_heads, d] when heads_interleaved"}};
  f.values = {{"heads", "heads per pipeline's pass", ""},
              {"q_blocks_per_pipeline", "seq_pad / (B_q * num_pipelines)", ""},
              {"q_blocks_valid", "Q blocks the bound covers", "seq_pad"},
              {"kv_blocks", "KV blocks the keys cover", "kv_len"},
              {"s_q", "query positions, for the mask", ""},
              {"s_kv", "keys attended over", "kv_len"},
              {"q_start", "the block of the first query", ""}};
  v1::Tolerance gate = Close(0.15, 0.04);
  gate.set_max_mismatch_frac(0.005);
  return Finish(
      std::move(f), {"rtol 0.04, atol 0.15, max_mismatch_frac 0.005", gate},
      "a device of fewer than 4 columns; num_pipelines above the placed "
      "width (8 on npu2, 4 on npu1); d other than 64; num_pipelines above 6 "
      "and odd; B_q other than B_kv; B_kv not a multiple of 64; kv_len not "
      "whole B_kv blocks or below seq_pad; num_heads not a multiple of "
      "num_KV_heads; one query (seq_len 1): B_q not a multiple of the "
      "group, num_pipelines above Q's shim column or not dividing "
      "num_KV_heads; placement other than memtiles, tiles or columns",
      "iron/operators/mha.py", kIronCommit);
}

// GQAScores and GQAContext (gqa.py _KVGroups): one query's heads against a
// (seq_len, groups, head_dim) cache, chunk positions at a time.
constexpr char kGqaSource[] = "iron/operators/gqa.py";
Family KvGroups(std::string cls, std::string summary) {
  Family f = Entry(std::move(cls), std::move(summary));
  f.dims = {P("heads"), P("groups"), P("seq_len"), P("head_dim", IntValue(64)),
            Pf("heads_per_group", "heads / groups")};
  f.tunable_specs = {
      R(T("num_aie_columns",
          "the most the shim budget allows that divide groups"),
        PerWidth()),
      R(T("chunk", 128),
        DivisorsRule(ParamBound("seq_len"), ConstBound(64),
                     MemoryOver("head_dim", "core memory / (head_dim * 2)")))};
  f.values = {{"calls", "chunk blocks a call streams (ceil(valid / chunk))",
               "seq_len"}};
  return f;
}

Family GqaContext() {
  Family f = KvGroups("GQAContext",
                      "decode attention's context: ctx[h] = sum_l weights[h, "
                      "l] * cache[l, h / heads_per_group]");
  f.buffers = {
      {"cache", v1::BUFFER_ROLE_IN, "[seq_len, groups, head_dim]", "bf16",
       "row-major"},
      {"weights", v1::BUFFER_ROLE_IN, "[heads, seq_len]", "bf16",
       "row-major; zeros past the bound"},
      {"ctx", v1::BUFFER_ROLE_OUT, "[heads, head_dim]", "bf16", "row-major"}};
  return Finish(
      std::move(f), {"exact", Exact()},
      "heads not a multiple of groups; heads_per_group above 4; groups not "
      "a multiple of num_aie_columns; seq_len not a multiple of chunk; chunk "
      "not a multiple of 64; the L1 budget (2 value chunks + the partial "
      "sums)",
      kGqaSource, kIronCommit);
}

Family GqaScores() {
  Family f = KvGroups("GQAScores",
                      "decode attention's scores: scores[h, l] = q[h] . "
                      "keys[l, h / heads_per_group]");
  f.buffers = {{"keys", v1::BUFFER_ROLE_IN, "[seq_len, groups, head_dim]",
                "bf16", "row-major"},
               {"q", v1::BUFFER_ROLE_IN, "[heads, head_dim]", "bf16",
                "row-major, pre-scaled"},
               {"scores", v1::BUFFER_ROLE_OUT, "[heads, seq_len]", "bf16",
                "row-major; past the bound what the cache holds"}};
  return Finish(
      std::move(f),
      {"relative 0.04, atol 1e-3 (f32 accumulation, rounded once)",
       Close(1e-3, 0.04)},
      "heads not a multiple of groups; heads_per_group above 4; groups not "
      "a multiple of num_aie_columns; seq_len not a multiple of chunk; "
      "head_dim with no vector width in {64, 32, 16}; the L1 budget (2 key "
      "chunks + query + scores)",
      kGqaSource, kIronCommit);
}

Family Rope() {
  Family f =
      Entry("RoPE",
            "rotary embedding of each row of x against its row of angles (each "
            "angle row serves rows / angle_rows consecutive rows)");
  f.dims = {P("rows"), P("cols"), Pf("angle_rows", "rows"),
            P("method_type", IntValue(0))};
  f.tunable_specs = {
      R(T("num_aie_columns", "the most that divide rows and angle_rows"),
        OwnRule(WidthRule()))};
  f.buffers = {{"x", v1::BUFFER_ROLE_IN, "[rows, cols]", "bf16", "row-major"},
               {"angles", v1::BUFFER_ROLE_IN, "[angle_rows, cols]", "bf16",
                "cos, sin of each rotation interleaved"},
               {"y", v1::BUFFER_ROLE_OUT, "[rows, cols]", "bf16", "row-major"}};
  f.values = {
      {"lut_rows", "angle rows per core; bounds angle_rows", "angle_rows"},
      {"rows_per_lut", "rows per angle row; bounds rows", "rows"}};
  return Finish(
      std::move(f), {"relative 0.05", Close(0, 0.05)},
      "cols not a multiple of 32; method_type other than 0 or 1; angle_rows "
      "not dividing rows; rows or angle_rows not a multiple of "
      "num_aie_columns",
      "iron/operators/rope.py");
}

Family DwConv() {
  Family f =
      Entry("DepthwiseConv1d",
            "causal depthwise convolution over time, 5 taps, channels last");
  f.dims = {P("rows"), P("channels")};
  f.tunable_specs = {
      R(T("num_aie_columns", "the most that leave every core at least 4 rows"),
        OwnRule(WidthRule()))};
  f.buffers = {
      {"x", v1::BUFFER_ROLE_IN, "[rows, channels]", "bf16", "row-major"},
      {"weight", v1::BUFFER_ROLE_IN, "[5, channels]", "bf16",
       "oldest tap first"},
      {"y", v1::BUFFER_ROLE_OUT, "[rows, channels]", "bf16", "row-major"}};
  f.values = {{"steps", "rows / num_aie_columns", ""}};
  return Finish(
      std::move(f),
      {"the kernel's contract: rtol 0.04, atol 0.15", Close(0.15, 0.04)},
      "channels not a multiple of 32; rows not splitting into num_aie_columns "
      "runs of at least 4",
      "iron/operators/depthwise_conv1d.py");
}

}  // namespace

std::vector<Family> LinearFamilies() {
  return {DwConv(), Gemm(), Gemv(), GqaContext(), GqaScores(), Mha(), Rope()};
}

}  // namespace irontune::catalogue
