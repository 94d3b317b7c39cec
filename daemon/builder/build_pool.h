// BuildPool: a Builder in front of another that builds ahead on a pool of
// threads, merges builds of one request while they run, and remembers what
// was built.
//
// - Prefetch(request) queues a build and returns at once; a pool thread
//   takes it (first queued, first built; PrefetchAt queues by rank, lower
//   ranks first). The method prefetches the designs
//   of the batches after the one on the device, so the device does not wait
//   for a build (daemon/tune/measure.h).
// - PrefetchLater(request) queues a build on a second, lower queue, taken
//   only when the first is empty and while the outcomes remembered hold
//   under half of `memory_bytes` (so building ahead does not push out what
//   the work under way still needs). AutotuneRun queues the next shape's
//   designs there while one shape is searched (daemon/tune/autotune.h). A
//   Prefetch of a build queued there moves it to the first queue's back.
// - PrefetchSpare(request) queues a build on a third, lowest queue: taken
//   only when the other two are empty, under the same memory bound, and by
//   at most SpareThreads() threads at a time: all but one of a small pool,
//   so one is always free for a build someone asks for; every one of a
//   pool of kSpareOnEveryThread threads or more, where a build asked for
//   waits at most for the first of them to end. AutotuneRun queues there the
//   rest of each later shape's settings (daemon/tune/autotune.h). Unprefetch
//   drops such a build while it waits. A Prefetch, PrefetchLater, Build or
//   Await of it moves it up.
// - Build(request) answers from memory when the request was built before,
//   waits for it when it is being built (by a pool thread or another
//   caller: one build of a request at a time, its outcome shared with every
//   caller), and otherwise builds it: on a pool thread, ahead of both
//   queues (taken from either where it waits there), when there are
//   threads, else on the caller's.
// - Await(request, cancelled) is Build that gives up with Cancelled once
//   `cancelled()` turns true (looked at every 20 ms): the build goes on in
//   the pool and is remembered, so cancelling a job does not wait for it.
//
// What is remembered: each request's outcome (artifact or refusal) by
// RequestKey, the least recently used forgotten once their artifacts'
// payloads pass `memory_bytes`. A refusal is a verdict and remembered like
// an artifact; an error Status is handed to the callers waiting for that
// build and then forgotten, so the next Build tries again. The inner
// builder's own store (the ArtifactStore of a CommandBuilder) keeps
// artifacts across restarts; this pool only saves asking it again.
//
// The pool's threads are helper threads (daemon/base/thread_roles.h): nice
// +10 and off the device's timing CPUs, as are the build commands they
// start, so a build never holds the CPU the device is timed on.
//
// Threads: every method may be called from any thread. The inner builder
// is called from the pool's threads and from callers of Build at once, up
// to threads + callers calls at a time. REQUIRES: the inner builder is
// thread-safe (SimBuilder and CommandBuilder are). The destructor drops the
// queued builds and joins the threads, waiting for the builds they run.
#ifndef IRONTUNE_DAEMON_BUILDER_BUILD_POOL_H_
#define IRONTUNE_DAEMON_BUILDER_BUILD_POOL_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/npu/builder.h"

namespace irontune {

struct BuildPoolOptions {
  // Builder threads; 0 builds on the caller's thread and Prefetch does
  // nothing (the pool is off).
  int threads = 0;
  // The payload bytes of the outcomes remembered; 0 remembers none.
  uint64_t memory_bytes = 256ull << 20;
  // Whether PrefetchSpare builds anything (irontuned --no-build-spare: no).
  bool spare = true;
};

// What the pool did since it was made. A request's kind is its steps: 1
// (a 1-step design) or more (a many-step one).
struct BuildPoolStats {
  int64_t builds = 0;         // inner builds run
  int64_t prefetched = 0;     // of those, queued by Prefetch or PrefetchLater
  int64_t later = 0;          // of those, taken from PrefetchLater's queue
  int64_t spare = 0;          // of those, taken from PrefetchSpare's queue
  int64_t remembered = 0;     // Build calls answered from memory
  int64_t merged = 0;         // Build calls that waited for a running build
  double build_seconds = 0;   // wall time inside the inner builder, summed
  double waited_seconds = 0;  // wall time Build callers waited, summed
  // Of that, waits for a build not queued before it was waited for (the
  // caller asked first), and for one queued ahead that no thread had
  // started yet (the pool was busy); the rest waited for running builds.
  double waited_unqueued_seconds = 0;
  double waited_queued_seconds = 0;
  // Requests asked (queued or waited for; not Fit checks; one asked again
  // after it was forgotten counts again), by kind.
  int64_t asked_one_step = 0;
  int64_t asked_many_step = 0;
  // Of those, requests a caller waited for (Build, Await): the rest were
  // only ever queued ahead and, where built, built for nothing so far.
  int64_t needed = 0;
  // Inner builds run, by kind (their sum is `builds`).
  int64_t built_one_step = 0;
  int64_t built_many_step = 0;
  // Fit calls answered by the inner builder's Fit, and the wall time spent
  // in them; Fit calls answered by a build are counted as builds.
  int64_t fit_checks = 0;
  double fit_seconds = 0;
};

// What the pool did between the snapshots `before` and `after` (each
// field's difference).
BuildPoolStats StatsSince(const BuildPoolStats& after,
                          const BuildPoolStats& before);

// From this many threads on, builds with time to spare may take every
// thread. A thread kept free would idle an eighth of the pool or more
// while the spare queue has work; a build asked for instead waits for the
// first of eight or more running builds to end, on average an eighth of
// a build or less (docs/operations.md, "Builds").
inline constexpr int kSpareOnEveryThread = 8;

class BuildPool : public Builder {
 public:
  // `inner` is not owned and must outlive the pool.
  BuildPool(Builder* inner, BuildPoolOptions options);
  // The pool owns `inner`. REQUIRES: non-null.
  BuildPool(std::unique_ptr<Builder> inner, BuildPoolOptions options);
  ~BuildPool() override;
  BuildPool(const BuildPool&) = delete;
  BuildPool& operator=(const BuildPool&) = delete;

  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override;
  absl::StatusOr<BuildOutcome> Await(
      const BuildRequest& request,
      const std::function<bool()>& cancelled) override;
  // Where the inner builder ChecksFit: the outcome remembered, else the
  // inner builder's Fit on the caller's thread (counted in fit_checks;
  // nothing remembered: the cache keeps verdicts). Otherwise Builder::Fit
  // (a Build through the pool).
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override;
  bool ChecksFit() const override { return inner_->ChecksFit(); }
  // Its outcome kept, or the inner builder's Ready.
  bool Ready(const BuildRequest& request) override;
  void Prefetch(const BuildRequest& request) override;
  void PrefetchAt(const BuildRequest& request, int rank) override;
  void PrefetchLater(const BuildRequest& request) override;
  void PrefetchSpare(const BuildRequest& request) override;
  void Unprefetch(const BuildRequest& request) override;
  // Drops the queued builds, stops prefetching and stops the inner builder
  // (so running builds end with Cancelled); later builds run on the
  // caller's thread and meet the stopped inner builder.
  void Stop() override;
  std::string Environment() const override { return inner_->Environment(); }

