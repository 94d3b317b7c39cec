// Test double of XRT's xrt/experimental/xrt_elf.h: a full ELF read from a
// file, and (as XRT master declares it; 2.19 has no get_kernels) its
// kernels. The fake's ELF is a real ELF header followed by JSON text
// (tests/fakes/xrt/README.md).
#ifndef IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_ELF_H_
#define IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_ELF_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "xrt/xrt_uuid.h"

namespace fake_xrt {
struct Design;
}

namespace xrt {

class elf {
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

  elf() = default;
  // Throws std::runtime_error when the file is missing or not an ELF (bad
  // magic or class), of an OS/ABI XRT does not know, or (XRT master) when
  // its kernel takes scalar arguments.
  explicit elf(const std::string& fnm);
  std::vector<kernel> get_kernels() const;

  // Fake only.
  std::shared_ptr<const fake_xrt::Design> design() const { return design_; }

 private:
  std::shared_ptr<const fake_xrt::Design> design_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_ELF_H_
