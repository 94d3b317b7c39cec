// MeasureCache: what one Measure call finds in and keeps in the cache.
// The cache keeps what each 1-step build request built as (its recipe and
// artifact hash, a verdict under BuiltIdentityKey), so a setting whose
// figure is cached is found with one batched lookup of identities and one
// of figures (KnownFigures), and is not built again. Figures are cached
// under a CacheKey of everything they depend on but the Timing, each at
// the plan's Timing (FigureTiming), and looked up at it: the cache gives
// the most precise figure that is at least as precise (cache.h). Cached
// figures are not taken with remeasure; without a cache, nothing is found
// or kept.
//
// Ownership: borrows the plan and the context, which outlive it.
// Threads: the context's. Failure: the cache's errors, as they were.
#ifndef IRONTUNE_DAEMON_TUNE_MEASURE_CACHE_H_
#define IRONTUNE_DAEMON_TUNE_MEASURE_CACHE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/npu/builder.h"
#include "daemon/tune/measure.h"
#include "daemon/tune/measure_builds.h"
#include "daemon/tune/tune_context.h"

namespace irontune {

class MeasureCache {
 public:
  MeasureCache(const MeasurePlan& plan, const MeasureBuilds& builds,
               TuneContext& context);

  // The settings whose built identity the cache keeps and whose figure it
  // holds, taken into `outcome` (measurements, cached) with two lookups
  // for all of them: no build. Marks them in `known`.
  absl::Status KnownFigures(std::vector<bool>& known, MeasureOutcome& outcome);

  // Setting `i` built as `one` (its 1-step artifact): keys its figure by
  // it and keeps its identity in the cache.
  absl::Status Built(int i, const Artifact& one);

  // Takes setting `i`'s cached figure into `outcome`; whether there was
  // one. REQUIRES: its key is known (KnownFigures or Built).
  absl::StatusOr<bool> TakeCached(int i, MeasureOutcome& outcome);

  // Caches `m` as setting `i`'s figure at the plan's Timing: it replaces
  // only a figure of the same Timing, never a more precise one.
  absl::Status Put(int i, const v1::Measurement& m);

  // How far repeats of a measurement spread on this device beyond their
  // rounds' own noise, as a share of the step, as the cache has seen it
  // (Cache::Spread, RepeatSpread::share), read once per call; nullopt
  // without a cache or before it has seen enough repeats.
  absl::StatusOr<std::optional<double>> RepeatDrift();

  // Setting `i`'s cache key ("" until known).
  const std::string& key(int i) const { return keys_[i]; }

 private:
  std::string KeyOf(const std::string& recipe_hash,
                    const std::string& artifact_hash) const;
  // Where the cache keeps what `request` built as: "RECIPE ARTIFACT".
  VerdictKey IdentityKey(const BuildRequest& request);

  const MeasurePlan& plan_;
  const MeasureBuilds& builds_;
  TuneContext& context_;
  std::vector<std::string> keys_;             // each setting's cache key
  std::map<std::string, std::string> given_;  // the given inputs' digests
  std::string environment_;                   // the builder's, for IdentityKey
  std::optional<std::optional<double>> repeat_drift_;  // once read
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_MEASURE_CACHE_H_
