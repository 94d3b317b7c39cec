// Autotune: choosing each operator shape's tunables by timing them on the
// NPU, written as a profile (IRON's autotune module, in C++).
//
//   Shapes(calls)       (shapes.h) the operator shapes with a tunable to
//                       search, each operator design once
//   TimeShape(task)     (shape_search.h) the search of one shape
//   BuildAhead          (build_ahead.h) the builds queued before the
//                       searches ask for them
//   TunedProfile        (tuned_profile.h) the profile entries and the diff
//   verdicts.h          the builder's and the judge's verdicts, cached
//
// AutotuneRun is an Autotune advanced one shape at a time, so whoever runs
// it (irontuned's device worker) decides between shapes what runs next;
// Autotune() runs one to its end. How the shapes are ordered, what the
// budget does, how builds are queued ahead and how shapes are searched at
// once on lanes: docs/search.md ("Autotune", "Building ahead", "Shapes at
// once").
//
// Threads: the context's (the thread that owns the Device and the
// Builder), which the lanes (one thread per shape under way, at most
// options.shapes_at_once) share under a DeviceTurn (device_turn.h): only
// the holder runs. The run's thread holds the turn outside Next, so
// whoever runs it may use the device between calls. Failure: device,
// builder and cache errors come back as the Status they were;
// cancellation is Cancelled. A setting the builder refuses or whose output
// is not admitted is a refused Comparison, not an error.
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
#include "daemon/tune/build_ahead.h"
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
  // Whether the budget lets the shape at `position` begin, by the device
  // time of the run so far and the planned times of the shapes not
  // finished before it.
  bool Reaches(int position) const;
  // Starts making the seeded inputs of the shape at `position` (its
  // members' declared buffers: AddDeclaredWants) for `lane`, so they are
  // made while its first designs are built (InputCache::Prefetch).
  void PrefetchInputs(int position, TuneContext& lane);
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
  // The builds queued ahead of the searches.
  std::unique_ptr<BuildAhead> ahead_;
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
