// MeteredDevice: a DeviceWrapper that adds up the device time of every run
// of the images loaded through it. For job statistics and benchmarks:
// where a job's wall time went.
//
// Threads: as the Device seam (one thread at a time); the figures may be
// read from any thread.
#ifndef IRONTUNE_DAEMON_NPU_METERED_H_
#define IRONTUNE_DAEMON_NPU_METERED_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "daemon/npu/device.h"

namespace irontune {

class MeteredDevice : public DeviceWrapper {
 public:
  // `target` is not owned and must outlive the wrapper and its images.
  explicit MeteredDevice(Device* target) : DeviceWrapper(target) {}

  // Elapsed microseconds summed over every successful run so far.
  double device_us() const {
    return device_us_.load(std::memory_order_relaxed);
  }
  int64_t runs() const { return runs_.load(std::memory_order_relaxed); }

 protected:
  std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                   const Artifact& artifact) override;

 private:
  class MeteredImage;
  // Written by one thread at a time; read from any (a job's cancellation
  // is looked at while its search waits for a build without the turn).
  std::atomic<double> device_us_{0};
  std::atomic<int64_t> runs_{0};
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_NPU_METERED_H_
