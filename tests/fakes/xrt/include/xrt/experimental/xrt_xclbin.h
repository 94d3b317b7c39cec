// Test double of XRT's xrt/experimental/xrt_xclbin.h: an xclbin read from a
// file, and its kernels. The fake's xclbin is the "xclbin2" magic followed
// by JSON text (tests/fakes/xrt/README.md).
#ifndef IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_XCLBIN_H_
#define IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_XCLBIN_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "xrt/xrt_uuid.h"

namespace fake_xrt {
struct Design;
}

namespace xrt {

class xclbin {
 public:
  class kernel {
   public:
    kernel() = default;
    std::string get_name() const { return name_; }
    size_t get_num_args() const { return num_args_; }

    // Fake only.
    kernel(std::string name, size_t num_args)
        : name_(std::move(name)), num_args_(num_args) {}

   private:
    std::string name_;
    size_t num_args_ = 0;
  };

  xclbin() = default;
  // Throws std::runtime_error when the file cannot be read, or is no
  // xclbin ("Invalid xclbin" without the "xclbin2" magic).
  explicit xclbin(const std::string& filename);
  uuid get_uuid() const;
  std::vector<kernel> get_kernels() const;

  // Fake only.
  std::shared_ptr<const fake_xrt::Design> design() const { return design_; }

 private:
  std::shared_ptr<const fake_xrt::Design> design_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_XCLBIN_H_
