// The choice of the setting a shape's search takes, and its confirmation
// (docs/search.md, "When a setting is taken"): once the search
// (shape_search.h) has tried the settings, the challengers that contend
// are timed again against the incumbent and each other in batches of
// their own, and one is taken only where it wins again.
//
// Ownership: a ShapeChoice borrows its task and keeps its timer and
// identity functions; they outlive it. Threads: the context's (the device
// worker's). Failure: the timer's errors, as they were (device, builder
// and cache errors; Cancelled).
#ifndef IRONTUNE_DAEMON_TUNE_SHAPE_CHOICE_H_
#define IRONTUNE_DAEMON_TUNE_SHAPE_CHOICE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/defaults.h"
#include "daemon/tune/search.h"
#include "daemon/tune/settings.h"
#include "daemon/tune/settings_timer.h"
#include "daemon/tune/shape_task.h"

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

// How many challengers one confirmation batch on `platform` holds beside
// the recorded setting and, where it is another (`incumbent_apart`), the
// incumbent: at most kMostContenders.
int MostContenders(const Platform& platform, bool incumbent_apart);

// options.min_gain of the step time of `incumbent`: the recorded
// setting's (`recorded_us`; 0 where unknown) plus its delta.
double PracticalUs(const AutotuneOptions& options,
                   std::optional<double> recorded_us,
                   const ShapeTrial& incumbent);

// Times `todo` (the recorded setting first) at `timing`, with the trials
// against each of `bases` (distinct indices into `todo`) from the same
// runs, one TimedBatch per base, the figures cached under `cache_tag`
// (ShapeSearch::TimeAgainst).
using ConfirmTimer = std::function<absl::StatusOr<std::vector<TimedBatch>>(
    const std::vector<TunableValues>& todo, const std::vector<int>& bases,
    const std::string& cache_tag, const ResolvedTiming& timing)>;

// A setting's design identity, the same for the search's life
// (ShapeSearch::Id).
using IdentityOf = std::function<const std::string&(const TunableValues&)>;

// What the choice reads of the search that ran before it.
struct Searched {
  TunableValues recorded;             // the recorded setting
  std::optional<double> recorded_us;  // its step time, where timed
  // The challengers a race nominated for confirmation (by identity), where
  // it did; else they are chosen from the trials (Contenders).
  std::optional<std::vector<std::string>> nominated;
};

class ShapeChoice {
 public:
  // Adds to `stats` (the search's), not task.stats.
  ShapeChoice(const ShapeTask& task, TuneStats& stats, Searched searched,
              ConfirmTimer timer, IdentityOf id);

  // The setting taken against the incumbent, into out.best and
  // out.against_incumbent: the challengers that Contend among out.trials
  // (or those nominated) are timed again against out.incumbent and each
  // other (Confirm) and PickConfirmed() chooses from those figures alone;
  // else the incumbent stays. Tells the context the pick. REQUIRES:
  // out.trials holds the search's trials, out.incumbent indexes them.
  absl::Status Choose(ShapeResult& out);

 private:
  // The indices into out.trials of the nominated settings, admitted, in
  // trials' order.
  std::vector<int> NominatedOf(const ShapeResult& out) const;

  // Contenders() of `screened` against the incumbent, as many as one batch
  // holds beside the recorded setting and the incumbent (at most
  // kMostContenders); the search's own Pick(), `screen_pick`, is always
  // among them.
  std::vector<int> ContendersOf(const ShapeResult& out,
                                const std::vector<Comparison>& screened,
                                int screen_pick, double practical) const;

  // A confirmation's figures: each contender against the incumbent, member
  // by member, and the Confirmation PickConfirmed() reads.
  struct Confirmed {
    std::vector<ShapeTrial> trials;
    Confirmation figures;
    bool open = false;  // still open after kMostConfirmBatches
  };

  // The `contenders` (indices into out.trials) timed against the
  // incumbent in batches of their own, never the search's figures (a run
  // without remeasure replays a batch of the same settings from the cache,
  // under its tag: ConfirmTag), interleaved and paired round by round: each
  // trial's delta is the contender's minus the incumbent's, pooled over the
  // batches, and each contender's against each other's is pooled over the
  // batches both were in. A batch is timed again while ConfirmationOpen(), at
  // most kMostConfirmBatches, with only the contenders it names.
  absl::StatusOr<Confirmed> Confirm(const ShapeResult& out,
                                    const std::vector<int>& contenders,
                                    double incumbent_us);

  // Confirmation batch number `batch` of the contenders `open` (indices into
  // `contenders`) beside the recorded setting and the incumbent: appends
  // each one's figure against the incumbent to `figures` and against each
  // other open one to `pairs` ([i][j]: i's time minus j's).
  absl::Status ConfirmBatch(
      const ShapeResult& out, const std::vector<int>& contenders,
      const std::vector<int>& open, int batch,
      std::vector<std::vector<ShapeTrial>>& figures,
      std::vector<std::vector<std::vector<Comparison>>>& pairs);

  // The cache tag of confirmation batch number `batch` of `todo`: the same
  // settings in the same batch of a confirmation find its figures again.
  std::string ConfirmTag(const std::vector<TunableValues>& todo, int batch,
                         const ResolvedTiming& timing) const;

  // The figures so far, each pooled over its batches (a contender's own
  // figure always has one: every contender is in the first batch).
  static Confirmed PooledConfirmation(
      const std::vector<std::vector<ShapeTrial>>& figures,
      const std::vector<std::vector<std::vector<Comparison>>>& pairs);

  // A trial's figures from several batches as one (Pooled), member by
  // member.
  static ShapeTrial PooledTrial(const std::vector<ShapeTrial>& figures);

  const ShapeTask& task_;
  const AutotuneOptions& options_;
  TuneStats& stats_;
  const Searched searched_;
  const ConfirmTimer timer_;
  const IdentityOf id_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_SHAPE_CHOICE_H_
