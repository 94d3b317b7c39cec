#include "daemon/sim/perf_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/op_access.h"
#include "daemon/ops/numeric.h"
#include "daemon/sim/footprint.h"

namespace irontune::sim {
namespace {

// --- Model constants. Hardware figures are in presets.cc with their
// docs/npu-facts.md sources; these shape the model around them. Every one is
// a [sim assumption] unless it says otherwise.

// docs/npu-facts.md: col_opc counts int8 ops; the published bf16 GEMM peak is
// about a quarter of col_opc x columns x top clock on both generations (npu2
// 14.71 of 59 TOPS, npu1 3.14 of 13.1), so the sim runs bf16 MACs at half
// the int8 rate and lets tile efficiency and data movement take the rest.
constexpr double kOpsPerMac = 2;
constexpr double kBf16RateFraction = 0.5;
// GEMM kernel: fixed cycles per kernel call (loop set-up, lock acquire and
// release), and the loop overhead per tile dimension: efficiency
// kGemmPeakEfficiency / (1 + kGemmLoopOverhead * (1/tm + 1/tk + 1/tn)).
constexpr double kGemmCallCycles = 120;
constexpr double kGemmPeakEfficiency = 0.92;
constexpr double kGemmLoopOverhead = 8;
// L1 bank conflicts: past kL1PressureStart of L1 in use, efficiency falls
// linearly to (1 - kL1PressurePenalty) at a full L1.
constexpr double kL1PressureStart = 0.70;
constexpr double kL1PressurePenalty = 0.25;
// Zeroing a C tile before its K loop: elements per cycle.
constexpr double kZeroElemsPerCycle = 32;
// Vector lanes for element-wise work: col_opc / rows / kLaneDivisor
// (npu2 32 bf16 lanes, npu1 16).
constexpr double kLaneDivisor = 32;
// Element-wise kernels: fixed cycles per kernel call.
constexpr double kStreamCallCycles = 150;
// GEMV: fixed cycles per kernel call, per output tile, loop cycles per
// vector, and the horizontal-reduction tail per row (log2(v) steps).
constexpr double kGemvCallCycles = 100;
constexpr double kGemvOutTileCycles = 600;
constexpr double kGemvLoopCycles = 1;
constexpr double kGemvTailCyclesPerLevel = 4;
// MHA: MAC efficiency of attention kernels and fixed cycles per head.
constexpr double kMhaEfficiency = 0.35;
constexpr double kMhaHeadCycles = 500;
constexpr double kMhaPipelineSetupFactor = 2;  // x column_setup_us
// Turbo turns clock gating off (docs/npu-facts.md "Power modes"): the sim takes
// that as 3% fewer core cycles than performance at the same clock.
constexpr double kTurboCycleFactor = 0.97;

double Clamp1(int64_t v) {
  return static_cast<double>(std::max<int64_t>(v, 1));
}
double CeilDiv(double a, double b) { return std::ceil(a / std::max(b, 1.0)); }

struct Ctx {
  const SimPreset& p;
  double mhz;
  double cycle_factor;  // turbo
  double CyclesToUs(double cycles) const { return cycles * cycle_factor / mhz; }
  double MacsPerCycle(int in_bytes) const {
    double ops = p.col_opc / static_cast<double>(p.core_rows);
    double rate = in_bytes <= 1 ? 1.0 : kBf16RateFraction;
    return ops * rate / kOpsPerMac;
  }
  double Lanes() const { return p.col_opc / p.core_rows / kLaneDivisor; }
  // GB/s is bytes per microsecond x 1e3.
  double DdrUs(double bytes, double columns) const {
    double gbps =
        std::min(p.ddr_gbps, p.shim_col_gbps * std::max(columns, 1.0));
    return bytes / (gbps * 1e3);
  }
  double Fixed(double columns) const {
    return p.step_sync_us + p.column_setup_us * std::max(columns, 1.0);
  }
};

double GemmUs(const OpView& op, const Ctx& c) {
  GemmShape g = ReadGemm(op, c.p.columns);
  const double m = Clamp1(g.m), k = Clamp1(g.k), n = Clamp1(g.n);
  const double tm = Clamp1(g.tile_m), tk = Clamp1(g.tile_k),
               tn = Clamp1(g.tile_n), cols = Clamp1(g.columns);
  const double rows = c.p.core_rows;

  // Output tiles over cores: rows of tiles over core rows, columns of tiles
  // over columns; a core with no tile idles.
  const double tiles_per_core =
      CeilDiv(CeilDiv(m, tm), rows) * CeilDiv(CeilDiv(n, tn), cols);
  const double k_iters = CeilDiv(k, tk);

  double eff = kGemmPeakEfficiency /
               (1 + kGemmLoopOverhead * (1 / tm + 1 / tk + 1 / tn));
  const double l1_use =
      static_cast<double>(GemmL1Bytes(g, c.p.l1_stack_bytes)) / c.p.l1_bytes;
  if (l1_use > kL1PressureStart) {
    eff *= 1 - kL1PressurePenalty * std::min(1.0, (l1_use - kL1PressureStart) /
                                                      (1 - kL1PressureStart));
  }
  const double kernel =
      kGemmCallCycles + tm * tk * tn / (c.MacsPerCycle(g.in_bytes) * eff);
  const double a_tile = tm * tk * g.in_bytes, b_tile = tk * tn * g.in_bytes,
               c_tile = tm * tn * g.out_bytes;
  const double stream = c.p.stream_bytes_per_cycle;
  const double dma = std::max(a_tile, b_tile) / stream;
  const double per_tile =
      k_iters * std::max(kernel, dma) + tm * tn / kZeroElemsPerCycle;
  const double fill = (a_tile + b_tile) / stream, drain = c_tile / stream;
  const double core_us = c.CyclesToUs(tiles_per_core * per_tile + fill + drain);

  const double a_bytes = m * k * g.in_bytes, b_bytes = k * n * g.in_bytes,
               c_bytes = m * n * g.out_bytes;
  const double moved = a_bytes * CeilDiv(n, tn * cols) +
                       b_bytes * CeilDiv(m, tm * rows) + c_bytes;
  return c.Fixed(cols) + std::max(core_us, c.DdrUs(moved, cols));
}

double GemvUs(const OpView& op, const Ctx& c) {
  const double m = Clamp1(op.Extent("M", 1)), k = Clamp1(op.Param("K", 1)),
               batches = Clamp1(op.Param("num_batches", 1));
  const double cols = Clamp1(op.Tunable("num_aie_columns", c.p.columns));
  const double tsi = Clamp1(op.Tunable("tile_size_input", 2));
  const double tso = Clamp1(
      op.Tunable("tile_size_output", static_cast<int64_t>(CeilDiv(m, cols))));
  const double v = Clamp1(op.Tunable("kernel_vector_size", 64));
  const double bytes = 2;  // bf16

  // One core per column [inferred: IRON's GEMV design].
  const double rows_per_core = CeilDiv(m, cols);
  const double calls = CeilDiv(rows_per_core, tsi) * batches;
  const double per_row =
      CeilDiv(k, v) * (std::max(v / c.Lanes(), 1.0) + kGemvLoopCycles) +
      kGemvTailCyclesPerLevel * std::log2(v) + v / 8;
  const double kernel = kGemvCallCycles + tsi * per_row;
  const double stream = c.p.stream_bytes_per_cycle;
  const double dma = tsi * k * bytes / stream;
  const double out_tiles = CeilDiv(rows_per_core, tso) * batches;
  const double fill = (tsi * k * bytes + k * bytes) / stream;
  const double drain = tso * bytes / stream;
  const double core_us =
      c.CyclesToUs(calls * std::max(kernel, dma) +
                   out_tiles * kGemvOutTileCycles + fill + drain);
  const double moved = batches * (m * k * bytes + cols * k * bytes + m * bytes);
  return c.Fixed(cols) + std::max(core_us, c.DdrUs(moved, cols));
}

// Element-wise families: `ops` vector ops per element, `inputs` input
// streams of the element's bytes, `outputs` outputs.
struct StreamKind {
  double ops;
  int inputs;
  int outputs;
};

double StreamUs(const OpView& op, const Ctx& c, double elements, double tile,
                const StreamKind& kind, double extra_cycles_per_tile) {
  const double cols = Clamp1(op.Tunable("num_aie_columns", c.p.columns));
  const double bytes = 2;  // bf16
  const double n = std::max(elements, 1.0);
  tile = std::max(tile, 1.0);
  const double tiles_per_core = CeilDiv(CeilDiv(n, tile), cols);
  const double compute =
      kStreamCallCycles + tile * kind.ops / c.Lanes() + extra_cycles_per_tile;
  const double stream = c.p.stream_bytes_per_cycle;
  const double dma = tile * bytes / stream;  // each input on its own channel
  const double fill = kind.inputs * tile * bytes / stream;
  const double drain = kind.outputs * tile * bytes / stream;
  const double core_us =
      c.CyclesToUs(tiles_per_core * std::max(compute, dma) + fill + drain);
  const double moved = n * bytes * (kind.inputs + kind.outputs);
  return c.Fixed(cols) + std::max(core_us, c.DdrUs(moved, cols));
}

double MhaUs(const OpView& op, const Ctx& c) {
  const double heads = Clamp1(op.Param("num_heads", 1));
  const double kv_heads = Clamp1(op.Param("num_KV_heads", 1));
  const double d = Clamp1(op.Param("d", 64));
  const double len = Clamp1(op.Extent("seq_pad", 1));
  const double pipes = Clamp1(op.Tunable("num_pipelines", 1));
  const double bytes = 2;
  // A pipeline is a column; its core rows split the kv length.
  const double heads_per_pipe = CeilDiv(heads, pipes);
  const double per_head =
      2 * len * d / (c.p.core_rows * c.MacsPerCycle(2) * kMhaEfficiency) +
      len * 8 / (c.p.core_rows * c.Lanes()) + kMhaHeadCycles;
  const double core_us = c.CyclesToUs(heads_per_pipe * per_head);
  // Pipelines past the kv heads re-read the cache.
  const double reread = std::max(1.0, pipes / kv_heads);
  const double moved =
      2 * kv_heads * len * d * bytes * reread + 2 * heads * d * bytes;
  return c.p.step_sync_us +
         kMhaPipelineSetupFactor * c.p.column_setup_us * pipes +
         std::max(core_us, c.DdrUs(moved, pipes));
}

double GenericUs(const OpView& op, const Ctx& c) {
  double bytes = 0;
  for (const v1::Buffer& b : op.op().buffers()) {
    bytes += static_cast<double>(BufferBytes(b).value_or(0));
  }
  const double cols = Clamp1(op.Tunable("num_aie_columns", 1));
  const double core_us =
      c.CyclesToUs(bytes / (c.p.stream_bytes_per_cycle * cols));
  return c.Fixed(cols) + std::max(core_us, c.DdrUs(bytes, cols));
}

}  // namespace

double StepUs(const OpView& op, const ModelPoint& point) {
  const Ctx c{*point.preset, static_cast<double>(std::max(point.core_mhz, 1)),
              point.mode == PowerMode::kTurbo ? kTurboCycleFactor : 1.0};
  const std::string& cls = op.class_name();
  if (cls == "GEMM") return GemmUs(op, c);
  if (cls == "GEMV") return GemvUs(op, c);
  if (cls == "MHA") return MhaUs(op, c);
  if (IsElementwiseClass(cls)) {
    // Elementwise: IRON's default line is 256 (iron/common/elementwise.py).
    const double n = FirstInputElements<double>(op.op(), op.Param("size", 1));
    const bool binary = IsBinaryElementwiseClass(cls);
    // Log's degree-9 polynomial over limbs counts as a transcendental
    // [inferred: iron/operators/log.py's kernel].
    const double ops = cls == "SiLU" || cls == "GELU" || cls == "Sigmoid" ||
                               cls == "Tanh" || cls == "Log"
                           ? 6
                           : 1;
    // RowwiseMul's line is its row (a param); its row is held, not streamed.
    const double line = BroadcastsSecond(cls) ? op.Param("tile_size", 256)
                                              : op.Tunable("tile_size", 256);
    return StreamUs(op, c, n, Clamp1(line),
                    {ops, binary && !BroadcastsSecond(cls) ? 2 : 1, 1}, 0);
  }
  if (cls == "RMSNorm" || cls == "LayerNorm" || cls == "Softmax") {
    // One row per kernel call: the row is the line (tile_size / cols).
    const bool softmax = cls == "Softmax";
    const double row = Clamp1(op.Param(softmax ? "cols" : "tile_size", 1));
    const double n = Clamp1(op.Extent("rows", 1)) * row;
    const int inputs = cls == "RMSNorm" && op.Param("weighted", 0) ? 2 : 1;
    return StreamUs(op, c, n, row, {softmax ? 8.0 : 4.0, inputs, 1},
                    softmax ? 80 : 60);
  }
  if (cls == "RoPE") {
    const double row = Clamp1(op.Param("cols", 1));
    const double n = Clamp1(op.Extent("rows", 1)) * row;
    return StreamUs(op, c, n, row, {4, 2, 1}, 0);
  }
  if (cls == "Sample") {
    const double vocab = Clamp1(op.Param("vocab", 1));
    const double k_max = Clamp1(op.Param("k_max", 64));
    const double cores = Clamp1(op.Tunable("cores", 4));
    const double chunk = Clamp1(op.Tunable(
        "chunk", std::min<int64_t>(static_cast<int64_t>(vocab / cores), 8192)));
    // Three passes over each core's slice, then one combining core.
    const double calls = 3 * CeilDiv(vocab / cores, chunk);
    const double per_call = kStreamCallCycles + chunk * 2 / c.Lanes();
    const double moved = 3 * vocab * 2;
    return c.Fixed(cores) +
           std::max(c.CyclesToUs(calls * per_call + k_max * cores * 16),
                    c.DdrUs(moved, cores));
  }
  return GenericUs(op, c);
}

int ColumnsUsed(const OpView& op, const SimPreset& preset) {
  const std::string& cls = op.class_name();
  int64_t cols = cls == "MHA" ? op.Tunable("num_pipelines", 1)
                 : cls == "Sample"
                     ? op.Tunable("cores", 4)
                     : op.Tunable("num_aie_columns", preset.columns);
  return static_cast<int>(std::clamp<int64_t>(cols, 1, preset.columns));
}

double RunUs(const SimPreset& preset, v1::Packaging packaging, int steps,
             double step_us, int columns_used, Switching switching) {
  const double n = std::max(steps, 1);
  if (packaging == v1::PACKAGING_FULL_ELF) {
    return preset.dispatch_us + preset.run_base_us + preset.reconfigure_us +
           n * step_us;
  }
  double run = n * (preset.chain_step_us + step_us);
  if (switching == Switching::kFromOtherDesign) {
    // Interpolated by the cores the design uses between the presets'
    // one-core and every-core figures (docs/npu-facts.md: npu2 82 .. 302 us).
    const double all_cores = preset.columns * preset.core_rows;
    const double cores = columns_used * preset.core_rows;
    run += preset.switch_us + (preset.switch_all_us - preset.switch_us) *
                                  (cores - 1) / std::max(all_cores - 1, 1.0);
  }
  return run;
}

absl::StatusOr<double> ModelStepUs(const v1::Operator& op,
                                   const Platform& platform,
                                   const CallValues& values) {
  const SimPreset* preset = FindSimPresetByGeneration(platform.generation);
  if (preset == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no simulated NPU of generation \"", platform.generation, "\""));
  }
  if (platform.core_mhz <= 0) {
    return absl::InvalidArgumentError("core_mhz must be positive");
  }
  OpView view(op, values);
  return StepUs(view, {preset, platform.core_mhz, platform.power_mode});
}

}  // namespace irontune::sim
