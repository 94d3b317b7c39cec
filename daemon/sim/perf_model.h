// The simulated NPU's performance model: the noise-free time of one step of
// an operator setting, and of a run of N steps. Ground truth for tests and
// benchmarks; SimDevice adds seeded noise on top (noise.h).
//
// The model per family (constants and their docs/npu-facts.md sources are in
// perf_model.cc and docs/simulated-npu.md):
//   step = step sync + used columns x column setup
//          + max(cores' time, DDR time)
//   cores' time = the busiest core's kernel calls, each the larger of its
//     compute (call overhead + MACs or element ops at the core's rate and a
//     tile-shape efficiency) and its L1 input stream, plus the pipeline's
//     fill and drain (the first tiles in, the last out, not overlapped).
//   DDR time = bytes moved (GEMM: A N/(tile_n*cols) times, B
//     M/(tile_m*rows) times) / min(DDR bandwidth, columns x shim bandwidth).
//   run = full ELF: dispatch + run base + reconfigure + sum of steps;
//         xclbin chain: [switch, when another design ran last] +
//         sum of (chain step dispatch + step).
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_SIM_PERF_MODEL_H_
#define IRONTUNE_DAEMON_SIM_PERF_MODEL_H_

#include "absl/status/statusor.h"
#include "daemon/npu/device.h"
#include "daemon/sim/design.h"
#include "daemon/sim/presets.h"
#include "irontune/v1/measurement.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune::sim {

// Where a step runs: the preset at a clock and power mode.
struct ModelPoint {
  const SimPreset* preset = nullptr;  // not owned; presets are static
  int core_mhz = 0;
  PowerMode mode = PowerMode::kDefault;
};

// The noise-free time of one step of `op` (its tunables' values are the
// setting). Unknown classes take a size-proportional generic model.
// REQUIRES: point.preset != nullptr and point.core_mhz > 0.
double StepUs(const OpView& op, const ModelPoint& point);

// The columns a setting occupies (for switching costs), in [1, columns].
int ColumnsUsed(const OpView& op, const SimPreset& preset);

enum class Switching {
  kSameDesign,       // the image ran last: nothing to switch
  kFromOtherDesign,  // another image ran last (xclbin chain pays a switch)
};

// The noise-free time of a run of `steps` steps of `step_us` each.
double RunUs(const SimPreset& preset, v1::Packaging packaging, int steps,
             double step_us, int columns_used, Switching switching);

// Ground truth for tests and benchmarks: the noise-free step time of `op`'s
// setting on `platform` (its generation picks the preset; its core_mhz and
// power_mode are used as given), with per-call `values` by symbol.
// InvalidArgument for a platform that is not a sim preset's generation or
// a non-positive clock.
absl::StatusOr<double> ModelStepUs(const v1::Operator& op,
                                   const Platform& platform,
                                   const CallValues& values = {});

}  // namespace irontune::sim

#endif  // IRONTUNE_DAEMON_SIM_PERF_MODEL_H_
