#include "daemon/base/thread_priority.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <thread>

namespace irontune {
namespace {

TEST_CASE("a helper lowers its own priority, not its caller's") {
  const int mine = ThreadNiceness();
  int helper = mine;
  std::thread t([&helper] {
    LowerThreadPriority();
    helper = ThreadNiceness();
  });
  t.join();
  // Nice values stop at 19.
  CHECK(helper == std::min(19, mine + kHelperNiceness));
  CHECK(ThreadNiceness() == mine);
}

}  // namespace
}  // namespace irontune
