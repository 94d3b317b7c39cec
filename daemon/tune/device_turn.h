// DeviceTurn: which of several threads that share one TuneContext (its
// Device, Builder, Cache and progress) may run now. A thread runs only
// while it holds the turn, and gives it up only where it would otherwise
// wait for the builder (TurnBuilder), so at most one thread ever uses the
// context and the device is never shared within a timing.
//
// Ranks order the waiters: the turn, once free, goes to the waiting
// thread of lowest rank. AutotuneRun ranks the thread that runs it
// (irontuned's device worker) first and each shape's search by its place
// in the tune order, so an earlier shape runs whenever it can and a later
// one fills the device's time only while those before it wait for builds.
//
// Threads: Take and Give from any thread. REQUIRES: a thread gives only a
// turn it holds.
#ifndef IRONTUNE_DAEMON_TUNE_DEVICE_TURN_H_
#define IRONTUNE_DAEMON_TUNE_DEVICE_TURN_H_

#include <functional>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/npu/builder.h"

namespace irontune {

class DeviceTurn {
 public:
  // Blocks until the turn is free and no thread of a lower rank waits for
  // it, then holds it.
  void Take(int rank) ABSL_LOCKS_EXCLUDED(mu_);
  // Take in two parts: Queue counts a waiter of `rank` from now on (so one
  // thread can queue another before that one starts); TakeQueued blocks as
  // Take does. REQUIRES: one TakeQueued(rank) for each Queue(rank).
  void Queue(int rank) ABSL_LOCKS_EXCLUDED(mu_);
  void TakeQueued(int rank) ABSL_LOCKS_EXCLUDED(mu_);
  void Give() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether some thread holds the turn now.
  bool held() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a thread of a lower rank than `rank` waits for the turn.
  bool Outranked(int rank) const ABSL_LOCKS_EXCLUDED(mu_);

  // Wall seconds so far in which the turn was free and nobody waited for
  // it: every thread that shares it was waiting for the builder (or had
  // ended), so the device was idle.
  double idle_seconds() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Ends an idle spell, if one is under way, as of `now`.
  void EndIdle(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  std::multiset<int> waiting_ ABSL_GUARDED_BY(mu_);
  // Since when the turn is free with nobody waiting; InfinitePast: it is
  // not.
  absl::Time idle_since_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration idle_ ABSL_GUARDED_BY(mu_);
};

// Holds `turn` for its life at `rank`.
class TurnHeld {
 public:
  TurnHeld(DeviceTurn& turn, int rank) : turn_(turn) { turn_.Take(rank); }
  ~TurnHeld() { turn_.Give(); }
  TurnHeld(const TurnHeld&) = delete;
  TurnHeld& operator=(const TurnHeld&) = delete;

 private:
  DeviceTurn& turn_;
};

// A Builder whose caller holds `turn` at `rank` and gives it up while it
// waits in Build, Await or Fit for a request that is not ready
// (Builder::Ready), or for any request while a thread of a lower rank
// waits for the turn (so an earlier shape whose builds are done goes on
// within a batch of a later one), taking it back before it returns; its
// Prefetch queues at `queue_rank` (Builder::PrefetchAt; AutotuneRun gives
// each shape its place in the order, but for the shapes that start
// together: autotune.h). `target` and `turn` are not owned and must
// outlive the wrapper. Threads: the caller's, holding the turn.
class TurnBuilder : public BuilderWrapper {
 public:
  TurnBuilder(Builder* target, DeviceTurn* turn, int rank, int queue_rank)
      : BuilderWrapper(target),
        turn_(*turn),
        rank_(rank),
        queue_rank_(queue_rank) {}

  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override;
  absl::StatusOr<BuildOutcome> Await(
      const BuildRequest& request,
      const std::function<bool()>& cancelled) override;
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override;
  // Queued at the wrapper's queue rank (Builder::PrefetchAt).
  void Prefetch(const BuildRequest& request) override {
    target().PrefetchAt(request, queue_rank_);
  }
  // Called, holding the turn, each time before the turn is given up.
  void OnYield(std::function<void()> before) {
    before_yield_ = std::move(before);
  }

 private:
  // Whether a call about `request` gives the turn up (above).
  bool Due(const BuildRequest& request);
  // Runs `wait` without the turn where `yield`, else holding it.
  template <typename T>
  T Waiting(bool yield, const std::function<T()>& wait);

  DeviceTurn& turn_;
  const int rank_;
  const int queue_rank_;
  std::function<void()> before_yield_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_DEVICE_TURN_H_
