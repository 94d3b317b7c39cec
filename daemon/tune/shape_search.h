// TimeShape: IRON's time_shape, the search of one shape's settings, and
// ShapeSearch, the state of one such search. The search finds, builds and
// times the settings (shape_search.cc); the choice of the setting taken
// and its confirmation are a unit of their own (shape_choice.h). What the
// search does, step by step, and why: docs/search.md ("The search of one
// shape").
//
// Ownership: ShapeSearch holds its ShapeTask, and so everything the task
// names, by reference; they outlive it. Threads: the context's (the device
// worker's); outputs are judged on a helper thread (OutputJudge, verdicts.h).
// Failure: device, builder and cache errors come back as they were;
// cancellation is Cancelled. A setting the builder refuses or whose output
// is not admitted is a refused Comparison, not an error.
#ifndef IRONTUNE_DAEMON_TUNE_SHAPE_SEARCH_H_
#define IRONTUNE_DAEMON_TUNE_SHAPE_SEARCH_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/npu/builder.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/cost_model.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/measure.h"
#include "daemon/tune/ranking.h"
#include "daemon/tune/search.h"
#include "daemon/tune/settings_timer.h"
#include "daemon/tune/shape_builds.h"
#include "daemon/tune/shape_choice.h"
#include "daemon/tune/shape_task.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/tune_context.h"
#include "daemon/tune/verdicts.h"

namespace irontune {

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

// Times `task.shape`'s settings against the recorded setting and chooses
// the one taken (docs/search.md). Trials are in Settings order, the
// recorded one first. With no `task.incumbent` the recorded setting runs,
// and no tune decided it. A
// confirmation still open after its last batch keeps a given incumbent
// unless a challenger's gain clears, and is decided on its point
// estimates where none is given (docs/statistics.md, "Close calls"); `best` is
// the trial PickConfirmed() takes from the confirmation of the challengers
// the search nominates (options.min_gain of a step time is the practical
// margin), else the incumbent. One setting left gives [{recorded, 0, 0}]. A
// recorded setting the builder refuses gives its one trial, refused, untimed.
// `task.stats` (may be null) is added to; the context hears each trial
// under `task.index`.
absl::StatusOr<ShapeResult> TimeShape(const ShapeTask& task);

// One TimeShape call: the search's state.
class ShapeSearch {
 public:
  // Adds to `stats`, not task.stats.
  ShapeSearch(const ShapeTask& task, TuneStats& stats)
      : task_(task),
        shape_(task.shape),
        calls_(task.calls),
        platform_(task.platform),
        options_(task.options),
        packaging_(task.options.packaging),
        judge_({task.platform, packaging_, task.options.seed,
                task.options.judge, task.options.judge_id,
                task.options.reference, task.context.cache()}),
        cycles_(task.cycles),
        context_(task.context),
        stats_(stats),
        shape_index_(task.index),
        incumbent_(task.incumbent) {}

  // The search, then the choice of the setting taken (Collect, Choose):
  // TimeShape's result. REQUIRES: called once.
  absl::StatusOr<ShapeResult> Run();

 private:
  const v1::Operator& OpOf(const ShapeMember& m) const;

  // The settings every member has, the recorded one first.
  absl::Status FindCandidates();

  // The builder's reason for refusing `s` for some member; "" where every
  // member builds.
  absl::StatusOr<std::string> RefusalOf(const TunableValues& s);

  absl::StatusOr<std::string> RecordedRefusal() { return RefusalOf(found_[0]); }

  // Settings the builder refuses are dropped before timing.
  absl::Status DropUnbuildable();

  // Design identities, and the kernel bound of each setting where there is
  // one.
  void PrepareSearch();

  // Id(found_[i]), computed once per search.
  const std::string& FoundId(size_t i) const;

  // The design identity of `s`, computed once per setting (by
  // SettingIdentity) for the search's life.
  const std::string& Id(const TunableValues& s) const;

  // The least step time `s` could take, summed and weighted as a delta is;
  // nullopt where any member or point has no bound.
  std::optional<double> LeastUsOf(const TunableValues& s) const;

  // Whether the kernel bound shows `s` cannot beat the best so far.
  bool Slower(const TunableValues& s) const;

