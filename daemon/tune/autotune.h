// Autotune: choosing each operator shape's tunables by timing them on the
// NPU, written as a profile (IRON's autotune module, in C++).
//
//   Shapes(calls)       (shapes.h) the operator shapes with a tunable to
//                       search, each operator design once
//   TimeShape(task)     (shape_search.h) the search of one shape
//   TunedProfile        (tuned_profile.h) the profile entries and the diff
//   verdicts.h          the builder's and the judge's verdicts, cached
//
// AutotuneRun is an Autotune advanced one shape at a time, so whoever runs
// it (irontuned's device worker) decides between shapes what runs next.
// Autotune() runs one to its end. The shapes are tuned in TuneOrder
// (plan.h: the most weighted time first); the context hears them by their
// position in that order, with the job's JobEstimate as each begins and
// ends. With options.budget_seconds, a shape begins only while the run's
// device time is below the budget; a shape once begun is finished, so the
// budget may be passed by the last shape's time. The shapes not begun are
// left untuned: their profile entries stay as submitted, and the diff
// lists them (ProfileDiff.untuned).
//
// Builds ahead: as the run begins, the first builds of the shapes that
// start together (the first options.shapes_at_once) are queued, those of
// the shape planned to keep the device busiest per setting first (its
// planned device seconds over its planned settings): until one of them
// is built the device has nothing to time, and the longest timings then
// cover the builds of the others. Each shape's builds keep that place
// in the pool's queue (its queue rank; the shapes after them queue by
// their place in the order). As a shape begins, the builds its search
// will ask for first are queued (ShapeBuilds, Builder::Prefetch), and
// behind them, at a
// lower priority (Builder::PrefetchLater), those of every shape after it
// that the budget reaches (each queued once; with a budget, a search that
// waits for a build queues the shapes it reaches since). Behind all of
// those, with time to spare only (Builder::PrefetchSpare), the designs of
// each such shape's other settings, which its later lines may ask for
// (dropped with Builder::Unprefetch as the shape ends). So while a long
// shape keeps the device busy, a builder with threads (BuildPool) builds
// the designs of the shapes after it, and the device does not wait for
// them when one begins, nor for most of their later lines, however short
// the shapes before it. Designs the cache knows are not queued, so a
// cached run builds nothing.
//
// Shapes at once: each shape is searched on a thread of its own (a Lane),
// up to options.shapes_at_once under way at a time; as one ends, the next
// shape not begun takes its place, so a long shape holds back no shape
// after it. They share the context through a DeviceTurn (device_turn.h):
// only the holder runs, and a lane gives the turn up only while it waits
// for a build that is not ready, to the earliest shape that can run. So
// where builds take wall time, the device times a later shape while an
// earlier one waits for its designs; where they take none (a builder that
// counts its cost, a cached run), the shapes run one after the other in
// order, exactly as with one at a time. The first shape not finished is
// searched on the run's thread unless a lane started it before; lanes for
// the shapes after it start only when a search first gives the turn up,
// so a run that never waits for a build (cached, or builds that take no
// wall time) starts no thread. The run's thread holds the turn outside
// Next, so whoever runs it may use the device between calls. Results are
// collected in the tune order; the estimate counts a shape done as its
// search ends.
//
// Threads: the context's (the thread that owns the Device and the
// Builder), which the lanes share under the turn. Failure: device, builder and
// cache errors come back as the Status they were; cancellation is Cancelled. A
// setting the builder refuses or whose output is not admitted is a refused
// Comparison, not an error.
#ifndef IRONTUNE_DAEMON_TUNE_AUTOTUNE_H_
#define IRONTUNE_DAEMON_TUNE_AUTOTUNE_H_

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/profile.h"
#include "daemon/npu/device.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/device_turn.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/plan.h"
#include "daemon/tune/shape_task.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/tune_context.h"
#include "daemon/tune/tuned_profile.h"
#include "irontune/v1/profile.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

struct TuneResult {
  Profile profile;
  v1::ProfileDiff diff;
  // In Shapes() order; a shape left untuned has its key and no trials.
  std::vector<ShapeResult> shapes;
  TuneStats stats;
  // Wall seconds in which every shape under way waited for the builder
  // (Build, Await, Fit): the device was idle meanwhile.
  double build_wait_seconds = 0;
};

