// Test double of XRT's xrt/experimental/xrt_ext.h: the full-ELF kernel and
// the host-only buffer irontune uses.
#ifndef IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_EXT_H_
#define IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_EXT_H_

#include <cstddef>
#include <string>

#include "xrt/xrt_bo.h"
#include "xrt/xrt_hw_context.h"
#include "xrt/xrt_kernel.h"

namespace xrt::ext {

class bo : public xrt::bo {
 public:
  // A host-only buffer. Throws std::bad_alloc at the scripted
  // "bo_alloc_fail" allocation.
  bo(const xrt::device& device, size_t sz);
};

class kernel : public xrt::kernel {
 public:
  // Throws std::runtime_error when the ELF has no kernel `name`, or (XRT
  // 2.19) when it takes scalar arguments.
  kernel(const xrt::hw_context& ctx, const std::string& name);
};

}  // namespace xrt::ext

#endif  // IRONTUNE_FAKE_XRT_EXPERIMENTAL_XRT_EXT_H_
