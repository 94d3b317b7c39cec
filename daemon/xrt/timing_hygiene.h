// Timing hygiene on a real NPU, as IRON does it (docs/npu-facts.md, "How
// IRON times"): the CPUs that take the NPU's completion interrupts (the
// `xdna_mailbox` IRQs of /proc/interrupts and their
// /proc/irq/N/effective_affinity_list), the timing thread pinned there
// (they are reserved as the process's timing CPUs, so helper threads keep
// off them: daemon/base/thread_roles.h), a
// nice-19 spinner on each SMT sibling of those CPUs while timing, so deep
// C-state exits do not land on long runs only; and the run-queue wait of a
// call from /proc/thread-self/schedstat (its second field, ns).
//
// The parsers are pure and tested on captured text (tests/xrt/testdata/).
// Every file is read under a configurable root, so tests use captured
// trees; each piece that cannot be read degrades with one logged warning.
//
// Threads: TimingHygiene's Pin/Unpin and CpuWaitNs act on the calling
// thread; Spin/StopSpinning from one thread at a time.
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

// The IRQs whose count rose from `before` to `after` (IRON keeps those a
// warm run raised); all of `after` when none rose.
std::vector<int> RisenIrqs(const std::vector<MailboxIrq>& before,
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
  // Reads the completion CPUs and their SMT siblings now (logging a warning
  // for each file it cannot read).
  explicit TimingHygiene(HygieneOptions options);
  ~TimingHygiene();  // StopSpinning()
  TimingHygiene(const TimingHygiene&) = delete;
  TimingHygiene& operator=(const TimingHygiene&) = delete;

  const std::vector<int>& completion_cpus() const { return cpus_; }
  const std::vector<int>& siblings() const { return siblings_; }

  // Pins the calling thread to the completion CPUs, remembering its mask;
  // Unpin restores it. No-ops when disabled or no CPU is known.
  void Pin();
  void Unpin();
  // Starts one nice-19 spinner per sibling (idempotent); StopSpinning joins
  // them.
  void Spin();
  void StopSpinning();
  bool spinning() const { return !spinners_.empty(); }

  // The calling thread's run-queue wait so far (ns), or nullopt (warned
  // once) when schedstat cannot be read.
  std::optional<int64_t> CpuWaitNs();

 private:
  void ReadTopology();
  HygieneOptions options_;
  std::vector<int> cpus_;
  std::vector<int> siblings_;
  bool pinned_ = false;
  cpu_set_t saved_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> spinners_;
  bool warned_schedstat_ = false;
  bool warned_pin_ = false;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_TIMING_HYGIENE_H_