class AutotuneRun {
 public:
  // Plans an Autotune of `calls` under `profile`: the platform, the
  // packaging, the kernel cycles (options.cycles_path) and the shapes.
  // `calls` need only last this call: the run keeps a copy of its
  // operators, and the shapes their inputs (Shape), all it reads of it
  // afterwards, so the recording's calls (its bulk) may be dropped once
  // the run is planned. `profile`, `options` and `context` are borrowed
  // and must outlive the run. Errors: the device's platform, Shapes'.
  // REQUIRES: calls passed ValidateRecording.
  static absl::StatusOr<std::unique_ptr<AutotuneRun>> Start(
      const v1::Calls& calls, const Profile& profile,
      const AutotuneOptions& options, TuneContext& context);

  ~AutotuneRun();
  AutotuneRun(const AutotuneRun&) = delete;
  AutotuneRun& operator=(const AutotuneRun&) = delete;

  int total() const { return static_cast<int>(shapes_.size()); }
  // Shapes finished: tuned, or left untuned once the budget was spent.
  int done() const { return done_; }
  bool finished() const { return done() == total(); }
  const TuneStats& stats() const { return stats_; }
  // Device seconds the run's images took so far.
  double device_seconds() const;
  // Shape indices (into Shapes()) in the order they are tuned.
  const std::vector<size_t>& order() const { return order_; }

  // Searches the next shape (TimeShape), telling the context first; once
  // the budget is spent, leaves every shape not begun untuned instead.
  // REQUIRES: !finished().
  absl::Status Next();

  // The profile with an entry for each shape naming the setting taken (the
  // recorded one where none gains), and its diff (tuned_profile.h).
  // REQUIRES: finished().
  TuneResult Finish() &&;

 private:
  class Logged;
  class Lane;
  AutotuneRun(const v1::Calls& calls, const AutotuneOptions& options,
              TuneContext& context);
  // `calls`' operators (and format version), without its calls.
  static v1::Calls OperatorsOf(const v1::Calls& calls);
  bool BudgetSpent() const;
  // The builds the search of the shape at `position` in order_ will ask
  // for first (ShapeBuilds), and in `*rest` (may be null) those of its
  // other settings; none where the shape was searched before or they
  // cannot be told.
  std::vector<BuildRequest> BuildsOf(int position,
                                     std::vector<BuildRequest>* rest = nullptr);
  // Queues the builds of the shape at `position` (Builder::Prefetch; the
  // list made for it as a shape ahead where there is one) and behind them
  // those of each shape after it not queued yet (QueueAhead), up to the
  // last shape the budget reaches by the planned times of those before it,
  // and behind all of them their spare builds (QueueSpare).
  // Through `builder` (the lane's, so the shape's own builds queue at its
  // rank). Returns whether the shape has builds of its own to wait for.
  // The first call queues the shapes that start together (QueueStart).
  bool BuildAhead(int position, Builder& builder);
  // Queues the first builds of each shape that starts with the run (the
  // first shapes_at_once the budget reaches) in the order of their queue
  // ranks, each at its own (Builder::PrefetchAt), the shapes after the
  // first keeping their other settings' for QueueSpare. Returns those
  // after the first. REQUIRES: nothing queued yet (ahead_to_ < 0).
  std::vector<int> QueueStart(Builder& builder);
  // Whether the budget lets the shape at `position` begin, by the device
  // time of the run so far and the planned times of the shapes not
  // finished before it.
  bool Reaches(int position) const;
  // Where the builds of the shape at `position` queue in the pool
  // (TurnBuilder's queue rank): the shapes that start together ranked
  // 1, 2, ... by planned device seconds per planned setting, most first;
  // every later shape its place in the order plus one.
  int QueueRank(int position) const;
  // Starts making the seeded inputs of the shape at `position` (its
  // members' declared buffers: AddDeclaredWants) for `lane`, so they are
  // made while its first designs are built (InputCache::Prefetch).
  void PrefetchInputs(int position, TuneContext& lane);
  // Queues the first builds of the shape after the last one queued so far
  // (ahead_to_) behind all else (Builder::PrefetchLater), and keeps its
  // other settings' for QueueSpare, unless it is the last or the budget
  // would not reach it by the planned times of the shapes before it not
  // finished. Its position, or -1 where none was queued. A search that
  // waits for a build calls it (with a budget, the shapes not finished may
  // have taken less than planned).
  int QueueAhead(Builder& builder);
  // Queues the other settings' builds QueueAhead kept for the shape at
  // `position` with time to spare (Builder::PrefetchSpare).
  void QueueSpare(int position, Builder& builder);
  // Drops the spare builds queued for the shape at `position`
  // (Builder::Unprefetch): its search has ended.
  void DropSpare(int position);
  void LeaveUntuned();
  void Tell(std::optional<size_t> current);
  // The search of the shape at `position`, on `lane` (a Lane's thread,
  // holding the turn): tells the context, builds ahead, runs TimeShape.
  absl::StatusOr<ShapeResult> Search(int position, TuneContext& lane,
                                     TuneStats* stats);
  // Keeps `timed` as the result of the shape at done_ and moves on to the
  // next.
  void Finished(ShapeResult timed);
  // Counts the shape at `position` tuned in the estimate, with the
  // `device_seconds` it took, and tells the context: as its search ends,
  // which may be before those ahead of it in order_. Under the turn.
  void Ended(int position, double device_seconds);
  // Starts a Lane on a thread for each next shape not started while fewer
  // than options.shapes_at_once shapes are under way (begun and not
  // ended), so a long shape does not hold back those after it; nothing
  // while StopLanes runs. REQUIRES: the caller holds the turn.
  void StartLanes();
  // Takes the result of `head` (the lane of done_, ended) as Next's; drops
  // it from lanes_ where it is there.
  absl::Status Collect(Lane& head);
  // Gives the turn up until the lane of done_ has ended, which hands it
  // back. REQUIRES: the run's thread holds the turn; that lane exists.
  Lane& JoinHead();
  // Ends every lane: cancelled, joined and dropped. REQUIRES: the run's
  // thread holds the turn.
  void StopLanes();

