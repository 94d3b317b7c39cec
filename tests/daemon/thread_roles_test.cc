#include "daemon/base/thread_roles.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace irontune {
namespace {

TEST_CASE("a helper lowers its own priority, not its caller's") {
  const int mine = ThreadNiceness();
  int helper = mine;
  std::thread t([&helper] {
    BecomeHelperThread();
    helper = ThreadNiceness();
  });
  t.join();
  // Nice values stop at 19.
  CHECK(helper == std::min(19, mine + kHelperNiceness));
  CHECK(ThreadNiceness() == mine);
}

TEST_CASE("a pin holds for its scope and gives the CPUs back") {
  const std::vector<int> mine = ThreadCpus();
  REQUIRE(!mine.empty());
  {
    const ScopedPin pin({mine.front()});
    CHECK(ThreadCpus() == std::vector<int>{mine.front()});
    // Only the calling thread is pinned.
    std::vector<int> other;
    std::thread([&other] { other = ThreadCpus(); }).join();
    CHECK(other == std::vector<int>{mine.front()});  // inherited at start
  }
  CHECK(ThreadCpus() == mine);
  {
    const ScopedPin none({});
    CHECK(ThreadCpus() == mine);
  }
  CHECK(ThreadCpus() == mine);
}

TEST_CASE("a spare timing CPU is the last of two or more, never the only") {
  const std::vector<int> mine = ThreadCpus();
  REQUIRE(!mine.empty());
  if (mine.size() >= 2) {
    CHECK(SpareTimingCpu() == std::vector<int>{mine.back()});
  }
  const ScopedPin one({mine.front()});
  CHECK(SpareTimingCpu().empty());
}

TEST_CASE("helpers keep off the timing CPUs unless no other CPU remains") {
  const std::vector<int> mine = ThreadCpus();
  REQUIRE(!mine.empty());
  ReserveTimingCpus({mine.back()});
  const std::vector<int> timing = TimingCpus();
  CHECK(std::binary_search(timing.begin(), timing.end(), mine.back()));
  std::vector<int> helper;
  std::thread([&helper] {
    BecomeHelperThread();
    helper = ThreadCpus();
  }).join();
  if (mine.size() >= 2) {
    std::vector<int> want(mine.begin(), mine.end() - 1);
    // Other tests may have reserved CPUs of their own.
    want.erase(std::remove_if(want.begin(), want.end(),
                              [&](int cpu) {
                                return std::binary_search(timing.begin(),
                                                          timing.end(), cpu);
                              }),
               want.end());
    CHECK(helper == (want.empty() ? mine : want));
  } else {
    CHECK(helper == mine);  // its only CPU stays
  }
  // A helper started on the timing CPU alone keeps it.
  const ScopedPin pin({mine.back()});
  std::thread([&helper] {
    BecomeHelperThread();
    helper = ThreadCpus();
  }).join();
  CHECK(helper == std::vector<int>{mine.back()});
}

}  // namespace
}  // namespace irontune
