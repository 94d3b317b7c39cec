// DeviceWorker: the one thread that owns the Device, the Builder and the
// writing Cache, and runs queued jobs on them one at a time.
//
// gRPC handlers never touch the device: they queue jobs (JobQueue) and read
// the snapshot Status() publishes. Work that must write the cache outside a
// job (ImportCache) is posted with RunOnWorker and runs between jobs.
//
// Each job's end is saved in the JobStore and logged (client, id, shapes,
// settings timed, device time, outcome).
//
// Lifetime: construct, Start(), then Stop() (also from the destructor).
// Stop closes the queue (queued jobs end UNAVAILABLE "irontuned is shutting
// down"), cancels the running job (it stops at its next round) and joins.
// Threads: Start/Stop from one thread; Status, RunOnWorker and
// CancelRunning from any thread.
#ifndef IRONTUNE_DAEMON_SERVER_WORKER_H_
#define IRONTUNE_DAEMON_SERVER_WORKER_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/server/job_queue.h"
#include "daemon/server/jobs.h"
#include "daemon/server/runner.h"
#include "daemon/store/cache.h"

namespace irontune {

struct WorkerParts {
  std::unique_ptr<Device> device;    // REQUIRES: non-null
  std::unique_ptr<Builder> builder;  // REQUIRES: non-null
  std::unique_ptr<Cache> cache;      // may be null (no cache)
  // Null: a DeviceJobRunner over the parts above.
  std::unique_ptr<JobRunner> runner;
  // The device's clock in microseconds, for the device time in logs and
  // stats (the sim's virtual clock); null when unknown.
  std::function<double()> device_clock_us;
};

// What GetStatus reports of the worker.
struct WorkerStatus {
  Platform platform;  // as of the last job (or start)
  JobPtr running;     // null when idle
  std::optional<CacheStats> cache;
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

  // Runs `task` on the worker thread between jobs and returns its status;
  // blocks the caller until then. Unavailable once stopping.
  absl::Status RunOnWorker(std::function<absl::Status(Cache*)> task);

  // Ends `job` (queued, already removed from the queue) as cancelled and
  // saves it. Any thread.
  void FinishUnrun(const JobPtr& job, absl::Status status);

 private:
  class Context;
  struct Task {
    std::function<absl::Status(Cache*)> fn;
    absl::Status result;
    bool done = false;
  };

  void Loop();
  void RunTasks();
  // Runs one job to its end. `yielded`: run from another job's Yield.
  void RunJob(const JobPtr& job, bool yielded);
  // Runs the queued Measure jobs (the Yield hook).
  void RunYielded();
  void Refresh();
  void Save(const Job& job);

  WorkerParts parts_;
  std::unique_ptr<JobRunner> default_runner_;
  JobRunner* runner_;
  JobQueue* const queue_;
  JobStore* const store_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  mutable absl::Mutex mu_;
  absl::CondVar task_done_;
  std::deque<std::shared_ptr<Task>> tasks_ ABSL_GUARDED_BY(mu_);
  Platform platform_ ABSL_GUARDED_BY(mu_);
  JobPtr running_ ABSL_GUARDED_BY(mu_);
  std::optional<CacheStats> cache_stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SERVER_WORKER_H_
