// SimBuilder: the in-process Builder for the simulated NPU. It checks a
// setting against the sim's limits (sim_limits.h) and refuses what does not
// fit with a reason; otherwise it packages the design as a sim payload
// (daemon/sim/design.h) that SimDevice loads.
//
// Artifact:
//   recipe_hash    sha256 hex of a canonical text of the class, the params
//                  and tunables (sorted by name, typed values), the buffers'
//                  dtypes and shapes, and the generation; independent of
//                  packaging, steps and distinct (the design, not its
//                  runlist).
//   artifact_hash  sha256 hex of the payload.
//   buffers        per step (every step when distinct, else step 0's only),
//                  one per operator buffer, named "s<step>.<buffer name>"
//                  (the buffer's index when it has no unique name).
//   symbols        the operator's CallValue symbols.
//   payload        the operator (tunable domains, pinned and tolerance
//                  stripped: they do not change the design), generation,
//                  packaging, steps and distinct.
//
// Build cost: a real IRON design is compiled by the mlir-aie toolchain,
// seconds of CPU a design (mlir-aie's public figures: 3-7 s for a small
// design on the Peano flow, minutes for large fused ones; docs/operations.md,
// "Builds"). SimBuildCost gives the sim's builds such a cost: the first
// build of a recipe costs `per_design`, another runlist of a recipe already
// built (other steps, distinct or packaging) `runlist_share` of it. It is
// counted always (spent_seconds), and spent as real CPU time (kCpu: the
// calling thread spins until its own CPU clock has advanced that much) or
// slept (kSleep) on the real-time clock. Refusals cost nothing (the sim's
// limits are checked before a compile would start), and so does Fit: it
// checks the limits alone, as IRON's placer check does without compiling,
// and counts no build (a later Build of the recipe is its first).
//
// Threads: any thread may call; builds run concurrently.
#ifndef IRONTUNE_DAEMON_SIM_SIM_BUILDER_H_
#define IRONTUNE_DAEMON_SIM_SIM_BUILDER_H_

#include <atomic>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/npu/builder.h"

namespace irontune {

struct SimBuildCost {
  enum class Spend { kCount, kSleep, kCpu };
  absl::Duration per_design = absl::ZeroDuration();
  double runlist_share = 0.1;
  Spend spend = Spend::kCount;
};

// irontuned's default build cost a design: in the range of mlir-aie's
// figures for a small design (3-7 s).
inline constexpr double kDefaultSimBuildSeconds = 4.0;

class SimBuilder : public Builder {
 public:
  explicit SimBuilder(SimBuildCost cost = {}) : cost_(cost) {}

  // Refuses (in the outcome) a design that does not fit, and full ELF for
  // a generation without it. InvalidArgument for a bad request: a platform
  // that is not a sim preset's generation, steps outside [1, 65536],
  // unspecified packaging, a buffer of unknown dtype or of absurd size.
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override;
  // Build's refusal (or its error for a bad request), without building:
  // free.
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override;
  bool ChecksFit() const override { return true; }
  // Where its cost is counted or nothing: no build takes wall time.
  bool Ready(const BuildRequest& request) override;
  std::string Environment() const override;
  // Builds spending their cost end within a few ms, with Cancelled.
  void Stop() override { stopped_ = true; }

  // The build cost counted so far, in seconds.
  double spent_seconds() const { return spent_us_.load() / 1e6; }

 private:
  // Counts (and spends) the cost of building `recipe_hash`; Cancelled once
  // stopped.
  absl::Status Spend(const std::string& recipe_hash);

  const SimBuildCost cost_;
  absl::Mutex mu_;
  std::set<std::string> built_ ABSL_GUARDED_BY(mu_);  // recipe hashes
  std::atomic<int64_t> spent_us_{0};
  std::atomic<bool> stopped_{false};
};

// The recipe hash SimBuilder gives `op` on `generation`.
std::string SimRecipeHash(const v1::Operator& op, std::string_view generation);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SIM_SIM_BUILDER_H_
