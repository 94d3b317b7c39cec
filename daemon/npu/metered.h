// MeteredDevice: a DeviceWrapper that adds up the device time of every run
// of the images loaded through it. For job statistics and benchmarks:
// where a job's wall time went.
//
// Threads: as the Device seam (one thread at a time); the figures are read
// on that thread too.
#ifndef IRONTUNE_DAEMON_NPU_METERED_H_
#define IRONTUNE_DAEMON_NPU_METERED_H_

#include <cstdint>
#include <memory>

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

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_NPU_METERED_H_