  // The recording's operators, without its calls: what the shapes'
  // members index (ShapeMember::op), the searches and the profile read.
  const v1::Calls calls_;
  const AutotuneOptions& options_;
  // The context, lines also logged and the device metered.
  std::unique_ptr<Logged> logged_;
  Platform platform_;
  KernelCycles cycles_;
  std::vector<Shape> shapes_;
  std::unique_ptr<TunedProfile> profile_;
  std::vector<size_t> order_;
  std::unique_ptr<JobEstimator> estimator_;
  // By shape index: the search's result, whether the shape was tuned, and
  // why not where it was left untuned.
  std::vector<ShapeResult> results_;
  std::vector<bool> tuned_;
  std::vector<std::string> untuned_;
  int done_ = 0;
  TuneStats stats_;
  // The builds queued for later, by position in order_, queued again
  // first when the shape begins.
  std::map<int, std::vector<BuildRequest>> ahead_;
  // The last position whose builds were queued (begun or ahead).
  int ahead_to_ = -1;
  // By position in order_: its queue rank (QueueRank).
  std::vector<int> queue_rank_;
  // The builds queued with time to spare, by position in order_, until
  // the shape ends.
  std::map<int, std::vector<BuildRequest>> spare_;
  // By shape index: searched before the run began (SearchedBefore), so
  // nothing is built ahead for it.
  std::vector<bool> searched_before_;
  // Who may use the context now: the run's thread (rank 0) outside Next,
  // the lanes by place inside it.
  DeviceTurn turn_;
  // The shapes started on threads of their own and not collected yet, by
  // position in order_ (from done_ on; some may have ended).
  std::map<int, std::unique_ptr<Lane>> lanes_;
  // Set while StopLanes ends them: the lanes see their context cancelled.
  std::atomic<bool> stopping_{false};
  // Under the turn: the position JoinHead waits for; -1: none.
  int joining_ = -1;
};

// Runs an AutotuneRun from Start to Finish.
absl::StatusOr<TuneResult> Autotune(const v1::Calls& calls,
                                    const Profile& profile,
                                    const AutotuneOptions& options,
                                    TuneContext& context);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_AUTOTUNE_H_
