// CachedAnswers: answers the jobs whose every figure is stored without a
// turn of the device worker, on a small pool of threads of its own, beside
// whatever the worker runs (docs/operations.md, "Cached answers").
//
// The service offers it each Autotune and Measure job before queueing it
// (Offer). It declines a job that asks to remeasure, and any job while
// `waiting` jobs already wait for one of its threads or once it stops: the
// caller queues those for the worker as before. A job it takes waits in
// arrival order for one of `threads` threads; each thread has its own
// connection to the cache file (a Cache that cannot write:
// read_only_cache.h) and runs the job there through the same JobRunner
// code as the worker, against the cache-only parts (cache_only.h): a
// Device and a Builder that refuse, and a context that holds the job's
// events and shares the worker's CostKnowledge.
//
// An attempt that ends with its answer, having read each shape in one
// state (its CacheWrites version the same when its search began and when
// the attempt ended), ends the job: Queued{position 0}, Started, the
// events it held, then the result, as the worker's path streams them; the
// record saved and the end logged as the worker does it (job_end.h), with
// " (from the cache)". An attempt that read a shape across a change is
// tried again, up to kCachedTries times (the shapes that held are replayed
// from the shape memo). One that needed the device, would write to the
// cache (a ranked search keeping its rounds, refused by its connection),
// failed or kept reading across changes is dropped (its events with it)
// and the job is queued for the worker, the one writer (JobQueue::Push,
// which says Queued{position}); a Push the queue refuses ends the job with
// its error. The shape searches an attempt finished stay in the shape
// memo, under the pool's cache versions.
//
// Cancellation: a job cancelled (Job::Cancel, or past its deadline) stops
// at its attempt's next check and ends with its cancel status; one
// cancelled while it waits ends when a thread takes it. Stop ends the
// waiting jobs UNAVAILABLE "irontuned is shutting down", cancels those
// being answered and joins the threads.
//
// Threads: Offer, Snapshot, Alive and Stop from any thread; the runner is
// called from the pool's threads at once (DeviceJobRunner keeps nothing
// between calls). Ownership: owns its threads, connections and runner;
// `queue` and `store` are borrowed and outlive it (`store` may be null).
#ifndef IRONTUNE_DAEMON_SCHEDULER_CACHED_ANSWERS_H_
#define IRONTUNE_DAEMON_SCHEDULER_CACHED_ANSWERS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/npu/device.h"
#include "daemon/npu/platform.h"
#include "daemon/scheduler/cache_writes.h"
#include "daemon/scheduler/job_queue.h"
#include "daemon/scheduler/jobs.h"
#include "daemon/scheduler/runner.h"
#include "daemon/store/cache.h"
#include "daemon/store/jobs_store.h"
#include "daemon/tune/cost_model.h"

namespace irontune {

// --cached-answers' default: threads answering from the cache at once.
inline constexpr int kCachedAnswerThreads = 2;
// Attempts at one job while commits keep coming under it.
inline constexpr int kCachedTries = 3;

struct CachedAnswersOptions {
  int threads = kCachedAnswerThreads;  // REQUIRES: >= 1
  size_t waiting = 64;                 // jobs waiting for a thread, at most
  // The cache file and the partition the worker's Cache is bound to.
  std::string cache_path;
  std::string cache_platform;
  PowerMode cache_power_mode = PowerMode::kDefault;
  // The platform as the worker last read it (WorkerStatus::platform); any
  // thread.
  std::function<Platform()> platform;
  // A count that moves each time the worker runs a task that may remove
  // or replace verdicts (DeviceWorker::tasks_run); a thread reopens its
  // connection when it has moved, so no verdict it remembers is stale.
  // Null: never reopened.
  std::function<uint64_t()> rewrites;
  // What the worker may be rewriting (cache_writes.h). REQUIRES: non-null;
  // not owned, outlives the pool.
  CacheWrites* writes = nullptr;
  StackVersions stack;
  // What the worker's searches learned of step times (thread-safe; not
  // owned, outlives the pool), shared so a search learns and ranks here as
  // it would there; null: none.
  CostKnowledge* costs = nullptr;
  // The worker's Builder's Environment() and ChecksFit().
  std::string builder_environment;
  bool checks_fit = false;
  // The worker's build pool's threads, for an Autotune's BuildStats
  // (nothing built: zeros); nullopt where the worker has no pool.
  std::optional<int> build_jobs;
};

class CachedAnswers {
 public:
  // REQUIRES: `runner` non-null.
  CachedAnswers(CachedAnswersOptions options, std::unique_ptr<JobRunner> runner,
                JobQueue* queue, JobStore* store);
  ~CachedAnswers();  // Stop()
  CachedAnswers(const CachedAnswers&) = delete;
  CachedAnswers& operator=(const CachedAnswers&) = delete;

