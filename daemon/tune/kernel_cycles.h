// Kernel cycle counts, as mlir-aie's nightly kernel checks last timed them,
// and the step time a GEMM cannot beat given them (amd/IRON
// iron/tune/autotune.py: kernel_cycles, least_us, CLOCK_HEADROOM). The
// tuner uses the bound to skip settings that cannot beat the fastest found
// so far.
//
// The file is read from a path the operator of irontuned gives
// (--kernel-cycles, or `kernel-cycles = FILE` in the config file); it is
// never fetched from the network, where IRON downloads the nightly's
// latest. Its format is the nightly's, schema 1, read as IRON reads it:
//   {"schema": 1,
//    "builds": {"<case>": "<recipe key>", ...},
//    "rows": {"<case>": {"cycles": {"value": N}, ...}, ...}}
// giving cycles per call by recipe key; a case whose row lacks "cycles" is
// left out. Where IRON would raise on a malformed value, irontune refuses
// the whole file and times every setting.
//
// Recipe keys. IRON looks a GEMM's kernel up by
// `op.layout().matmul().recipe_key`, the identity mlir-aie gives the built
// matmul ExternalFunction (its name, source, argument types and flags).
// irontune sees a recording, not the kernel build, and cannot derive that
// identity, so it looks up a key of its own (GemmRecipeKey):
//   matmul_bf16_<tile_m>x<tile_k>x<tile_n>_<generation>
// e.g. "matmul_bf16_64x64x64_npu2": the bf16 matmul kernel one core calls
// per (tile_m x tile_k) by (tile_k x tile_n) block, on that generation. A
// file whose builds name IRON's recipe keys matches no GEMM here: nothing is
// skipped, every setting is timed.
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

// Parses the nightly's JSON. InvalidArgument, naming where: when it is not
// JSON ("not JSON at line L, column C"), not an object, its schema is not 1
// ("schema: ..."), builds or rows is not an object, a build's key is not a
// string ("builds.<case>: ...") or a present cycles value is not a positive
// integer ("rows.<case>.cycles.value: ...").
absl::StatusOr<KernelCycles> ParseKernelCycles(std::string_view text);

// Reads and parses `path`; on any failure logs one line naming `path` and
// what is wrong (ParseKernelCycles' message, or that it cannot be read) to
// the daemon's log and through `log` (may be null), and returns an empty
// map: the tuner then times every setting.
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
