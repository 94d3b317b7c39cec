// Test double of XRT's xrt/experimental/xrt_elf.h: a full ELF read from a
// file. The fake's "ELF" is JSON text (tests/fakes/xrt/README.md).
#ifndef IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_ELF_H_
#define IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_ELF_H_

#include <memory>
#include <string>

#include "xrt/xrt_uuid.h"

namespace fake_xrt {
struct Design;
}

namespace xrt {

class elf {
 public:
  elf() = default;
  // Throws std::runtime_error when the file is missing or not a fake design.
  explicit elf(const std::string& fnm);

  // Fake only.
  std::shared_ptr<const fake_xrt::Design> design() const { return design_; }

 private:
  std::shared_ptr<const fake_xrt::Design> design_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_ELF_H_
