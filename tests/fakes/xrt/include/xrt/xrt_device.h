// Test double of XRT's xrt/xrt_device.h: the part irontune uses.
#ifndef IRONTUNE_FAKE_XRT_XRT_DEVICE_H_
#define IRONTUNE_FAKE_XRT_XRT_DEVICE_H_

#include <memory>
#include <string>

#include "xrt/experimental/xrt_xclbin.h"
#include "xrt/xrt_uuid.h"

namespace fake_xrt {
struct DeviceState;
}

namespace xrt {

class device {
 public:
  device() = default;
  // Throws std::runtime_error when there is no device `didx` (scripted:
  // "no_device", "devices").
  explicit device(unsigned int didx);
  // Throws std::runtime_error for an empty xclbin.
  uuid register_xclbin(const xrt::xclbin& xclbin);

  // Fake only.
  std::shared_ptr<fake_xrt::DeviceState> state() const { return state_; }

 private:
  std::shared_ptr<fake_xrt::DeviceState> state_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_XRT_DEVICE_H_
