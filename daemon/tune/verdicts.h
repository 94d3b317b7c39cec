// Verdicts the cache keeps besides figures, so a search does not ask again:
// whether the builder takes a design (Refusal), and whether a setting's
// output may replace the recorded setting's (OutputJudge).
//
// Threads: the device worker's (they use the Builder and the writing
// Cache); OutputJudge judges on a helper thread of its own. Failure: the
// builder's and the cache's errors come back as they were; a refusal is a
// verdict, not an error.
#ifndef IRONTUNE_DAEMON_TUNE_VERDICTS_H_
#define IRONTUNE_DAEMON_TUNE_VERDICTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/store/cache.h"
#include "daemon/tune/judge.h"
#include "daemon/tune/measure.h"
#include "irontune/v1/measurement.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// sha256 hex of `op` as a design (class, params, tunables and buffers;
// domains, pinned and tolerance left out), the generation and the
// packaging: what a builder verdict follows besides the builder.
std::string RecipeKeyHash(const v1::Operator& op, const Platform& platform,
                          v1::Packaging packaging);

// Where the builder's verdict on `op` (Refusal) is kept: the design's
// RecipeKeyHash under the builder's `environment`.
VerdictKey BuilderVerdictKey(const v1::Operator& op, const Platform& platform,
                             v1::Packaging packaging,
                             const std::string& environment);

// The builder verdicts `cache` (may be null: none) keeps of `ops`, looked
// up together: nullopt where none is kept, "" where the builder takes the
// design, else its reason. Builds nothing.
absl::StatusOr<std::vector<std::optional<std::string>>> KeptRefusals(
    const std::vector<v1::Operator>& ops, const Platform& platform,
    v1::Packaging packaging, const std::string& environment, Cache* cache);

// Whether the builder takes `op` (at its tunables' values) alone on
// `platform`: "" where it does, else the builder's reason (Builder::Fit of
// its 1-step request: a fit check where the builder has one, else the
// refusal of the 1-step build). The verdict is kept in `cache` (may be null)
// under VerdictKey{RecipeKeyHash(op, platform, packaging),
// builder.Environment()}, so a builder fix is seen.
absl::StatusOr<std::string> Refusal(const v1::Operator& op,
                                    const Platform& platform,
                                    v1::Packaging packaging, Builder& builder,
                                    Cache* cache);

// Refusal of each of `ops`, result i being ops[i]'s: the kept verdicts
// looked up together (one read transaction), the rest asked of the
// builder: Builder::Fit each where it ChecksFit (nothing built), else
// their 1-step builds queued together (Builder::Prefetch) before each is
// waited for, so a builder with threads builds them at once. Stops with
// Cancelled once `cancelled()` (may be empty) is true.
absl::StatusOr<std::vector<std::string>> Refusals(
    const std::vector<v1::Operator>& ops, const Platform& platform,
    v1::Packaging packaging, Builder& builder, Cache* cache,
    const std::function<bool()>& cancelled = {});

// Judges settings' outputs against the recorded setting's, keeping each
// judgement in the cache under the two designs, the two output digests, the
// per-call values, the seed, the tolerance and the given inputs, and the
// judge's id (so another judge decides afresh).
//
// The work is split so the device thread does only the cache's part: Start
// answers each setting whose verdict needs no judging (equal output
// digests; a kept judgement, the point's looked up together; a figure from
// the cache, which carries no output) and hands the rest, with the outputs
// they need, to a helper thread, which runs the judge while the caller
// goes on (the next Measure); Finish waits for it, keeps its judgements in
// the cache and gives every verdict of the Start. The helper takes each
// CPU reference from a ReferenceMemo this OutputJudge owns, keyed under the
// recorded setting's design, the seed and the given inputs (which decide
// the inputs the judge is given), so one point's reference is computed
// once for as long as the OutputJudge lives (one shape's search), however
// many settings and Measure calls it judges.
//
// Threads: Start, Finish and the destructor on the device worker's (they
// use the writing Cache); one Start at a time. Failure: the cache's errors,
// from Start (lookups) or Finish (keeping); a refusal is a verdict.
class OutputJudge {
 public:
  struct Options {
    Platform platform;
    v1::Packaging packaging = v1::PACKAGING_FULL_ELF;
    uint64_t seed = 0;
    JudgeFn judge;  // null: BitIdenticalJudge()
    std::string judge_id;
    ReferenceFn reference;   // null: ReferenceOutputs
    Cache* cache = nullptr;  // may be null; not owned
  };

  explicit OutputJudge(Options options);
  // Waits for a judging under way; its judgements are not kept.
  ~OutputJudge();
  OutputJudge(const OutputJudge&) = delete;
  OutputJudge& operator=(const OutputJudge&) = delete;

  // Starts deciding, for each of `settings` (indices into plan.settings,
  // none 0), whether it may replace setting 0 by what `outcome` holds of
  // both. A setting whose figure came from the cache and has no kept
  // judgement is refused, with a reason that says to remeasure.
  // REQUIRES: outcome.measurements holds 0 and each of `settings`; the
  // last Start, if any, was finished.
  absl::Status Start(const MeasurePlan& plan, MeasureOutcome outcome,
                     const std::vector<int>& settings);

  // The verdicts of the last Start by setting ("" where it may replace
  // setting 0), once its judging is done and kept; empty with no Start
  // outstanding.
  absl::StatusOr<std::map<int, std::string>> Finish();

 private:
  struct Work;
  struct Pending;

  std::vector<std::string> JudgeAll(const Work& work);

  const Options options_;
  ReferenceMemo memo_;  // the helper's; one judging at a time
  // After memo_, so a judging under way is waited for before it goes.
  std::unique_ptr<Pending> pending_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_VERDICTS_H_
