// measure(): timing settings of one operator design on the NPU, IRON's way
// (docs/search.md, "One Measure call"): each setting built as a 1-step and
// a `repeats`-step runlist, timed in batches interleaved round by round
// with the default, so every setting pairs with it. Cached settings are
// taken from the cache unless `remeasure`. Its parts: the builds
// (measure_builds.h), the cached figures (measure_cache.h) and the
// batches (measure_batch.h).
//
// Threads: runs on the thread that owns the Device and the Builder (the
// context's); output digests are made on helper threads, joined before
// Measure returns. Failure: see Measure.
#ifndef IRONTUNE_DAEMON_TUNE_MEASURE_H_
#define IRONTUNE_DAEMON_TUNE_MEASURE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/defaults.h"
#include "common/expression.h"
#include "daemon/npu/builder.h"
#include "daemon/ops/reference.h"
#include "daemon/store/cache.h"
#include "daemon/tune/interleave.h"
#include "daemon/tune/tune_context.h"
#include "irontune/v1/measurement.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// Above this many bytes of the default's buffers, the steps of a many-step
// runlist share one set of buffers (IRON's DISTINCT_BYTES; docs/npu-facts.md,
// "Step time").
inline constexpr uint64_t kDistinctBytes = 256ull << 20;

// The least spread between runs irontune assumes, as a share of the step:
// drift slower than a run (a clock, a temperature) moves all of it and
// cannot be seen from its own rounds. A measurement's batch_drift_share is
// this, or the spread of the default's figure between the call's batches
// where that is larger; its t_step_noise_us is its rounds' standard error
// combined with that share, or with the spread of repeated figures the
// cache has seen (MeasureCache::RepeatDrift) where that is larger
// (docs/statistics.md, "Absolute figures").
inline constexpr double kDriftFloor = 0.005;

struct MeasurePlan {
  // The settings to time: one design's operator at each setting, the
  // recorded (default) setting first.
  std::vector<v1::Operator> settings;
  // Every default applied (requests.h MeasurePlanOf): the packaging is one
  // the platform runs, never PACKAGING_UNSPECIFIED.
  ResolvedTiming timing;
  int repeats = kDefaultRepeats;
  v1::Packaging packaging = v1::PACKAGING_FULL_ELF;
  // The per-call values, by CallValue name.
  CallValues values;
  // Input buffers whose contents are given, by operator buffer name; the
  // rest hold seeded random values of their dtype.
  std::map<std::string, std::string> inputs;
  bool remeasure = false;
  // Non-empty: the figures are cached and looked up under this tag
  // (CacheKey::tag), apart from the untagged ones of the same settings.
  std::string cache_tag;
  uint64_t seed = 0;
  IdleRules idle;
};

// The build Measure asks for of `op`, one of the settings of a plan whose
// recorded setting (settings[0]) is `recorded`, packaged as `steps` steps:
// 1 (its 1-step design) or the plan's `repeats` (its many-step design,
// distinct unless the recorded setting's buffers pass kDistinctBytes). The
// one home of these requests' fields, so builds queued elsewhere (Refusals
// in verdicts.h, ShapeBuilds in shape_builds.h) are the very requests a
// Measure waits for, merged by a BuildPool.
BuildRequest MeasureRequest(const v1::Operator& op,
                            const v1::Operator& recorded,
                            const Platform& platform, int steps,
                            v1::Packaging packaging);

// Where the cache keeps what the 1-step request `one_step` built as
// ("RECIPE ARTIFACT"), under the builder's `environment`: a Measure finds a
// setting's cached figure through it without building.
VerdictKey BuiltIdentityKey(const BuildRequest& one_step,
                            const std::string& environment);

// What one setting wrote when run once, for judging its output. Every
// setting is given the same inputs, so only the default's are kept: a judge
// reads the default's inputs and a setting's written buffers.
struct SettingOutput {
  // By operator buffer name; empty for a setting other than the default.
  // The very bytes the images were given (Image::ShareBuffer), not a copy.
  SharedInputs inputs;
  std::map<std::string, std::string> written;  // drained buffers, by name
};

struct MeasureOutcome {
  // Each setting timed or taken from the cache, by index into `settings`.
  // A setting other than the default that does not build is left out.
  std::map<int, v1::Measurement> measurements;
  // Why settings were left out, by index.
  std::map<int, std::string> refused;
  // Indices taken from the cache.
  std::vector<int> cached;
  // What judging needs of the settings timed in this call (not those from
  // the cache): the default's inputs (at 0, whenever a batch ran) and what
  // each other setting wrote where its output digest differs from the
  // default's. Outputs are dropped once digested otherwise: equal digests
  // need no judging (OutputJudge::Verdict), and no judge reads the
  // default's output, so the outputs held at once are at most two batches'
  // (the one timed, the one digested beside it) plus those kept.
  std::map<int, SettingOutput> outputs;
};

// Times `plan.settings` on the context's device, with its builder, cache
// and seeded inputs. Errors: the default does not build
// (FailedPrecondition with the builder's reason), a load or run fails (the
// device's status), the cache is for another power mode or the power mode
// changed during a batch (FailedPrecondition), the NPU stayed held
// (DeadlineExceeded), cancellation (Cancelled).
absl::StatusOr<MeasureOutcome> Measure(const MeasurePlan& plan,
                                       TuneContext& context);

// How much longer a step of `m` takes than the default timed beside it,
// paired round by round (IRON's against_default): the median of the
// per-round differences and that median's standard error.
struct Delta {
  double delta_us = 0;
  std::optional<double> noise_us;
};
Delta AgainstDefault(const v1::Measurement& m);

// How much longer a step of `a` takes than one of `b`. When both were timed
// in one run (same `run`, as many rounds), delta_us is the median of the
// per-round differences a[i] - b[i] and noise_us its Maritz-Jarrett
// standard error (PairedDifference); else the difference of the medians
// with the two standard errors in quadrature (UnpairedDifference). Either
// way the noise describes the delta it is given with, and holds the drift
// too: paired, the larger batch_drift_share of the two times |delta|,
// since a drift scales both alike; unpaired, each one's drift share of its
// own step: batch_drift_share where both were timed in one run (rounds
// cut short by the cutoff), else the drift between repeats
// (t_step_noise_us beyond the rounds' own error).
// A figure from before batch_drift_share pairs with its t_step_noise_us
// beyond the rounds' error. No rounds: the t_step_us difference with no
// noise.
Delta MeasurementDifference(const v1::Measurement& a, const v1::Measurement& b);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_MEASURE_H_
