#include "daemon/xrt/timing_hygiene.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "daemon/base/thread_roles.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

const std::string kData = IRONTUNE_SOURCE_DIR "/tests/xrt/testdata";

TEST_CASE("CPU lists parse", "[xrt][hygiene]") {
  CHECK(*ParseCpuList("0-3,8,10-11\n") ==
        std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(*ParseCpuList("5") == std::vector<int>{5});
  CHECK(ParseCpuList("")->empty());
  absl::StatusOr<std::vector<int>> bad = ParseCpuList("1,3-x");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("\"3-x\""));
  CHECK_FALSE(ParseCpuList("4-2").ok());
}

// The captured /proc/interrupts pair: testdata/interrupts_at_open.txt as
// the device is opened (the management channel's IRQ 85 and another
// process's context's 86, all named xdna_mailbox), and
// testdata/proc/interrupts after this process made its first context (its
// channel's IRQ 87 added, on CPU 3).
TEST_CASE("the xdna_mailbox IRQs of /proc/interrupts", "[xrt][hygiene]") {
  const std::vector<MailboxIrq> at_open =
      ParseMailboxIrqs(e2e::ReadFile(kData + "/interrupts_at_open.txt"));
  const std::vector<MailboxIrq> after =
      ParseMailboxIrqs(e2e::ReadFile(kData + "/proc/interrupts"));
  REQUIRE(at_open.size() == 2);
  REQUIRE(after.size() == 3);
  CHECK(after[0].irq == 85);
  CHECK(after[0].count == 23);
  CHECK(after[1].irq == 86);
  CHECK(after[1].count == 48240);
  CHECK(after[2].irq == 87);
  CHECK(after[2].count == 0);
  // The context's IRQ is the one it brought, not the busiest one.
  CHECK(NewIrqs(at_open, after) == std::vector<int>{87});
  CHECK(NewIrqs(after, after).empty());
  CHECK(NewIrqs({}, after) == std::vector<int>{85, 86, 87});
}

TEST_CASE("schedstat's second field is the run-queue wait", "[xrt][hygiene]") {
  CHECK(*ParseSchedstatWaitNs("1843311822 92331 4471\n") == 92331);
  CHECK_FALSE(ParseSchedstatWaitNs("1843311822").ok());
  CHECK_FALSE(ParseSchedstatWaitNs("a b c").ok());
}

// A /proc root whose interrupts file a test replaces, the rest (irq/,
// thread-self/) linked from the captured tree.
struct ProcRoot {
  explicit ProcRoot(const std::string& tag) : dir(e2e::TempDir(tag)) {
    for (const char* sub : {"irq", "thread-self"}) {
      std::system(
          ("ln -s " + kData + "/proc/" + sub + " " + dir + "/" + sub).c_str());
    }
  }
  void Interrupts(const std::string& captured) const {
    std::ofstream(dir + "/interrupts") << e2e::ReadFile(kData + captured);
  }
  HygieneOptions Options() const {
    HygieneOptions o;
    o.proc_root = dir;
    o.sys_root = kData + "/sys";
    return o;
  }
  std::string dir;
};

TEST_CASE("the completion CPUs are found once a context is made",
          "[xrt][hygiene]") {
  ProcRoot proc("hygiene-context");
  proc.Interrupts("/interrupts_at_open.txt");
  TimingHygiene h(proc.Options());
  // At open only the management channel and others' contexts have IRQs:
  // none carries our completions.
  CHECK(h.completion_cpus().empty());
  CHECK(h.CpuWaitNs() == 92331);
  proc.Interrupts("/proc/interrupts");
  h.ContextCreated(PowerMode::kDefault);
  CHECK(h.completion_cpus() == std::vector<int>{3});
  CHECK(h.siblings() == std::vector<int>{11});
  // Reserved: helper threads keep off it.
  const std::vector<int> timing = TimingCpus();
  CHECK(std::binary_search(timing.begin(), timing.end(), 3));
  // A second context that brings no IRQ leaves them.
  h.ContextCreated(PowerMode::kPerformance);
  CHECK(h.completion_cpus() == std::vector<int>{3});
}

