// Test double of XRT's xrt/xrt_kernel.h: the part irontune uses. A run's
// device time is the design's scripted run_us plus seeded jitter; wait()
// returns when it has passed (on the double's clock: fake_xrt.h, Now()).
// A command scripted to hang never ends: wait(timeout) returns
// ERT_CMD_STATE_TIMEOUT and wait2(timeout) std::cv_status::timeout, and it
// stays in progress until abort() (tests/fakes/xrt/README.md cites XRT).
#ifndef IRONTUNE_FAKE_XRT_XRT_KERNEL_H_
#define IRONTUNE_FAKE_XRT_XRT_KERNEL_H_

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>

#include "xrt/detail/ert.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_hw_context.h"

namespace fake_xrt {
struct KernelState;
struct RunState;
}  // namespace fake_xrt

namespace xrt {

class kernel;

class run {
 public:
  class command_error : public std::exception {
   public:
    command_error(ert_cmd_state state, const std::string& what);
    ert_cmd_state get_command_state() const { return state_; }
    const char* what() const noexcept override { return what_.c_str(); }

   private:
    ert_cmd_state state_;
    std::string what_;
  };

  run() = default;
  explicit run(const kernel& krnl);

  template <typename ArgType>
  void set_arg(int index, ArgType&& arg) {
    using T = std::decay_t<ArgType>;
    if constexpr (std::is_base_of_v<xrt::bo, T>) {
      set_bo_arg(index, arg);
    } else {
      static_assert(std::is_trivially_copyable_v<T>);
      set_bytes_arg(index, &arg, sizeof(T));
    }
  }

  // Throws std::runtime_error("bad command state, can't launch") while the
  // run's command is still in progress.
  void start();
  ert_cmd_state wait(const std::chrono::milliseconds& timeout =
                         std::chrono::milliseconds{0}) const;
  std::cv_status wait2(const std::chrono::milliseconds& timeout) const;
  void wait2() const { wait2(std::chrono::milliseconds{0}); }
  ert_cmd_state state() const;
  // Aborts a started command; returns its state (ABORT, or how it ended).
  // Throws std::runtime_error for a run never started.
  ert_cmd_state abort();
  // A full ELF's ctrl scratchpad, where IRON's parameter table puts per-call
  // values: made with the run, synced from the device on every call.
  // Throws std::runtime_error when the run's ELF has none (an xclbin never
  // has one).
  xrt::bo get_ctrl_scratchpad_bo() const;

 private:
  void set_bo_arg(int index, const xrt::bo& bo);
  void set_bytes_arg(int index, const void* bytes, size_t size);
  std::shared_ptr<fake_xrt::RunState> state_;
};

class kernel {
 public:
  kernel() = default;
  // Throws std::runtime_error when the context's xclbin has no kernel
  // `name`.
  kernel(const xrt::hw_context& ctx, const std::string& name);
  int group_id(int argno) const;

  // Fake only.
  std::shared_ptr<fake_xrt::KernelState> state() const { return state_; }

 protected:
  std::shared_ptr<fake_xrt::KernelState> state_;
};

}  // namespace xrt

#endif  // IRONTUNE_FAKE_XRT_XRT_KERNEL_H_