  // Times the settings of `batch` not yet tried (and not ruled out by the
  // bound) beside the recorded setting; with `recorded_alone`, the recorded
  // setting even when nothing else is left. With `whole` (the batch is the
  // whole search), a race that leaves no more in reach than a confirmation
  // holds nominates them from their screening figures (Nominate).
  absl::Status TimeBatch(const std::vector<TunableValues>& batch,
                         bool recorded_alone, bool whole = false);

  // Where the settings a screen left in reach (`todo`, the recorded setting
  // first, then the incumbent among them) other than the incumbent are no
  // more than MostContenders(): they keep their screening figures as their
  // trials and are all nominated for confirmation (nominated_), with no
  // full Timing, which would only choose the contenders among them; the
  // confirmation times them afresh against the incumbent. Else false, and
  // nothing is done.
  bool Nominate(const std::vector<TunableValues>& todo);

  // Whether `todo` (the recorded setting first) holds a setting the race
  // may leave out: one other than the incumbent, which always stays.
  bool RacesAny(const std::vector<TunableValues>& todo) const;

  // Screens `todo` (the recorded setting first) at ScreenTiming, cached
  // under its own tag (ScreenTag), and returns the recorded setting and
  // the settings whose screening figure is within reach of the best
  // (Reaches), fastest first; the incumbent is always among them. The
  // others keep their screening figure as their trial and get no full
  // Timing. The recorded setting keeps its screening figure too where no
  // full batch has timed it (the search reports from it when nothing
  // reaches).
  absl::StatusOr<std::vector<TunableValues>> Screen(
      const std::vector<TunableValues>& todo);

  // The cache tag of a screening figure at `screen`: apart from the full
  // Timing's figures of the same settings (a cache key does not hold the
  // Timing), so a run without remeasure replays the same screen.
  static std::string ScreenTag(const ResolvedTiming& screen);

  // Tells the context which tried setting Pick() takes so far.
  void ReportPick();

  // Times `todo` (the recorded setting first) at every member's every
  // point; `remeasure` times even what the cache holds. Each trial is
  // against the recorded setting; with `base` > 0 against todo[base]
  // instead (paired where timed in one run), outputs not judged again.
  absl::StatusOr<TimedBatch> TimeSettings(
      const std::vector<TunableValues>& todo, bool remeasure, int base = 0);

  // As TimeSettings, with the trials against each of `bases` (distinct
  // indices into `todo`) from the same runs: one TimedBatch per base.
  // `timing` (may be null: options.timing) is the Timing they are given.
  absl::StatusOr<std::vector<TimedBatch>> TimeAgainst(
      const std::vector<TunableValues>& todo, bool remeasure,
      const std::vector<int>& bases, const std::string& cache_tag = "",
      const ResolvedTiming* timing = nullptr);

  // Waits for the judging under way (judge_), giving its verdicts to
  // `timer` (may be null).
  absl::Status JudgeDone(SettingsTimer* timer);

  MeasurePlan PlanFor(const ShapeMember& member,
                      const std::vector<TunableValues>& todo) const;

  void Count(const MeasureOutcome& outcome);

  absl::Status Exhaustive();

  // Ranking before building (ranking.h): rounds of the settings the cost
  // model says may beat the best figure so far, each timed as a batch
  // (TimeBatch), the model refit after each, until none may. What the
  // shape showed is added to the context's CostKnowledge as the search
  // ends, and its rounds are kept in the cache (KeepRanked); a search that
  // finds them (RankedBefore) times the same rounds again, from the cache
  // where it holds their figures, and asks the model nothing.
  absl::Status Ranked();

  // Ranked()'s first round: the incumbent, the settings whose figures the
  // cache holds (no build), then the model's choice.
  absl::StatusOr<std::vector<int>> FirstRound(Ranking& ranking);

  // The cache's record of a ranked search of this shape, its settings,
  // incumbent, Timing and margin: a verdict under a key of its own holding
  // its rounds (indices into found_). Empty where none is kept or the
  // record does not parse. A remeasure replays the rounds too: the same
  // search, timed afresh.
  VerdictKey RankedKey() const;
  absl::StatusOr<std::vector<std::vector<int>>> RankedBefore() const;
  absl::Status KeepRanked(const std::vector<std::vector<int>>& rounds);

  // Tells `ranking` what became of the settings of `round` (indices into
  // found_) and of the recorded setting: timed (admitted, with a noise),
  // else dropped.
  void Teach(Ranking& ranking, const std::vector<int>& round) const;

