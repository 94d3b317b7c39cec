#include "daemon/xrt/timing_hygiene.h"

#include <sched.h>

#include <algorithm>
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

TEST_CASE("the xdna_mailbox IRQs of /proc/interrupts", "[xrt][hygiene]") {
  const std::vector<MailboxIrq> irqs =
      ParseMailboxIrqs(e2e::ReadFile(kData + "/proc/interrupts"));
  REQUIRE(irqs.size() == 3);
  CHECK(irqs[0].irq == 86);
  CHECK(irqs[0].count == 48213);
  CHECK(irqs[1].irq == 87);
  CHECK(irqs[1].count == 112);
  CHECK(irqs[2].count == 0);

  std::vector<MailboxIrq> after = irqs;
  after[1].count += 50;  // a warm run raised IRQ 87 only
  CHECK(RisenIrqs(irqs, after) == std::vector<int>{87});
  CHECK(RisenIrqs(irqs, irqs) == std::vector<int>{86, 87, 88});
}

TEST_CASE("schedstat's second field is the run-queue wait", "[xrt][hygiene]") {
  CHECK(*ParseSchedstatWaitNs("1843311822 92331 4471\n") == 92331);
  CHECK_FALSE(ParseSchedstatWaitNs("1843311822").ok());
  CHECK_FALSE(ParseSchedstatWaitNs("a b c").ok());
}

TEST_CASE("timing hygiene reads a captured /proc and /sys", "[xrt][hygiene]") {
  HygieneOptions o;
  o.proc_root = kData + "/proc";
  o.sys_root = kData + "/sys";
  TimingHygiene h(o);
  CHECK(h.completion_cpus() == std::vector<int>{2, 3});
  CHECK(h.siblings() == std::vector<int>{10, 11});
  CHECK(h.CpuWaitNs() == 92331);
  // Reserved: helper threads keep off them.
  const std::vector<int> timing = TimingCpus();
  CHECK(std::binary_search(timing.begin(), timing.end(), 2));
  CHECK(std::binary_search(timing.begin(), timing.end(), 3));
}

TEST_CASE("timing hygiene degrades where files are missing", "[xrt][hygiene]") {
  const std::string empty = e2e::TempDir("hygiene-empty");
  HygieneOptions o;
  o.proc_root = empty;
  o.sys_root = empty;
  TimingHygiene h(o);
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
  // A /proc whose one mailbox IRQ completes on a CPU we may run on.
  const std::string root = e2e::TempDir("hygiene-pin");
  std::system(("mkdir -p " + root + "/irq/9").c_str());
  std::system(("printf ' 9:  1  IR-PCI-MSIX-0000:c5:00.1 1-edge "
               "xdna_mailbox\\n' > " +
               root + "/interrupts")
                  .c_str());
  std::system(("echo " + std::to_string(cpu) + " > " + root +
               "/irq/9/effective_affinity_list")
                  .c_str());
  HygieneOptions o;
  o.proc_root = root;
  o.sys_root = root;
  TimingHygiene h(o);
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
