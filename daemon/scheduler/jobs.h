// Jobs: one Autotune or Measure request from its submission to its result,
// with every event it produced.
//
// A Job is shared (std::shared_ptr) by the queue, the device worker and the
// gRPC handlers streaming its events; it is thread-safe. Its event log is
// kept whole in memory so Watch can replay it, and a condition variable
// wakes the streams when an event arrives or the job ends.
// Finished jobs are kept by JobStore (daemon/store/jobs_store.h). No gRPC
// here.
//
// Memory: a job holds its request, without its unknown fields (they are
// never read, so they are discarded as the job is made), only until it
// drops it: an Autotune once planned (the worker calls DropRequest), any
// job as it ends (Finish). Its request_bytes, the request's encoded size
// as it was received, are charged to the queue's budget meanwhile
// (queue_budget.h). Afterwards it holds its summary, result and event
// log, RetainedBytes.
#ifndef IRONTUNE_DAEMON_SCHEDULER_JOBS_H_
#define IRONTUNE_DAEMON_SCHEDULER_JOBS_H_

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/scheduler/queue_budget.h"
#include "daemon/store/jobs_store.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// Interactive jobs run before batch jobs; UNSPECIFIED means interactive.
v1::Priority NormalizePriority(v1::Priority priority);

// True for SUCCEEDED, FAILED, CANCELLED and INTERRUPTED.
bool IsTerminal(v1::JobState state);

// A fresh job id: "j-" and 16 hex digits, random, so ids stay unique across
// restarts.
std::string NewJobId();

class Job {
 public:
  using Request = std::variant<v1::AutotuneRequest, v1::MeasureRequest>;

  // What bounds a job's run: the client's deadline, and the device time it
  // may use. The worker stops it at its next round past either
  // (JobContext::cancelled).
  struct Bounds {
    absl::Time deadline = absl::InfiniteFuture();
    double device_seconds = std::numeric_limits<double>::infinity();
  };

  // Measures `request` (request_bytes), then discards its unknown fields.
  // REQUIRES: `request` has passed the service's validation.
  Job(std::string id, Request request, std::string client,
      v1::Priority priority, bool detach);
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  const std::string& id() const { return id_; }
  v1::JobKind kind() const { return kind_; }
  const std::string& client() const { return client_; }
  v1::Priority priority() const { return priority_; }  // normalized
  bool detached() const { return detach_; }
  // The request; null once the job has dropped it. Holders of the pointer
  // keep it alive (the worker, while it plans or runs the job).
  std::shared_ptr<const Request> request() const;
  // The request's encoded size as it was received, unknown fields
  // included; 0 once dropped.
  uint64_t request_bytes() const;
  // Holds `charge`, the queue budget's charge for request_bytes, until the
  // request is dropped. Set before the job is queued (by the service).
  void set_charge(QueueBudget::Charge charge);
  // Drops the request and releases its charge: the worker, once an
  // Autotune is planned and keeps what it needs of it (runner.h). Whoever
  // holds request()'s pointer keeps that copy until it lets it go.
  void DropRequest();

  // The admission's estimates and the run's bounds. Set before the job is
  // queued (by the service), read by the worker.
  void set_cost(uint64_t memory_bytes, double device_seconds);
  uint64_t memory_bytes() const { return memory_bytes_; }
  double estimated_device_seconds() const { return device_seconds_; }
  void set_bounds(Bounds bounds) { bounds_ = bounds; }
  const Bounds& bounds() const { return bounds_; }

  // Appends an event (its job_id is set here) and wakes the watchers.
  // Events of a terminal job are dropped.
  void Emit(v1::AutotuneEvent event);
  // Records the start: state RUNNING, a Started event.
  void MarkStarted();
  // Ends the job: SUCCEEDED with `result` when `status` is OK, else
  // CANCELLED (for Cancelled/DeadlineExceeded/Unavailable caused by
  // cancellation) or FAILED, keeping the error. An Autotune result is also
  // appended as the final event. Ignored when the job already ended.
  // Returns true when this call ended it.
  bool Finish(
      absl::Status status,
      std::variant<std::monostate, v1::AutotuneResult, v1::MeasureResult>
          result = std::monostate());

