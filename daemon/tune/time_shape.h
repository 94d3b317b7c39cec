// TimeShape: IRON's time_shape, the search of one shape's settings.
//
// The settings every member of the shape has (Settings with shape.pinned,
// intersected), less those the builder refuses for some member, are timed
// against the recorded setting: all of them where there are at most
// options.exhaustive, else a coordinate descent over Line()s through the
// setting taken so far until a pass moves nothing. With kernel cycles and
// a core clock, a GEMM setting whose LeastUs (summed as the delta is) is no
// less than the recorded setting's time plus the best gain so far is not
// timed. The setting taken is then chosen with hysteresis (Pick: the
// incumbent keeps ties) and confirmed: the challengers that contend (or,
// where a race over every setting leaves no more in reach than a batch
// holds, all of those, without the full Timing) are
// re-timed against the incumbent and each other in batches of their own
// (interleaved, never the search's figures) and one is taken only if it
// wins again and no other winner may be faster than it by its margin
// (PickConfirmed). A confirmation batch is cached under a tag naming its
// number and settings, so a run without remeasure replays a decision from
// the cache, timing nothing, and takes what the run that timed it took.
// docs/search.md says why each step is as it is.
//
// Builds: refusals are asked with Builder::Fit (Refusals), so where the
// builder checks fits only the settings timed are built. A batch's
// designs are queued (Builder::Prefetch) for every member before the
// first member's Measure; a coordinate descent also queues, behind each
// line's designs, its guesses at the next line (through the setting taken
// so far, and once screened through the fastest screened), except in a
// search of a shape searched before (replayed from the cache).
//
// Threads: the context's (the device worker's); outputs are judged on a
// helper thread (OutputJudge, verdicts.h), each point's while the next
// point is measured, its verdicts taken before the next point is judged.
// Failure: device, builder and cache errors come back as they were;
// cancellation is Cancelled. A setting the builder refuses or whose output
// is not admitted is a refused Comparison, not an error.
#ifndef IRONTUNE_DAEMON_TUNE_TIME_SHAPE_H_
#define IRONTUNE_DAEMON_TUNE_TIME_SHAPE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/search.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/tune_context.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// At most this many challengers are confirmed for a shape (fewer where one
// batch cannot hold them beside the recorded setting and the incumbent),
// and a confirmation times at most this many batches: a close call is
// measured again until its interval clears the margin or falls short of
// it, or these are spent (docs/statistics.md, "Close calls"). A
// confirmation batch times 1/kConfirmCallShare of the Timing's calls a
// round (at least 2), so a clear call stops after a small share of one
// full batch, and the batches a close call may take hold as many calls as
// 6 batches at the full Timing.
inline constexpr int kMostContenders = 4;
inline constexpr int kConfirmCallShare = 4;
inline constexpr int kMostConfirmBatches = 6 * kConfirmCallShare;

// Racing (docs/search.md, "Racing"): each setting is first screened at
// ScreenTiming, at most kScreenRounds rounds of 1/kScreenCallShare of the
// calls, and given the full Timing only where its screening figure
// Reaches the best one's with kScreenZ noises to spare.
inline constexpr uint32_t kScreenRounds = 3;
inline constexpr uint32_t kScreenCallShare = 25;
inline constexpr double kScreenZ = 3.0;

// The screening Timing of `full`: its rounds, at most kScreenRounds, and
// its calls over kScreenCallShare, at least 2; settle and cutoff as
// `full`'s.
ResolvedTiming ScreenTiming(const ResolvedTiming& full);

// One setting's comparison, with each member's share (per step, weighted
// over its points) so the model-level gain can weight members by their
// steps.
struct ShapeTrial {
  Comparison trial;
  std::vector<double> member_delta_us;
  std::vector<std::optional<double>> member_noise_us;
};

struct ShapeResult {
  std::string key;
  std::vector<ShapeTrial> trials;  // the recorded setting first
  int best = 0;                    // index of the setting taken
  // Index of the incumbent: the setting the submitted profile runs, else
  // (not given, not among the settings, or not admitted) the recorded one.
  int incumbent = 0;
  // The setting taken against the incumbent: where a challenger was taken,
  // its confirmation (an independent re-measurement of the two, paired);
  // else 0 with noise 0.
  ShapeTrial against_incumbent;
  // A challenger that Pick chose but that did not win again; -1 if none.
  int unconfirmed = -1;
  // The recorded setting's step time (summed over members, weighted over
  // points): the median of its batches' figures, and the standard error of
  // one batch's figure: the larger of the batches' own noises (root mean
  // square; each with its drift floor) and their spread (BatchNoise);
  // nullopt where a batch's noise is unknown (one round).
  double recorded_us = 0;
  std::optional<double> recorded_noise_us;
};

