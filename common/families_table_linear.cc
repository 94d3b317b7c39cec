// The catalogue's matrix and attention classes at kIronCommit:
// iron/operators/{gemm,gemv,mha,gqa_context,rope,depthwise_conv1d}.py.
#include <utility>

#include "common/families_table.h"
#include "common/value.h"

namespace irontune::catalogue {
namespace {

Family Gemm() {
  Family f;
  f.class_name = "GEMM";
  f.summary = "C = A @ B, tiled tile_m x tile_k x tile_n over 4 core rows";
  f.dims = {P("M"),
            P("K"),
            P("N"),
            P("b_col_maj", BoolValue(false)),
            P("c_col_maj", BoolValue(false)),
            P("emulate_bf16_mmul_with_bfp16", BoolValue(true)),
            P("prio_accuracy", BoolValue(false)),
            P("round_conv_even", BoolValue(true)),
            P("use_scalar", BoolValue(false))};
  f.tunable_specs = {T("tile_m", 64), T("tile_k", 64), T("tile_n", 64),
                     T("num_aie_columns",
                       "the most the shim budget allows "
                       "that split N into whole tiles")};
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
  f.tolerance =
      "IRON's GEMM test tolerance (bfp16 inputs by default): rtol 0.04, "
      "atol 0.15";
  f.gate = Close(0.15, 0.04);
  f.refusals =
      "tile_m not a multiple of 2r, tile_k of s, tile_n of 2t (the MAC "
      "shape); K not a multiple of tile_k; M not a multiple of tile_m * 4; N "
      "not a multiple of tile_n * num_aie_columns; the L1 budget (2 A + 2 B + "
      "2 C tiles + stack)";
  f.source = "iron/operators/gemm.py";
  return f;
}

Family Gemv() {
  Family f;
  f.class_name = "GEMV";
  f.summary =
      "C = A @ B: A [M, K] row blocks per column times the vector B [K], per "
      "batch";
  f.dims = {P("M"),
            P("K"),
            P("num_batches", IntValue(1)),
            P("repeat", IntValue(1)),
            Pf("num_matrices", "num_batches / repeat"),
            P("epilogue", StringValue("none"))};
  f.tunable_specs = {
      T("num_aie_columns", "the most that leave each column whole tiles"),
      T("tile_size_input", "2 rows, or 1 where 2 span more than a bank"),
      T("tile_size_output", "tile_size_input, at least 2")};
  f.derived = {"kernel_vector_size"};
  f.buffers = {{"A", v1::BUFFER_ROLE_IN, "[num_matrices, M, K]", "bf16",
                "row-major; no leading axis when num_matrices is 1"},
               {"B", v1::BUFFER_ROLE_IN, "[num_batches, K]", "bf16",
                "no leading axis when num_batches is 1"},
               {"C", v1::BUFFER_ROLE_OUT, "[num_batches, M]", "bf16",
                "no leading axis when num_batches is 1"}};
  f.values = {{"tiles", "output tiles per column per batch; bounds M", "M"}};
  f.tolerance = "the matvec kernel's contract: rtol 0.04, atol 0.15";
  f.gate = Close(0.15, 0.04);
  f.refusals =
      "tile_size_output not a multiple of tile_size_input; M not a multiple "
      "of num_aie_columns * tile_size_output; K with no vector width in {64, "
      "32, 16} dividing it with K >= 2 * width; repeat not dividing "
      "num_batches; epilogue other than none or gelu (gelu npu2 only)";
  f.source = "iron/operators/gemv.py";
  return f;
}

Family Mha() {
  Family f;
  f.class_name = "MHA";
  f.summary =
      "fused attention: num_pipelines QK^T / softmax / PV pipelines over B_q x "
      "B_kv blocks";
  f.dims = {P("num_heads"),
            Pf("num_KV_heads", "num_heads"),
            Pf("seq_len", "seq_pad"),
            Pf("seq_pad", "seq_len rounded up to B_q * num_pipelines"),
            P("heads_interleaved", BoolValue(false)),
            P("d", IntValue(64)),
            P("emulate_bf16_mmul_with_bfp16", BoolValue(true))};
  f.tunable_specs = {T("B_q", 64), T("B_kv", 64), T("num_pipelines", 1)};
  f.derived = {"q_shims", "join_rows"};
  const char* heads = "[num_heads, seq_pad, d]";
  const char* kv = "[num_KV_heads, seq_pad, d]";
  const char* layout = "[seq_pad, heads, d] when heads_interleaved";
  f.buffers = {{"Q", v1::BUFFER_ROLE_IN, heads, "bf16", layout},
               {"K", v1::BUFFER_ROLE_IN, kv, "bf16", layout},
               {"V", v1::BUFFER_ROLE_IN, kv, "bf16", layout},
               {"O", v1::BUFFER_ROLE_OUT, heads, "bf16", layout}};
  f.values = {{"q_blocks_per_pipeline", "seq_pad / (B_q * num_pipelines)", ""},
              {"kv_blocks", "seq_pad / B_kv", ""},
              {"s_q", "rows attended over; bounds seq_pad", "seq_pad"},
              {"s_kv", "keys attended over; bounds seq_pad", "seq_pad"}};
  f.tolerance = "rtol 0.04, atol 0.15, max_mismatch_frac 0.005";
  f.gate = Close(0.15, 0.04);
  f.refusals =
      "npu2 with 8 columns only; d other than 64; num_pipelines above 6 and "
      "odd; B_q, B_kv not multiples of the micro-tile; num_heads not a "
      "multiple of num_KV_heads";
  f.source = "iron/operators/mha.py";
  return f;
}

Family Gqa() {
  Family f;
  f.class_name = "GQAContext";
  f.summary =
      "decode attention's context: ctx[g, k] = sum_l weights[g, k, l] * "
      "cache[g, l]";
  f.dims = {P("groups"), P("heads_per_group"), P("seq_len"),
            P("head_dim", IntValue(64))};
  f.tunable_specs = {T("chunk",
                       "128, or 64 when 128 does not divide "
                       "seq_len")};
  f.buffers = {{"cache", v1::BUFFER_ROLE_IN, "[groups, seq_len, head_dim]",
                "bf16", "row-major"},
               {"weights", v1::BUFFER_ROLE_IN,
                "[groups, heads_per_group, seq_len]", "bf16", "row-major"},
               {"ctx", v1::BUFFER_ROLE_OUT,
                "[groups, heads_per_group, head_dim]", "bf16", "row-major"}};
  f.tolerance = "exact";
  f.gate = Exact();
  f.refusals =
      "heads_per_group outside 1..4; seq_len not a multiple of 64 or of "
      "chunk; groups above the device's columns";
  f.source = "iron/operators/gqa_context.py";
  return f;
}

Family Rope() {
  Family f;
  f.class_name = "RoPE";
  f.summary =
      "rotary embedding of each row of x against its row of angles (each "
      "angle row serves rows / angle_rows consecutive rows)";
  f.dims = {P("rows"), P("cols"), Pf("angle_rows", "rows"),
            P("method_type", IntValue(0))};
  f.tunable_specs = {T("num_aie_columns",
                       "the most that divide rows and "
                       "angle_rows")};
  f.buffers = {{"x", v1::BUFFER_ROLE_IN, "[rows, cols]", "bf16", "row-major"},
               {"angles", v1::BUFFER_ROLE_IN, "[angle_rows, cols]", "bf16",
                "cos, sin of each rotation interleaved"},
               {"y", v1::BUFFER_ROLE_OUT, "[rows, cols]", "bf16", "row-major"}};
  f.values = {
      {"lut_rows", "angle rows per core; bounds angle_rows", "angle_rows"},
      {"rows_per_lut", "rows per angle row; bounds rows", "rows"}};
  f.tolerance = "relative 0.05";
  f.gate = Close(0, 0.05);
  f.refusals =
      "cols not a multiple of 32; method_type other than 0 or 1; angle_rows "
      "not dividing rows; rows or angle_rows not a multiple of "
      "num_aie_columns";
  f.source = "iron/operators/rope.py";
  return f;
}

Family DwConv() {
  Family f;
  f.class_name = "DepthwiseConv1d";
  f.summary = "causal depthwise convolution over time, 5 taps, channels last";
  f.dims = {P("rows"), P("channels")};
  f.tunable_specs = {T("num_aie_columns",
                       "the most that leave every core "
                       "at least 4 rows")};
  f.buffers = {
      {"x", v1::BUFFER_ROLE_IN, "[rows, channels]", "bf16", "row-major"},
      {"weight", v1::BUFFER_ROLE_IN, "[5, channels]", "bf16",
       "oldest tap first"},
      {"y", v1::BUFFER_ROLE_OUT, "[rows, channels]", "bf16", "row-major"}};
  f.values = {{"steps", "rows / num_aie_columns", ""}};
  f.tolerance = "the kernel's contract: rtol 0.04, atol 0.15";
  f.gate = Close(0.15, 0.04);
  f.refusals =
      "channels not a multiple of 32; rows not splitting into num_aie_columns "
      "runs of at least 4";
  f.source = "iron/operators/depthwise_conv1d.py";
  return f;
}

}  // namespace

std::vector<Family> LinearFamilies() {
  return {DwConv(), Gemm(), Gemv(), Gqa(), Mha(), Rope()};
}

}  // namespace irontune::catalogue