  // What the search timed, as samples for the context's CostKnowledge.
  std::vector<CostSample> Samples() const;

  // Whether a ranked search looks only at the refusals the cache keeps
  // (a builder without fit checks would build every setting to learn
  // them): the rest are learnt as settings are built.
  bool RanksWithoutFits() const;

  // Passes over the tunables from the incumbent, each timing the Line()
  // through the setting Pick() takes so far, until a pass moves nothing.
  absl::Status CoordinateDescent();

  // Queues the builds Measure asks of the settings of `batch` not tried
  // yet (each member's 1-step and options.repeats-step designs). With
  // `guess` (a later batch's, built while this one is timed; nothing
  // unless guess_builds_) and `later`, behind all else
  // (Builder::PrefetchLater), so it never delays a build the search waits
  // for; else at the back of the first queue (Builder::Prefetch). Designs
  // whose built identity the cache keeps are left out, so a search
  // replayed from the cache queues nothing.
  absl::Status QueueBuilds(const std::vector<TunableValues>& batch, bool later,
                           bool guess = true);

  // Within a coordinate descent, once a line is screened (`screened`: the
  // recorded setting, then those in reach, fastest first), every build it
  // needs is done: the next line's designs are queued on the first queue,
  // through the setting taken so far and through the fastest screened
  // (the setting taken next where it wins), ahead of the next shape's.
  absl::Status BuildNextLines(const std::vector<TunableValues>& screened);

  // The tried trials in Settings order into `trials`; the incumbent's index
  // among them (the recorded setting's, 0, where the incumbent is not
  // there or not admitted).
  int TriedInOrder(std::vector<ShapeTrial>& trials) const;

  // Pick() over `trials` against `incumbent`, the practical margin
  // options.min_gain of the incumbent's step time; -1 for no trials.
  int PickAmong(int incumbent, const std::vector<ShapeTrial>& trials) const;

  // The trials in Settings order, the incumbent, and the recorded
  // setting's time over the batches.
  void Collect(ShapeResult& out);

  // The choice of the setting taken after this search, timing its
  // confirmation batches with TimeAgainst.
  ShapeChoice ChoiceOf();

  const ShapeTask& task_;
  const Shape& shape_;
  const v1::Calls& calls_;
  const Platform& platform_;
  const AutotuneOptions& options_;
  const v1::Packaging packaging_;
  // Judges outputs on a helper thread; holds the shape's CPU references.
  OutputJudge judge_;
  const KernelCycles& cycles_;
  TuneContext& context_;
  TuneStats& stats_;
  const int shape_index_;

  std::vector<TunableValues> found_;  // the candidates, recorded first
  std::function<std::string(const v1::Operator&, const TunableValues&)>
      identity_of_;
  std::string recorded_id_;
  // Id() by SettingIdentity; node-based, so Id's references stay valid.
  mutable std::map<std::string, std::string> ids_;
  mutable std::vector<const std::string*> found_ids_;   // FoundId, into ids_
  std::map<std::string, std::optional<double>> least_;  // by identity
  std::map<std::string, ShapeTrial> tried_;             // by identity
  std::optional<double> recorded_us_;
  // The setting profile entries give the shape; null where none covers it
  // (the recorded setting is the incumbent).
  const TunableValues* incumbent_;
  std::string incumbent_id_;
  int incumbent_index_ = 0;  // into found_
  // While a coordinate descent times a line: the tunable of the line it
  // times next ("" otherwise) and the setting taken before this line.
  std::string next_tunable_;
  TunableValues next_through_;
  // Whether QueueBuilds guesses: not in a search of a shape searched before.
  bool guess_builds_ = false;
  // The recorded setting's figure and its standard error, each batch.
  std::vector<double> recorded_batches_;
  std::vector<std::optional<double>> recorded_within_;
  // The same from screening batches while no full batch timed it.
  std::vector<double> screen_recorded_;
  std::vector<std::optional<double>> screen_recorded_within_;
  // Screening figures of the settings a screen left in reach, and of the
  // recorded setting, by identity.
  std::map<std::string, ShapeTrial> screened_in_;
  // A ranked search replaying a search kept in the cache (RankedBefore).
  bool replayed_ = false;
  // The challengers Nominate() chose for confirmation, where it did.
  std::optional<std::vector<std::string>> nominated_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_SHAPE_SEARCH_H_
