// Test double of XRT's xrt/xrt_device.h: the part irontune uses.
#ifndef IRONTUNE_FAKE_XRT_XRT_DEVICE_H_
#define IRONTUNE_FAKE_XRT_XRT_DEVICE_H_

#include <any>
#include <memory>
#include <string>

#include "xrt/experimental/xrt_xclbin.h"
#include "xrt/xrt_uuid.h"

namespace fake_xrt {
struct DeviceState;
}

namespace xrt {

namespace info {
// XRT's xrt::info::device (xrt/xrt_device.h @ 202510.2.19.194 and master):
// only `bdf` and `host`, with their values there (the first and the 15th).
enum class device : unsigned int { bdf = 0, host = 14 };
template <typename Param, Param>
struct param_traits;
template <>
struct param_traits<device, device::bdf> {
  using return_type = std::string;  // "0000:c5:00.1"
};
template <>
struct param_traits<device, device::host> {
  using return_type = std::string;  // JSON: XRT's version, the drivers'
};
}  // namespace info

class device {
 public:
  device() = default;
  // Throws std::runtime_error when there is no device `didx` (scripted:
  // "no_device", "devices").
  explicit device(unsigned int didx);
  // Throws std::runtime_error for an empty xclbin.
  uuid register_xclbin(const xrt::xclbin& xclbin);

  // As XRT's: the value of `param`, typed by info::param_traits. bdf is
  // the script's "bdfs"[index], else 0000:XX:00.1 with XX = c5 + index;
  // host the JSON XRT writes of its build and its drivers' versions
  // (README.md, "Versions").
  template <info::device param>
  typename info::param_traits<info::device, param>::return_type get_info()
      const {
    return std::any_cast<
        typename info::param_traits<info::device, param>::return_type>(
        get_info_std(param));
  }
  std::any get_info_std(info::device param) const;

  // Fake only.
  std::shared_ptr<fake_xrt::DeviceState> state() const { return state_; }

 private:
  std::shared_ptr<fake_xrt::DeviceState> state_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_XRT_DEVICE_H_
