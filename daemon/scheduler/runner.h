// The job runner seam: what the device worker calls to run a job's work.
//
// A Measure runs to its end in one call. An Autotune is started, then
// advanced one shape at a time (AutotuneSteps::Next), so that between
// shapes the worker decides what runs next: a queued Measure, a task, or
// the next shape. Nothing re-enters the worker from inside a job.
//
// DeviceJobRunner runs them through daemon/tune on the context's device;
// tests substitute their own runner.
//
// Threads: a runner and its AutotuneSteps are called only on the device
// worker thread.
#ifndef IRONTUNE_DAEMON_SCHEDULER_RUNNER_H_
#define IRONTUNE_DAEMON_SCHEDULER_RUNNER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/scheduler/job_context.h"
#include "daemon/tune/autotune_options.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// An Autotune in progress.
class AutotuneSteps {
 public:
  virtual ~AutotuneSteps() = default;
  virtual bool done() const = 0;
  // Searches the next shape. Errors end the job. REQUIRES: !done().
  virtual absl::Status Next() = 0;
  // The answer. REQUIRES: done().
  virtual v1::AutotuneResult Finish() = 0;
};

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // Plans an Autotune of `request`, which need only last the call: what is
  // returned keeps what it needs of it (DeviceJobRunner: the profile, the
  // options, the operators and each shape's inputs), so the worker drops
  // the request, its recording the bulk of it, once the job is planned.
  virtual absl::StatusOr<std::unique_ptr<AutotuneSteps>> StartAutotune(
      const v1::AutotuneRequest& request, JobContext& context) = 0;
  virtual absl::StatusOr<v1::MeasureResult> RunMeasure(
      const v1::MeasureRequest& request, JobContext& context) = 0;
};

// Runs jobs through daemon/tune: Autotune (tune/autotune.h), streaming
// shape progress, trials and the tuner's log lines; Measure
// (tune/measure.h): the operator at its recorded setting, then at each
// v1::Setting, deltas via AgainstDefault. Errors as those return.
// REQUIRES: requests passed ValidateAutotuneRequest /
// ValidateMeasureRequest (requests.h).
class DeviceJobRunner : public JobRunner {
 public:
  // `cycles_path`: mlir-aie nightly kernel cycles for bound skipping; empty
  // for none. `shapes_at_once`: AutotuneOptions.shapes_at_once.
  explicit DeviceJobRunner(std::string cycles_path = "",
                           int shapes_at_once = kShapesAtOnce)
      : cycles_path_(std::move(cycles_path)), shapes_at_once_(shapes_at_once) {}

  absl::StatusOr<std::unique_ptr<AutotuneSteps>> StartAutotune(
      const v1::AutotuneRequest& request, JobContext& context) override;
  absl::StatusOr<v1::MeasureResult> RunMeasure(
      const v1::MeasureRequest& request, JobContext& context) override;

 private:
  std::string cycles_path_;
  int shapes_at_once_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_RUNNER_H_
