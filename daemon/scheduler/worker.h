// DeviceWorker: the one thread that owns the Device, the Builder and the
// writing Cache, and schedules the work on them. The Builder is irontuned's
// BuildPool (daemon/builder/build_pool.h), whose own threads build ahead; the
// worker beats its heartbeat while it waits for a build.
//
// gRPC handlers never touch the device: they queue jobs (JobQueue) and read
// the snapshot Status() publishes. Work that must write the cache outside a
// job (ImportCache) is posted with RunOnWorker.
//
// The loop: run posted tasks; while an Autotune is under way, run a queued
// Measure job if there is one, else the Autotune's next shape; otherwise
// take the next job from the queue (blocking). A Measure runs to its end;
// an Autotune is started and then advanced one shape per turn of the loop,
// so a long one lets Measure jobs and tasks through between its shapes.
//
// Each job is saved in the JobStore when it starts, after each of an
// Autotune's shapes and when it ends, and logged (client, id, shapes,
// settings timed, device time, outcome); so a job the daemon dies under is
// found INTERRUPTED, with its progress, at the next start
// (JobStore::MarkInterrupted). A job whose record cannot be saved for a
// full disk fails with ResourceExhausted "no space left in STATE_DIR".
//
// Memory: a job's estimate is reserved while it runs (WorkerParts::
// memory_limit_bytes). An Autotune's request is dropped once it is planned
// (Job::DropRequest; the runner keeps what it needs), a Measure's as it
// ends.
//
// Lifetime: construct, Start(), then Stop() (also from the destructor).
// Stop closes the queue (queued jobs end UNAVAILABLE "irontuned is shutting
// down"), cancels the running jobs (they stop at their next round) and
// joins. Threads: Start/Stop from one thread; Status, RunOnWorker and
// FinishUnrun from any thread.
#ifndef IRONTUNE_DAEMON_SCHEDULER_WORKER_H_
#define IRONTUNE_DAEMON_SCHEDULER_WORKER_H_

#include <atomic>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/builder/build_pool.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/scheduler/cache_writes.h"
#include "daemon/scheduler/heartbeat.h"
#include "daemon/scheduler/job_queue.h"
#include "daemon/scheduler/jobs.h"
#include "daemon/scheduler/runner.h"
#include "daemon/store/cache.h"
#include "daemon/store/jobs_store.h"
#include "daemon/tune/cost_model.h"

namespace irontune {

struct WorkerParts {
  std::unique_ptr<Device> device;    // REQUIRES: non-null
  std::unique_ptr<Builder> builder;  // REQUIRES: non-null
  std::unique_ptr<Cache> cache;      // may be null (no cache)
  // Null: a DeviceJobRunner without kernel cycles.
  std::unique_ptr<JobRunner> runner;
  // The build pool's figures so far (BuildPool::stats) and its threads,
  // for each job's BuildStats, its end log line and GetStatus; null when
  // the builder is no BuildPool.
  std::function<BuildPoolStats()> build_stats;
  int build_jobs = 0;
  // Where the worker says which shapes' stored rows it may be rewriting
  // (cache_writes.h), for the readers beside it; null: nobody asks. Not
  // owned; outlives the worker.
  CacheWrites* writes = nullptr;
  // What the running jobs' memory estimates (Job::memory_bytes) may add up
  // to. A job starts only when its estimate fits beside those running; a
  // Measure that does not fit beside an Autotune under way waits for it.
  uint64_t memory_limit_bytes = std::numeric_limits<uint64_t>::max();
};

// What GetStatus reports of the worker.
struct WorkerStatus {
  Platform platform;  // as of the last job (or start)
  JobPtr running;     // null when idle
  std::optional<CacheStats> cache;
  uint64_t reserved_bytes = 0;  // the running jobs' memory estimates
  // The build pool's work since the start; unset without a pool.
  std::optional<v1::BuildStats> builds;
};

class DeviceWorker {
 public:
  // `queue` and `store` are not owned and must outlive the worker; `store`
  // may be null (nothing persisted).
  DeviceWorker(WorkerParts parts, JobQueue* queue, JobStore* store);
  ~DeviceWorker();
  DeviceWorker(const DeviceWorker&) = delete;
  DeviceWorker& operator=(const DeviceWorker&) = delete;