// Times `shape`'s settings (see the top of this file). Trials are in
// Settings order, the recorded one first. `incumbent` is the setting the
// submitted profile's entries covering the shape run; null where no entry
// covers it (the recorded setting runs, and no tune decided it). A
// confirmation still open after its last batch keeps a given incumbent
// unless a challenger's gain clears, and is decided on its point
// estimates where none is given (docs/statistics.md, "Close calls"); `best` is
// the trial PickConfirmed() takes from the confirmation of the challengers
// the search nominates (options.min_gain of a step time is the practical
// margin), else the incumbent. One setting left gives [{recorded, 0, 0}]. A
// recorded setting the builder refuses gives its one trial, refused, untimed.
// `stats` (may be null) is added to; the context hears each trial under
// `shape_index`.
absl::StatusOr<ShapeResult> TimeShape(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const AutotuneOptions& options, const KernelCycles& cycles,
    TuneContext& context, TuneStats* stats, int shape_index = 0,
    const TunableValues* incumbent = nullptr);

// The settings every member of `shape` has (Settings with shape.pinned in
// `space`, intersected), the recorded setting first: those TimeShape
// searches. Lines go to `log` (may be null) as Settings logs them.
absl::StatusOr<std::vector<TunableValues>> ShapeSettings(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const SearchSpace& space,
    const std::function<void(const std::string&)>& log = nullptr);

// The builds a TimeShape of `shape` will ask the context's builder for
// first, as Refusals and Measure ask (MeasureRequest): each member's 1-step
// design of each setting the search times first, with its
// options.repeats-step design behind it (none where the recorded setting
// is alone), as Measure waits for them.
// Those settings are each of ShapeSettings where they are at most
// options.exhaustive and no kernel bound may leave some untimed; else the
// recorded one and, for a coordinate descent, the first tunable's Line
// through `incumbent` (may be null: the recorded setting; TimeShape's
// incumbent). Where the builder does not ChecksFit, Refusals builds every
// setting's 1-step design, and all of those are listed (those of the
// settings not timed first last). A design the
// context's cache knows (a built identity, measure.h BuiltIdentityKey, or a
// refusal; without fit checks any builder verdict) is left out with its
// many-step design: the search
// takes it from the cache without building, so a cached search gives none;
// none at all where the cache keeps a refusal of the recorded setting (the
// search then builds nothing; where that is not known yet, the list is
// built and a refusal makes it useless).
// Does not look at remeasure. Builds nothing. Where the builder
// ChecksFit, the fits of the settings the cache does not know are checked
// (Refusals: kept in the cache, so the search reads them) and the settings
// refused are left out, with the recorded setting's refusal giving an empty
// list; otherwise, where the builder turns out to refuse settings, their
// many-step designs are in the list all the same (a prefetch builds them
// for nothing). Errors are Settings', the cache's and the fit checks'
// (Cancelled once the context is). With `rest` (may be null), the designs
// of the shape's other settings that fit and that the cache does not know
// are appended to it, setting by setting (its 1-step design, then its
// many-step one): what the search's later lines may ask for.
absl::StatusOr<std::vector<BuildRequest>> ShapeBuilds(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const AutotuneOptions& options, const KernelCycles& cycles,
    TuneContext& context, const TunableValues* incumbent = nullptr,
    std::vector<BuildRequest>* rest = nullptr);

// For each of `shapes`, whether the context's cache keeps the built
// identity (BuiltIdentityKey, with the context's builder) of its first
// member's recorded 1-step design: the shape was searched before, and its
// search asks the builder for little or nothing (a search cut short may
// still build some). Costs a hash a shape and one lookup for all
// (ShapeBuilds costs a few per setting); all false without a cache.
// Errors: the cache's.
absl::StatusOr<std::vector<bool>> SearchedBefore(
    const std::vector<Shape>& shapes, const v1::Calls& calls,
    const Platform& platform, const AutotuneOptions& options,
    TuneContext& context);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_TIME_SHAPE_H_
