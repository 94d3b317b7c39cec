// Kernel cycle counts, as mlir-aie's nightly kernel checks last timed them,
// and the step time a GEMM cannot beat given them (IRON's kernel_cycles and
// least_us). The tuner uses the bound to skip settings that cannot beat the
// fastest found so far.
//
// The file is read from a path the operator of irontuned gives
// (--kernel-cycles); it is never fetched from the network. Its format is
// mlir-aie's nightly one, schema 1:
//   {"schema": 1,
//    "builds": {"<case>": "<recipe key>", ...},
//    "rows": {"<case>": {"cycles": {"value": N}, ...}, ...}}
// A case whose row lacks "cycles" is left out.
//
// Recipe keys irontune looks up (GemmRecipeKey):
//   matmul_bf16_<tile_m>x<tile_k>x<tile_n>_<generation>
// e.g. "matmul_bf16_64x64x64_npu2": the bf16 matmul kernel one core calls
// per (tile_m x tile_k) by (tile_k x tile_n) block, on that generation.
//
// Pure functions; thread-safe.
#ifndef IRONTUNE_DAEMON_TUNE_KERNEL_CYCLES_H_
#define IRONTUNE_DAEMON_TUNE_KERNEL_CYCLES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/expression.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// Cycles per call, by recipe key.
using KernelCycles = std::map<std::string, int64_t, std::less<>>;

// The rows of cores a GEMM spreads M over (4 on npu1 and npu2;
// docs/npu-facts.md, "GEMM": M % (4 tile_m) == 0).
inline constexpr int64_t kGemmCoreRows = 4;

// How much faster than the reported core clock a kernel may run for the
// bound to stay a bound [assumption: the nightly's cycle counts are at the
// H clock the runtime reports, and the clock may run up to 25% above it
// while we time, e.g. a DPM level change]. A larger value makes the bound
// looser, so fewer settings are skipped wrongly.
inline constexpr double kClockHeadroom = 1.25;

// Parses the nightly's JSON. InvalidArgument when it is not JSON, not an
// object, its schema is not 1, or a build's key is not a string or a
// present cycles value is not a positive integer.
absl::StatusOr<KernelCycles> ParseKernelCycles(std::string_view text);

// Reads and parses `path`; on any failure (a missing file is NotFound) logs
// one line through `log` (may be null) and returns an empty map: the tuner
// then times every setting.
KernelCycles LoadKernelCycles(
    const std::string& path,
    const std::function<void(const std::string&)>& log);

// The recipe key of the matmul kernel of a GEMM `op` at its tunables'
// values on `generation`; nullopt when op is not a GEMM or lacks an integer
// tile_m, tile_k or tile_n.
std::optional<std::string> GemmRecipeKey(const v1::Operator& op,
                                         std::string_view generation);

// The matmul kernel calls of the busiest core of a GEMM `op` at per-call
// `values` (by CallValue name; a value that bounds M replaces M):
//   ceil(M / (4 tile_m)) * ceil(N / (tile_n * num_aie_columns))
//     * ceil(K / tile_k)
// Each core computes the (tile_m x tile_n) blocks of C of its row of cores
// (M split over 4 rows) and its column (N split over the columns), each
// block a sum of K / tile_k kernel calls; the busiest takes the ceilings.
// nullopt when a dim or tunable is missing, not an integer or not positive
// (num_aie_columns defaults to `columns`).
std::optional<int64_t> GemmMatmulCalls(const v1::Operator& op,
                                       const CallValues& values, int columns);

// A step time `op` cannot beat at `values` (IRON's least_us): its busiest
// core's matmul calls times the kernel's cycles per call, at
// core_mhz * kClockHeadroom:
//   calls * cycles / (core_mhz * kClockHeadroom)   [us, as MHz = cycles/us]
// nullopt where `cycles` lacks its kernel, core_mhz <= 0, or
// GemmMatmulCalls is nullopt.
std::optional<double> LeastUs(const v1::Operator& op, const CallValues& values,
                              const KernelCycles& cycles,
                              std::string_view generation, int columns,
                              double core_mhz);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_KERNEL_CYCLES_H_