  BuildPoolStats stats() const;
  int threads() const { return options_.threads; }
  // The most threads building from PrefetchSpare's queue at once: every
  // thread from kSpareOnEveryThread on, else all but one (so none with one
  // thread); none without options.spare.
  int SpareThreads() const {
    if (!options_.spare) return 0;
    return options_.threads >= kSpareOnEveryThread
               ? options_.threads
               : std::max(0, options_.threads - 1);
  }
  Builder& inner() { return *inner_; }

 private:
  // A place in a queue: rank (in queue_; 0 in the others), then the order
  // queued. Each queue is ordered by it, so a build leaves its queue in
  // log time wherever it is.
  using Slot = std::pair<int64_t, uint64_t>;
  // Await's rank: ahead of every Prefetch.
  static constexpr int64_t kAwaitedRank = std::numeric_limits<int64_t>::min();

  // The queue an entry waits in: queue_, later_ or spare_, highest first.
  enum class Tier { kNow, kLater, kSpare };

  struct Entry {
    BuildRequest request;
    bool queued = false;     // waiting for a pool thread
    Tier tier = Tier::kNow;  // of those, the queue it is in
    Slot slot;               // where in its queue
    bool running = false;    // being built
    bool spare = false;      // of those, taken from spare_
    bool done = false;
    bool prefetched = false;
    bool wanted = false;  // a caller has waited for it (stats_.needed)
    absl::StatusOr<BuildOutcome> outcome = BuildOutcome{};
    uint64_t bytes = 0;
    std::list<std::string>::iterator lru;  // valid once done and kept
  };

  // Stops the pool's threads taking builds, and forgets the queue.
  void DropQueue() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs queued builds until the pool stops.
  void Loop();
  // Whether a pool thread has a build to take: from queue_, else from
  // later_ while the outcomes kept are under half the memory cap, else
  // from spare_ as well while fewer than SpareThreads() build from it.
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the key of the next build HasWork found out of its queue.
  std::string NextWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `key`'s request (made for `request` when new) in queue_ at
  // `rank`, or at the back of later_ or spare_; moves it up where it
  // waits in a lower queue, or in queue_ at a higher rank; nothing where
  // it is queued as high already, running or remembered.
  void Enqueue(const std::string& key, const BuildRequest& request, Tier tier,
               int64_t rank = 0) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Enqueue under the lock, unless the pool is stopping. REQUIRES: threads.
  void Place(const BuildRequest& request, Tier tier, int64_t rank = 0)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Takes `key` out of the queue it waits in. REQUIRES: it is queued.
  void Unqueue(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Builds `key`'s request with the inner builder (without the lock) and
  // publishes its outcome.
  void RunBuild(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The entry of `key`, made for `request` when there is none.
  Entry& EntryFor(const std::string& key, const BuildRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands out a finished entry's outcome; forgets an error.
  absl::StatusOr<BuildOutcome> Take(const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds the wait since `start` to waited_seconds and to `*as` (may be
  // null: a wait for a running build).
  void AddWait(absl::Time start, double* as) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the least recently used outcomes beyond the memory cap.
  void Evict() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::unique_ptr<Builder> owned_;  // null when `inner_` is borrowed
  Builder* const inner_;
  const BuildPoolOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  using Queue = std::map<Slot, std::string>;
  // The queue of `tier`.
  Queue& QueueOf(Tier tier) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Queue queue_ ABSL_GUARDED_BY(mu_);  // Prefetch's, PrefetchAt's, Await's
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;         // slots handed out
  Queue later_ ABSL_GUARDED_BY(mu_);                 // PrefetchLater's
  Queue spare_ ABSL_GUARDED_BY(mu_);                 // PrefetchSpare's
  int spare_running_ ABSL_GUARDED_BY(mu_) = 0;       // builds taken from spare_
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // most recent first
  uint64_t kept_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  BuildPoolStats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BUILDER_BUILD_POOL_H_