TEST_CASE("in turbo, where the driver polls, nothing is pinned",
          "[xrt][hygiene]") {
  ProcRoot proc("hygiene-turbo");
  proc.Interrupts("/interrupts_at_open.txt");
  TimingHygiene h(proc.Options());
  proc.Interrupts("/proc/interrupts");
  h.ContextCreated(PowerMode::kTurbo);
  CHECK(h.completion_cpus().empty());
  CHECK(h.siblings().empty());
  cpu_set_t before, after;
  sched_getaffinity(0, sizeof(before), &before);
  h.Pin();
  sched_getaffinity(0, sizeof(after), &after);
  CHECK(CPU_EQUAL(&before, &after));
  h.Unpin();
}

TEST_CASE("a context that brings no IRQ pins nothing", "[xrt][hygiene]") {
  ProcRoot proc("hygiene-no-irq");
  proc.Interrupts("/proc/interrupts");
  TimingHygiene h(proc.Options());
  h.ContextCreated(PowerMode::kDefault);  // the same IRQs as at open
  CHECK(h.completion_cpus().empty());
}

TEST_CASE("spinners started before the first context follow its siblings",
          "[xrt][hygiene]") {
  ProcRoot proc("hygiene-spin");
  proc.Interrupts("/interrupts_at_open.txt");
  TimingHygiene h(proc.Options());
  h.Spin();
  CHECK_FALSE(h.spinning());  // no sibling known yet
  proc.Interrupts("/proc/interrupts");
  h.ContextCreated(PowerMode::kDefault);
  CHECK(h.spinning());
  h.StopSpinning();
  CHECK_FALSE(h.spinning());
}

TEST_CASE("timing hygiene degrades where files are missing", "[xrt][hygiene]") {
  const std::string empty = e2e::TempDir("hygiene-empty");
  HygieneOptions o;
  o.proc_root = empty;
  o.sys_root = empty;
  TimingHygiene h(o);
  h.ContextCreated(PowerMode::kDefault);
  CHECK(h.completion_cpus().empty());
  CHECK(h.siblings().empty());
  CHECK_FALSE(h.CpuWaitNs().has_value());
  cpu_set_t before, after;
  sched_getaffinity(0, sizeof(before), &before);
  h.Pin();  // nothing to pin to: the mask stays
  sched_getaffinity(0, sizeof(after), &after);
  CHECK(CPU_EQUAL(&before, &after));
  h.Unpin();
  h.Spin();
  CHECK_FALSE(h.spinning());
}

TEST_CASE("Pin moves the thread to the completion CPUs and Unpin back",
          "[xrt][hygiene]") {
  cpu_set_t mine;
  sched_getaffinity(0, sizeof(mine), &mine);
  int cpu = -1;
  for (int c = 0; c < CPU_SETSIZE && cpu < 0; ++c)
    if (CPU_ISSET(c, &mine)) cpu = c;
  REQUIRE(cpu >= 0);
  // A /proc whose context's mailbox IRQ completes on a CPU we may run on.
  const std::string root = e2e::TempDir("hygiene-pin");
  std::system(("mkdir -p " + root + "/irq/9").c_str());
  std::system(("echo " + std::to_string(cpu) + " > " + root +
               "/irq/9/effective_affinity_list")
                  .c_str());
  std::ofstream(root + "/interrupts") << "";
  HygieneOptions o;
  o.proc_root = root;
  o.sys_root = root;
  TimingHygiene h(o);
  std::ofstream(root + "/interrupts")
      << " 9:  1  IR-PCI-MSIX-0000:c5:00.1 1-edge xdna_mailbox\n";
  h.ContextCreated(PowerMode::kDefault);
  REQUIRE(h.completion_cpus() == std::vector<int>{cpu});
  h.Pin();
  cpu_set_t pinned;
  sched_getaffinity(0, sizeof(pinned), &pinned);
  CHECK(CPU_COUNT(&pinned) == 1);
  CHECK(CPU_ISSET(cpu, &pinned));
  h.Unpin();
  cpu_set_t back;
  sched_getaffinity(0, sizeof(back), &back);
  CHECK(CPU_EQUAL(&back, &mine));
}

TEST_CASE("the real schedstat of this thread is read", "[xrt][hygiene]") {
  TimingHygiene h(HygieneOptions{});
  if (e2e::ReadFile("/proc/thread-self/schedstat").empty()) {
    CHECK_FALSE(h.CpuWaitNs().has_value());
  } else {
    REQUIRE(h.CpuWaitNs().has_value());
    CHECK(*h.CpuWaitNs() >= 0);
  }
}

}  // namespace
}  // namespace irontune
