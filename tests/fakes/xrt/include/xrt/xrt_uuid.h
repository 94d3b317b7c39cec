// Test double of XRT's xrt/xrt_uuid.h: the part irontune uses.
#ifndef IRONTUNE_FAKE_XRT_XRT_UUID_H_
#define IRONTUNE_FAKE_XRT_XRT_UUID_H_

#include <string>

namespace xrt {

class uuid {
 public:
  uuid() = default;
  // Fake only: from 32 hex digits.
  explicit uuid(std::string hex) : hex_(std::move(hex)) {}
  std::string to_string() const { return hex_; }

 private:
  std::string hex_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_XRT_UUID_H_
