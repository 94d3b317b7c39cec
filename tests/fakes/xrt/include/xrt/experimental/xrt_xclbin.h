// Test double of XRT's xrt/experimental/xrt_xclbin.h: an xclbin read from a
// file. The fake's "xclbin" is JSON text (tests/fakes/xrt/README.md).
#ifndef IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_XCLBIN_H_
#define IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_XCLBIN_H_

#include <memory>
#include <string>

#include "xrt/xrt_uuid.h"

namespace fake_xrt {
struct Design;
}

namespace xrt {

class xclbin {
 public:
  xclbin() = default;
  // Throws std::runtime_error when the file is missing or not a fake design.
  explicit xclbin(const std::string& filename);
  uuid get_uuid() const;

  // Fake only.
  std::shared_ptr<const fake_xrt::Design> design() const { return design_; }

 private:
  std::shared_ptr<const fake_xrt::Design> design_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_XCLBIN_H_