  // Reads the platform and starts the thread. Errors: the device's.
  absl::Status Start();
  void Stop();

  WorkerStatus Status() const;
  // The worker thread's liveness (beats at every loop turn, task and
  // device call); any thread.
  const Heartbeat& heartbeat() const { return heartbeat_; }

  // Runs `task` on the worker thread between jobs (or between an
  // Autotune's shapes) and returns its status; blocks the caller until
  // then. Unavailable once stopping.
  absl::Status RunOnWorker(std::function<absl::Status(Cache*)> task);

  // What every job's searches learned of step times, for the daemon's
  // life; thread-safe (cost_model.h), so the cached answers share it.
  CostKnowledge& costs() { return costs_; }

  // How many posted tasks (RunOnWorker) have run. Each may rewrite the
  // cache (an import, a drop, a clear), so a reader beside the worker that
  // remembers verdicts reopens when it moves (cached_answers.h). Any
  // thread.
  uint64_t tasks_run() const { return tasks_run_.load(); }

  // Ends `job` (queued, already removed from the queue) as cancelled and
  // saves it. Any thread.
  void FinishUnrun(const JobPtr& job, absl::Status status);

 private:
  struct Task {
    std::function<absl::Status(Cache*)> fn;
    absl::Status result;
    bool done = false;
  };
  // A job under way on the worker: its context, and for an Autotune its
  // steps.
  struct Running;

  void Loop();
  // Idle: hands memory the allocator keeps from ended jobs back to the
  // system (glibc's malloc_trim; nothing elsewhere) once the process's
  // resident memory has grown by kTrimGrowthBytes since the last trim.
  void ReturnFreedMemory();
  static constexpr size_t kTrimGrowthBytes = size_t{64} << 20;
  // queue_->Pop(), with the heartbeat waiting meanwhile.
  JobPtr PopWaiting();
  void RunTasks();
  // Starts `job`: a Measure runs to its end; an Autotune becomes autotune_.
  void Begin(const JobPtr& job);
  void RunMeasure(const JobPtr& job);
  // Advances autotune_ by one shape, ending it when done or failed.
  void Advance();
  std::unique_ptr<Running> Open(const JobPtr& job);
  // Ends a job that ran, with `status` and its result.
  void End(Running& run, absl::Status status,
           std::variant<std::monostate, v1::AutotuneResult, v1::MeasureResult>
               result);
  void SetRunning(JobPtr job);
  void Refresh();
  // The pool's work since `run` started; nullopt without a pool.
  std::optional<v1::BuildStats> JobBuilds(const Running& run) const;
  // Logs `job`'s builds and the utilisation bound they leave.
  static void LogBuilds(const Job& job, const v1::BuildStats& builds,
                        double device_s, double wall_s);
  // Saves `job`'s record; the store's error, which is also logged.
  absl::Status Save(const Job& job);
  // Whether `job`'s memory estimate fits beside the running jobs'.
  bool Fits(const Job& job) const ABSL_LOCKS_EXCLUDED(mu_);
  void Reserve(const Job& job, bool take) ABSL_LOCKS_EXCLUDED(mu_);

  Heartbeat heartbeat_;  // before parts_: the device beats it
  WorkerParts parts_;
  std::unique_ptr<JobRunner> default_runner_;
  JobRunner* runner_;
  JobQueue* const queue_;
  JobStore* const store_;
  // What every job's searches learned of step times (tune/cost_model.h),
  // for the daemon's life; thread-safe.
  CostKnowledge costs_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> tasks_run_{0};
  // Worker thread only: the Autotune under way, if any.
  std::unique_ptr<Running> autotune_;
  // Worker thread only: the process's resident bytes after the last trim.
  size_t resident_after_trim_ = 0;

  mutable absl::Mutex mu_;
  absl::CondVar task_done_;
  std::deque<std::shared_ptr<Task>> tasks_ ABSL_GUARDED_BY(mu_);
  Platform platform_ ABSL_GUARDED_BY(mu_);
  // The job on the device now; an Autotune under way besides it.
  JobPtr running_ ABSL_GUARDED_BY(mu_);
  JobPtr autotune_job_ ABSL_GUARDED_BY(mu_);
  std::optional<CacheStats> cache_stats_ ABSL_GUARDED_BY(mu_);
  uint64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_WORKER_H_
