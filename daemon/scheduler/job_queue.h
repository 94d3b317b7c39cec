// JobQueue: the jobs waiting for the device worker.
//
// Rules, in order:
//   1. Bounded: Push fails with ResourceExhausted when `limit` jobs wait,
//      or when the job's client has `client_quota` jobs waiting.
//   2. Priority: every interactive job runs before any batch job.
//   3. Fairness: within a priority, clients take turns (round robin in the
//      order they first queued); a client's own jobs run in FIFO order.
//   4. Yielding: between an Autotune's shapes the worker takes queued
//      Measure jobs first (TakeMeasure), so a quick Measure does not wait
//      hours behind it.
//   5. Shared measurements: two queued jobs needing the same measurement
//      share it through the cache, since the second runs after the first
//      and finds the figure there (unless it asked to remeasure). Nothing
//      here deduplicates.
//
// Threads: every method is thread-safe. Pop blocks the caller (the worker)
// until a job arrives, Wake is called or the queue closes.
// No gRPC here.
#ifndef IRONTUNE_DAEMON_SCHEDULER_JOB_QUEUE_H_
#define IRONTUNE_DAEMON_SCHEDULER_JOB_QUEUE_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/scheduler/jobs.h"

namespace irontune {

class JobQueue {
 public:
  // REQUIRES: limit > 0. `client_quota` 0: no quota beyond `limit`.
  explicit JobQueue(size_t limit, size_t client_quota = 0);
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // Queues `job` (REQUIRES: non-null, not queued already), appends its
  // Queued{position} event before any Pop can hand it out, and returns the
  // position (0: next to run). ResourceExhausted when full; Unavailable
  // once closed.
  absl::StatusOr<size_t> Push(JobPtr job);
  // The next job by the rules above; blocks while the queue is empty.
  // Returns null when the queue is closed or Wake was called.
  JobPtr Pop();
  // Non-blocking Pop; null when empty.
  JobPtr TryPop();
  // The first queued Measure job in run order for which `eligible` holds,
  // removed; null when none. `eligible` runs under the queue's lock: it
  // must not call back into the queue.
  JobPtr TakeMeasure(const std::function<bool(const Job&)>& eligible = nullptr);
  // Removes the job `id`; null when it is not queued.
  JobPtr Remove(const std::string& id);
  // Makes one blocked (or the next) Pop return null, so the worker can do
  // other work (e.g. a cache import).
  void Wake();
  // Refuses further Pushes and returns every queued job, in run order.
  std::vector<JobPtr> Close();

  // The queued jobs in the order they would run.
  std::vector<JobPtr> Snapshot() const;
  // The job's position in that order; nullopt when not queued.
  std::optional<size_t> Position(const std::string& id) const;
  size_t size() const;
  size_t limit() const { return limit_; }

 private:
  // One priority's jobs: per-client FIFOs and the clients' turn order.
  struct Lane {
    std::list<std::string> turns;  // clients with queued jobs; front next
    std::map<std::string, std::deque<JobPtr>> fifo;
  };

  JobPtr PopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<JobPtr> OrderLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool RemoveLocked(const JobPtr& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t limit_;
  const size_t client_quota_;
  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  std::map<int, Lane> lanes_ ABSL_GUARDED_BY(mu_);  // by v1::Priority value
  size_t size_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int wakes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_JOB_QUEUE_H_
