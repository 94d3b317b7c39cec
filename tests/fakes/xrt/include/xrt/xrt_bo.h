// Test double of XRT's xrt/xrt_bo.h: the part irontune uses. A buffer has a
// host copy (map()) and a device copy; sync() copies a byte range between
// them, so a missing or misplaced sync shows (on an NPU host-only memory is
// shared and a sync flushes or invalidates the CPU cache: Xilinx/XRT
// src/runtime_src/core/common/api/xrt_bo.cpp @963c58ee, bo_impl::sync).
#ifndef IRONTUNE_FAKE_XRT_XRT_BO_H_
#define IRONTUNE_FAKE_XRT_XRT_BO_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "xrt/detail/xrt_mem.h"
#include "xrt/xrt_device.h"

namespace fake_xrt {
struct BoState;
}

typedef uint32_t xrtMemoryGroup;  // NOLINT: XRT's name

namespace xrt {

using memory_group = xrtMemoryGroup;

class bo {
 public:
  // XRT's values (XRT_BO_FLAGS_*).
  enum class flags : uint32_t {
    normal = 0,
    cacheable = 1u << 24,
    device_only = 1u << 28,
    host_only = 1u << 29,
    p2p = 1u << 30,
    svm = 1u << 27,
  };

  bo() = default;
  // Throws std::bad_alloc at the scripted "bo_alloc_fail" allocation.
  bo(const xrt::device& device, size_t sz, bo::flags flags,
     xrt::memory_group grp);

  // Throws std::system_error(EINVAL) for a range past the buffer, as the
  // amdxdna shim does (amd/xdna-driver src/shim/buffer.cpp @856409ca).
  void sync(xclBOSyncDirection dir, size_t sz, size_t offset);
  void sync(xclBOSyncDirection dir) { sync(dir, size(), 0); }
  void* map();
  template <typename MapType>
  MapType map() {
    return reinterpret_cast<MapType>(map());
  }
  size_t size() const;

  // Fake only.
  explicit bo(std::shared_ptr<fake_xrt::BoState> state)
      : state_(std::move(state)) {}
  std::shared_ptr<fake_xrt::BoState> state() const { return state_; }

 protected:
  std::shared_ptr<fake_xrt::BoState> state_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_XRT_BO_H_
