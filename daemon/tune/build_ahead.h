// BuildAhead: the build-ahead queue of an Autotune, which queues the
// designs its shapes' searches will ask for before they ask
// (docs/search.md, "Building ahead"): the first builds of the shapes that
// start together, those of each shape as it begins, those of the shapes
// after it that the budget reaches, and, with time to spare, their other
// settings' designs. Designs the cache knows are not queued.
//
// Ownership: borrows the run's shapes, order, operators, platform,
// options, cycles, profile and context, which outlive it; keeps the lists
// it made. Threads: one at a time, under the run's turn (device_turn.h).
// Failure: none; a list that cannot be made (ShapeBuilds' error) is
// empty, since the search meets the error of its own when it asks.
#ifndef IRONTUNE_DAEMON_TUNE_BUILD_AHEAD_H_
#define IRONTUNE_DAEMON_TUNE_BUILD_AHEAD_H_

#include <functional>
#include <map>
#include <vector>

#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/plan.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/tune_context.h"
#include "daemon/tune/tuned_profile.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// A run's shapes as BuildAhead reads them: by position in `order`
// (indices into `shapes`).
struct RunShapes {
  const std::vector<Shape>& shapes;
  const std::vector<size_t>& order;
  const v1::Calls& calls;  // the operators the members index
  const Platform& platform;
  const AutotuneOptions& options;
  const KernelCycles& cycles;
  const TunedProfile& profile;  // the incumbents
};

class BuildAhead {
 public:
  // Whether the budget lets the shape at a position begin (by the device
  // time so far and the planned times of the shapes before it).
  using ReachesFn = std::function<bool(int position)>;

  // `costs` are the shapes' planned costs (PlanShapes, by shape index);
  // `context` is the run's, whose cache tells the shapes searched before
  // (SearchedBefore: nothing is built ahead for them) and whose builder
  // drops the spare builds.
  BuildAhead(const RunShapes& run, const std::vector<ShapeCost>& costs,
             TuneContext& context, ReachesFn reaches);
  // Drops every spare build still queued (Builder::Unprefetch).
  ~BuildAhead();
  BuildAhead(const BuildAhead&) = delete;
  BuildAhead& operator=(const BuildAhead&) = delete;

  // The shape at `position` begins: queues its builds (Builder::Prefetch;
  // the list made for it as a shape ahead where there is one) and behind
  // them those of each shape after it not queued yet (QueueNext), up to
  // the last one the budget reaches, and behind all of them their spare
  // builds. Through `builder` (the lane's, so the shape's own builds
  // queue at its rank). The first call queues the shapes that start
  // together first, each at its own queue rank (Builder::PrefetchAt).
  // Returns whether the shape has builds of its own to wait for.
  bool Begin(int position, Builder& builder);

  // Queues the first builds of the shape after the last one queued behind
  // all else (Builder::PrefetchLater), keeping its other settings' for
  // QueueSpare, unless it is the last, the context is cancelled or the
  // budget would not reach it. Its position, or -1 where none was queued.
  // A search that waits for a build calls it.
  int QueueNext(Builder& builder);

  // Queues the other settings' builds kept for the shape at `position`
  // with time to spare (Builder::PrefetchSpare).
  void QueueSpare(int position, Builder& builder);

  // The search of the shape at `position` has ended: drops its spare
  // builds (Builder::Unprefetch).
  void Ended(int position);

  // Where the builds of the shape at `position` queue in the pool
  // (TurnBuilder's queue rank): the shapes that start together ranked
  // 1, 2, ... by planned device seconds per planned setting, most first;
  // every later shape its place in the order plus one.
  int QueueRank(int position) const { return queue_rank_[position]; }

 private:
  int total() const { return static_cast<int>(run_.order.size()); }
  // The builds the search of the shape at `position` will ask for first
  // (ShapeBuilds), and in `*rest` (may be null) those of its other
  // settings; none where the shape was searched before or they cannot be
  // told.
  std::vector<BuildRequest> BuildsOf(int position,
                                     std::vector<BuildRequest>* rest = nullptr);
  // Queues the first builds of each shape that starts with the run; returns
  // those after the first. REQUIRES: nothing queued yet.
  std::vector<int> QueueStart(Builder& builder);

  const RunShapes run_;
  TuneContext& context_;
  const ReachesFn reaches_;
  // By position: its queue rank (QueueRank).
  const std::vector<int> queue_rank_;
  // By shape index: searched before the run began.
  std::vector<bool> searched_before_;
  // The builds queued for later, by position, queued again first when the
  // shape begins.
  std::map<int, std::vector<BuildRequest>> ahead_;
  // The last position whose builds were queued (begun or ahead).
  int ahead_to_ = -1;
  // The builds queued with time to spare, by position, until the shape
  // ends.
  std::map<int, std::vector<BuildRequest>> spare_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_BUILD_AHEAD_H_
