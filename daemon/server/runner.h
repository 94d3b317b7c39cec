// The job runner seam: what the device worker calls to run one job.
//
// DeviceJobRunner runs Measure (daemon/tune/measure.h) and Autotune
// (daemon/tune/autotune.h) on the device. Tests substitute their own runner.
//
// Threads: a runner is called only on the device worker thread, one job at
// a time; it may use the device, the builder and the writing cache.
#ifndef IRONTUNE_DAEMON_SERVER_RUNNER_H_
#define IRONTUNE_DAEMON_SERVER_RUNNER_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

class Cache;

// What a running job may do besides the work itself.
class JobContext {
 public:
  virtual ~JobContext() = default;
  // Appends an event to the job's log (progress, log lines, trials).
  virtual void Emit(v1::AutotuneEvent event) = 0;
  // A log line, as an event.
  void Log(std::string text);
  // True once the job should stop; check at least once a round.
  virtual bool cancelled() = 0;
  // Sleeps up to `d`, returning early on cancellation (for waits while
  // another process holds the NPU).
  virtual void Sleep(absl::Duration d) = 0;
  // Runs the Measure jobs queued meanwhile (the worker's RunYielded). A
  // long job calls it between shapes. REQUIRES: called on the worker thread
  // from within the running job.
  virtual void Yield() = 0;
  // Counts for the job's summary and the end-of-job log line.
  virtual void SetShapes(uint32_t done, uint32_t total) = 0;
};

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  virtual absl::StatusOr<v1::AutotuneResult> RunAutotune(
      const v1::AutotuneRequest& request, JobContext& context) = 0;
  virtual absl::StatusOr<v1::MeasureResult> RunMeasure(
      const v1::MeasureRequest& request, JobContext& context) = 0;
};

// Runs jobs on a device. Device, builder and cache are not owned and must
// outlive the runner; cache may be null.
class DeviceJobRunner : public JobRunner {
 public:
  // `cycles_path`: mlir-aie nightly kernel cycles for bound skipping; empty
  // for none.
  DeviceJobRunner(Device* device, Builder* builder, Cache* cache,
                  std::string cycles_path = "")
      : device_(device),
        builder_(builder),
        cache_(cache),
        cycles_path_(std::move(cycles_path)) {}

  // Tunes the request's calls. Streams a progress event per shape and per
  // trial, a trial event per setting and the tuner's log lines; yields to
  // queued Measure jobs between shapes. Errors as irontune::Autotune.
  // REQUIRES: the calls passed ValidateRecording.
  absl::StatusOr<v1::AutotuneResult> RunAutotune(
      const v1::AutotuneRequest& request, JobContext& context) override;
  // Times the operator at its recorded setting, then at each v1::Setting (its
  // tunables applied over the recorded ones); deltas via AgainstDefault.
  // Errors as irontune::Measure. REQUIRES: ValidateMeasureRequest passed.
  absl::StatusOr<v1::MeasureResult> RunMeasure(
      const v1::MeasureRequest& request, JobContext& context) override;

 private:
  Device* device_;
  Builder* builder_;
  Cache* cache_;
  std::string cycles_path_;
};

// Checks what RunMeasure relies on: the operator validates as a recording's
// would, and every v1::Setting names tunables of the operator, each once, with
// a value. InvalidArgument naming the field path ("operator.buffers[1]...",
// "settings[2].tunables[0].name: ...").
absl::Status ValidateMeasureRequest(const v1::MeasureRequest& request);

// The operator at `setting`: the recorded tunables with the setting's
// values applied. REQUIRES: ValidateMeasureRequest passed.
v1::Operator ApplySetting(const v1::Operator& op, const v1::Setting& setting);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SERVER_RUNNER_H_
