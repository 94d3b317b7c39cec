// MeteredDevice: a DeviceWrapper that adds up the device time of every run
// of the images loaded through it; MeteredBuilder: a Builder that adds up
// the wall time its caller spent waiting for builds. For job statistics
// and benchmarks: where a job's wall time went.
//
// Threads: as the Device and Builder seams (one thread at a time, but
// Builder::Stop from any); the figures are read on that thread too.
#ifndef IRONTUNE_DAEMON_NPU_METERED_H_
#define IRONTUNE_DAEMON_NPU_METERED_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"

namespace irontune {

class MeteredDevice : public DeviceWrapper {
 public:
  // `target` is not owned and must outlive the wrapper and its images.
  explicit MeteredDevice(Device* target) : DeviceWrapper(target) {}

  // Elapsed microseconds summed over every successful run so far.
  double device_us() const { return device_us_; }
  int64_t runs() const { return runs_; }

 protected:
  std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                   const Artifact& artifact) override;

 private:
  class MeteredImage;
  double device_us_ = 0;
  int64_t runs_ = 0;
};

class MeteredBuilder : public BuilderWrapper {
 public:
  // `target` is not owned and must outlive the wrapper; `now` is the
  // clock the waits are read from.
  explicit MeteredBuilder(Builder* target,
                          std::function<absl::Time()> now = absl::Now)
      : BuilderWrapper(target), now_(std::move(now)) {}

  // Seconds spent in Build, Await and Fit so far: the caller waited for
  // them.
  double waited_seconds() const { return waited_seconds_; }

  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override;
  absl::StatusOr<BuildOutcome> Await(
      const BuildRequest& request,
      const std::function<bool()>& cancelled) override;
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override;

 private:
  const std::function<absl::Time()> now_;
  double waited_seconds_ = 0;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_NPU_METERED_H_