  // Opens each thread's connection and starts the threads. Errors: the
  // cache's.
  absl::Status Start();
  void Stop();

  // Takes `job` (made, charged and remembered by the caller, not queued)
  // to answer; false when it declines, and the caller queues the job.
  bool Offer(const JobPtr& job);
  // The jobs taken and not ended: those being answered, then those
  // waiting, in the order taken.
  std::vector<JobPtr> Snapshot() const;
  // False while an attempt has run longer than `stall`.
  bool Alive(absl::Duration stall) const;

  // What the pool did since Start.
  struct Counts {
    uint64_t answered = 0;     // ended with their answer
    uint64_t handed_over = 0;  // queued for the worker
    uint64_t retried = 0;      // attempts tried again after a commit
  };
  Counts counts() const;
  // The figures its threads' connections looked up, found and not, since
  // Start (counted as each answer ends, at most every kCountLookupsEvery
  // a thread): GetStatus adds them to the worker's.
  std::pair<int64_t, int64_t> lookups() const;
  static constexpr absl::Duration kCountLookupsEvery = absl::Seconds(1);

 private:
  // A thread's own read connection.
  struct Reader {
    int thread = 0;
    std::unique_ptr<Cache> cache;
    uint64_t rewrites = 0;  // options.rewrites() when it was opened
    absl::Time counted = absl::InfinitePast();  // lookups last counted
  };
  // A thread's cache lookups: its connections' before this one, and this
  // one's as last counted.
  struct Lookups {
    int64_t hits = 0, misses = 0;
    int64_t closed_hits = 0, closed_misses = 0;
  };
  enum class Outcome { kAnswered, kEnded, kChanged, kWorker };
  struct Attempt;

  static bool Eligible(const Job& job);
  absl::StatusOr<std::unique_ptr<Cache>> OpenCache() const;
  void Loop(Reader reader);
  // The next job taken; null once stopping.
  JobPtr Next(int thread) ABSL_LOCKS_EXCLUDED(mu_);
  void Done(int thread) ABSL_LOCKS_EXCLUDED(mu_);
  // Answers `job` or hands it over.
  void Answer(Reader& reader, const JobPtr& job);
  // One attempt; `why` says why it did not answer.
  Outcome Try(Reader& reader, const JobPtr& job, const Job::Request& request,
              std::string& why);
  // Reopens `reader`'s connection where the worker has rewritten the file.
  void Refresh(Reader& reader);
  // Ends `job` with the attempt's answer.
  void Commit(Reader& reader, const JobPtr& job, Attempt& attempt);
  // Counts `reader`'s lookups (Cache::Stats), unless it did so lately;
  // with `closing`, for the last time.
  void CountLookups(Reader& reader, bool closing);
  void HandOver(const JobPtr& job, const std::string& why);
  // Ends `job`, which never ran, with `status`.
  void EndUnrun(const JobPtr& job, absl::Status status);

  const CachedAnswersOptions options_;
  const std::unique_ptr<JobRunner> runner_;
  JobQueue* const queue_;
  JobStore* const store_;
  std::vector<std::thread> threads_;

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<JobPtr> waiting_ ABSL_GUARDED_BY(mu_);
  // By thread: the job it answers and since when.
  std::map<int, std::pair<JobPtr, absl::Time>> busy_ ABSL_GUARDED_BY(mu_);
  Counts counts_ ABSL_GUARDED_BY(mu_);
  std::map<int, Lookups> lookups_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_CACHED_ANSWERS_H_
