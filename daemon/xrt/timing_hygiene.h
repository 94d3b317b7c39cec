// Timing hygiene on a real NPU, as IRON does it (docs/npu-facts.md, "How
// IRON times"): the CPUs that take the completion interrupts of this
// process's hardware contexts (their `xdna_mailbox` IRQs in
// /proc/interrupts and /proc/irq/N/effective_affinity_list), the timing
// thread pinned there (they are reserved as the process's timing CPUs, so
// helper threads keep off them: daemon/base/thread_roles.h), a nice-19
// spinner on each SMT sibling of those CPUs while timing, so deep C-state
// exits do not land on long runs only; and the run-queue wait of a call
// from /proc/thread-self/schedstat (its second field, ns).
//
// Which IRQs: the amdxdna drivers give every mailbox channel an IRQ named
// xdna_mailbox, requested as the channel is made. The management channel's
// is made with the device; a hardware context's is made with the context,
// on the MSI-X vector the firmware answers the create-context message with
// (in-tree drivers/accel/amdxdna/aie2_message.c aie2_create_context @
// torvalds/linux 0c86b424; amd/xdna-driver src/driver/amdxdna/
// aie2_hwctx.c aie2_load_hwctx and amdxdna_mailbox.c
// xdna_mailbox_create_channel @ 856409ca). So the IRQs present when the
// device is opened carry no completion of ours: the completion IRQs are
// those that appear once this process made a context. In turbo the
// out-of-tree driver makes the channel MB_CHANNEL_USER_POLL: its IRQ
// handler returns at once and a polling kernel thread takes the
// completions (same files), so no CPU is known to take them and nothing is
// pinned.
//
// The parsers are pure and tested on captured text (tests/xrt/testdata/).
// Every file is read under a configurable root, so tests use captured
// trees; each piece that cannot be read degrades with one logged warning.
//
// Threads: TimingHygiene's Pin/Unpin and CpuWaitNs act on the calling
// thread; ContextCreated, Spin and StopSpinning from one thread at a time.
#ifndef IRONTUNE_DAEMON_XRT_TIMING_HYGIENE_H_
#define IRONTUNE_DAEMON_XRT_TIMING_HYGIENE_H_

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "daemon/npu/device.h"

namespace irontune {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}, sorted and unique. InvalidArgument
// naming the bad piece.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);

struct MailboxIrq {
  int irq = 0;
  int64_t count = 0;  // summed over CPUs
};
// The `xdna_mailbox` lines of /proc/interrupts. Lines that are not IRQ
// lines (the CPU header, "ERR:") are skipped.
std::vector<MailboxIrq> ParseMailboxIrqs(absl::string_view proc_interrupts);

// The IRQs of `after` that `before` lacks (requested in between), sorted.
std::vector<int> NewIrqs(const std::vector<MailboxIrq>& before,
                         const std::vector<MailboxIrq>& after);

// The run-queue wait in ns: the second field of a schedstat line.
// InvalidArgument otherwise.
absl::StatusOr<int64_t> ParseSchedstatWaitNs(absl::string_view text);

struct HygieneOptions {
  bool enabled = true;  // false: no pinning, no spinners (CPU waits still)
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
};

class TimingHygiene {
 public:
  // Notes the xdna_mailbox IRQs present now (the management channel's,
  // and those of other processes' contexts), which carry none of this
  // process's completions. Warns when /proc/interrupts cannot be read.
  explicit TimingHygiene(HygieneOptions options);
  ~TimingHygiene();  // StopSpinning()
  TimingHygiene(const TimingHygiene&) = delete;
  TimingHygiene& operator=(const TimingHygiene&) = delete;

  // Called after each hardware context this process makes, `mode` the
  // NPU's power mode then. Reads /proc/interrupts again: the xdna_mailbox
  // IRQs not there at construction are the contexts' (another process's
  // context made in between counts too); their effective affinity gives
  // the completion CPUs, reserved as timing CPUs, and those CPUs' SMT
  // siblings the spinners' (restarted when spinning). In turbo, where the
  // driver polls, and when no new IRQ is found, there are no completion
  // CPUs (logged once each).
  void ContextCreated(PowerMode mode);

  const std::vector<int>& completion_cpus() const { return cpus_; }
  const std::vector<int>& siblings() const { return siblings_; }

  // Pins the calling thread to the completion CPUs, remembering its mask;
  // Unpin restores it. No-ops when disabled or no CPU is known (before the
  // first context, in turbo).
  void Pin();
  void Unpin();
  // Starts one nice-19 spinner per sibling (idempotent; the siblings
  // ContextCreated finds later get theirs then); StopSpinning joins them.
  void Spin();
  void StopSpinning();
  bool spinning() const { return !spinners_.empty(); }

  // The calling thread's run-queue wait so far (ns), or nullopt (warned
  // once) when schedstat cannot be read.
  std::optional<int64_t> CpuWaitNs();

 private:
  std::optional<std::vector<MailboxIrq>> ReadIrqs();
  // Makes `irqs` the completion IRQs: their CPUs and those CPUs' siblings.
  void UseIrqs(const std::vector<int>& irqs);
  HygieneOptions options_;
  std::vector<MailboxIrq> at_open_;  // the IRQs at construction
  std::vector<int> irqs_;            // the completion IRQs
  bool warned_interrupts_ = false;
  bool warned_turbo_ = false;
  bool warned_no_irq_ = false;
  std::vector<int> cpus_;
  std::vector<int> siblings_;
  bool pinned_ = false;
  cpu_set_t saved_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> spinners_;
  bool spin_asked_ = false;  // between Spin and StopSpinning
  bool warned_schedstat_ = false;
  bool warned_pin_ = false;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_TIMING_HYGIENE_H_
