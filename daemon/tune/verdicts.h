// Verdicts the cache keeps besides figures, so a search does not ask again:
// whether the builder takes a design (Refusal), and whether a setting's
// output may replace the recorded setting's (OutputJudge).
//
// Threads: the device worker's (they use the Builder and the writing
// Cache). Failure: the builder's and the cache's errors come back as they
// were; a refusal is a verdict, not an error.
#ifndef IRONTUNE_DAEMON_TUNE_VERDICTS_H_
#define IRONTUNE_DAEMON_TUNE_VERDICTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/tune/judge.h"
#include "daemon/tune/measure.h"
#include "irontune/v1/measurement.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

class Cache;

// sha256 hex of `op` as a design (class, params, tunables and buffers;
// domains, pinned and tolerance left out), the generation and the
// packaging: what a builder verdict follows besides the builder.
std::string RecipeKeyHash(const v1::Operator& op, const Platform& platform,
                          v1::Packaging packaging);

// Whether the builder takes `op` (at its tunables' values) alone on
// `platform`: "" where it does, else the builder's reason (the refusal of a
// 1-step build). The verdict is kept in `cache` (may be null) under
// VerdictKey{RecipeKeyHash(op, platform, packaging),
// builder.Environment()}, so a builder fix is seen.
absl::StatusOr<std::string> Refusal(const v1::Operator& op,
                                    const Platform& platform,
                                    v1::Packaging packaging, Builder& builder,
                                    Cache* cache);

// Refusal of each of `ops`, result i being ops[i]'s: the kept verdicts
// looked up together (one read transaction), the rest's 1-step builds
// queued together (Builder::Prefetch) before each is waited for, so a
// builder with threads builds them at once. Stops with Cancelled once
// `cancelled()` (may be empty) is true.
absl::StatusOr<std::vector<std::string>> Refusals(
    const std::vector<v1::Operator>& ops, const Platform& platform,
    v1::Packaging packaging, Builder& builder, Cache* cache,
    const std::function<bool()>& cancelled = {});

// Judges settings' outputs against the recorded setting's, keeping each
// judgement in the cache under the two designs, the two output digests, the
// per-call values, the seed, the tolerance and the given inputs, and the
// judge's id (so another judge decides afresh).
struct OutputJudge {
  Platform platform;
  v1::Packaging packaging = v1::PACKAGING_FULL_ELF;
  uint64_t seed = 0;
  JudgeFn judge;  // null: BitIdenticalJudge()
  std::string judge_id;
  Cache* cache = nullptr;  // may be null; not owned

  // Why setting `i` of `plan` may not replace setting 0 by what `outcome`
  // holds of both; "" where it may (always so for equal output digests).
  // A figure from the cache carries no output: without a kept judgement it
  // is refused, with a reason that says to remeasure.
  // REQUIRES: outcome.measurements holds 0 and i.
  absl::StatusOr<std::string> Verdict(const MeasurePlan& plan,
                                      const MeasureOutcome& outcome,
                                      int i) const;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_VERDICTS_H_
