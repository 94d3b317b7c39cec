// Test double of XRT's xrt/xrt_hw_context.h: the two constructors irontune
// uses. A context is held until its last copy is destroyed.
#ifndef IRONTUNE_FAKE_XRT_XRT_HW_CONTEXT_H_
#define IRONTUNE_FAKE_XRT_XRT_HW_CONTEXT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "xrt/experimental/xrt_elf.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_uuid.h"

namespace fake_xrt {
struct ContextState;
}

namespace xrt {

class hw_context {
 public:
  using cfg_param_type = std::map<std::string, uint32_t>;
  enum class access_mode : uint8_t { exclusive = 0, shared = 1 };

  hw_context() = default;
  // Throws std::system_error with the driver's errno when the driver
  // refuses the context (the scripted "driver", "npu" and
  // "other_contexts": README.md); std::runtime_error for an xclbin not
  // registered with `device`.
  hw_context(const xrt::device& device, const xrt::uuid& xclbin_id);
  hw_context(const xrt::device& device, const xrt::elf& elf,
             const cfg_param_type& cfg_param = cfg_param_type{},
             access_mode mode = access_mode::shared);

  // Fake only.
  std::shared_ptr<fake_xrt::ContextState> state() const { return state_; }

 private:
  std::shared_ptr<fake_xrt::ContextState> state_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_XRT_HW_CONTEXT_H_