  // Asks the job to stop. A running job sees cancelled() at its next round;
  // the caller ends a queued one. `reason` becomes the error, with `code`
  // (Cancelled: a request or the client going away; DeadlineExceeded: the
  // client's deadline; ResourceExhausted: a limit). The job ends CANCELLED
  // for the first two, FAILED otherwise.
  void Cancel(std::string reason,
              absl::StatusCode code = absl::StatusCode::kCancelled);
  bool cancelled() const;
  std::string cancel_reason() const;
  // The status a cancelled job ends with: cancel_reason() under its code.
  absl::Status cancel_status() const;
  // Waits up to `timeout` for Cancel; true when cancelled.
  bool WaitCancelled(absl::Duration timeout) const;

  // The events from index `from` on, waiting up to `timeout` for one when
  // there are none yet and the job has not ended; once there is one, up to
  // `linger` more for those that follow (until the job ends), so that a
  // burst of events is taken at once. `done` is set when the job has ended
  // and every event has been returned.
  std::vector<v1::AutotuneEvent> EventsFrom(
      size_t from, absl::Duration timeout, bool* done,
      absl::Duration linger = absl::ZeroDuration()) const;

  v1::JobState state() const;
  absl::Status status() const;  // OK unless FAILED or CANCELLED
  void SetShapes(uint32_t done, uint32_t total);
  void SetStats(const v1::AutotuneStats& stats);
  v1::JobSummary Summary() const;
  // Summary plus the result; the result only once SUCCEEDED.
  v1::JobResult Result() const;
  // "3 events: queued 1, started 1, log 1" and the like.
  std::string EventsSummary() const;
  // What the JobStore keeps of this job.
  JobRecord Record() const;
  // About how many bytes the job holds (its request while it has one, its
  // events and result), for bounding the jobs kept in memory.
  size_t RetainedBytes() const;

 private:
  const std::string id_;
  const v1::JobKind kind_;
  const std::string client_;
  const v1::Priority priority_;
  const bool detach_;
  const int64_t submitted_ms_;
  // Set before the job is shared (queued), then only read.
  uint64_t memory_bytes_ = 0;
  double device_seconds_ = 0;
  Bounds bounds_;

  bool EndedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  mutable absl::CondVar changed_;  // an event, the end or a cancellation
  // Moves the request and its charge out, for the caller to let go of
  // once the lock is released.
  std::pair<std::shared_ptr<const Request>, QueueBudget::Charge>
  TakeRequestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::shared_ptr<const Request> request_ ABSL_GUARDED_BY(mu_);
  size_t request_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  QueueBudget::Charge charge_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::AutotuneEvent> events_ ABSL_GUARDED_BY(mu_);
  size_t event_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  v1::JobState state_ ABSL_GUARDED_BY(mu_) = v1::JOB_STATE_QUEUED;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::string cancel_reason_ ABSL_GUARDED_BY(mu_);
  absl::StatusCode cancel_code_ ABSL_GUARDED_BY(mu_) =
      absl::StatusCode::kCancelled;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int64_t started_ms_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t ended_ms_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t shapes_done_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t shapes_total_ ABSL_GUARDED_BY(mu_) = 0;
  v1::AutotuneStats stats_ ABSL_GUARDED_BY(mu_);
  std::optional<v1::AutotuneResult> autotune_result_ ABSL_GUARDED_BY(mu_);
  std::optional<v1::MeasureResult> measure_result_ ABSL_GUARDED_BY(mu_);
  // The wire size of the result kept, measured once when it is set.
  size_t result_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

using JobPtr = std::shared_ptr<Job>;

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_JOBS_H_
