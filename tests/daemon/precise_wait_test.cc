#include "daemon/sim/precise_wait.h"

#include <catch2/catch.hpp>
#include <chrono>

namespace irontune::sim {
namespace {

using std::chrono::microseconds;

TEST_CASE("the spin window settles above nine sleeps in ten", "[sim]") {
  SpinWindow w;
  CHECK(w.window() == SpinWindow::kMin);
  for (int i = 0; i < 1000; ++i) w.Observe(microseconds(50));
  CHECK(w.window() == SpinWindow::kMin);  // never below its floor
  // One sleep in five is 500 us late, the rest 50 us: more than one in
  // ten is later than any window under 500 us, none later than one above.
  for (int i = 0; i < 5000; ++i) {
    w.Observe(microseconds(i % 5 == 0 ? 500 : 50));
  }
  CHECK(w.window() >= microseconds(480));
  CHECK(w.window() <= microseconds(520));
  // Sleeps as late as 5 ms: a spin of at most 1 ms.
  for (int i = 0; i < 1000; ++i) w.Observe(std::chrono::milliseconds(5));
  CHECK(w.window() == SpinWindow::kMax);
  // Back to punctual sleeps: the window comes down again.
  for (int i = 0; i < 1000; ++i) w.Observe(microseconds(10));
  CHECK(w.window() == SpinWindow::kMin);
}

TEST_CASE("a precise wait never returns before its deadline", "[sim]") {
  PreciseWait wait;
  for (int i = 0; i < 40; ++i) {
    const auto deadline =
        PreciseWait::Clock::now() + microseconds(37 * (i % 8));
    wait.Until(deadline);
    CHECK(PreciseWait::Clock::now() >= deadline);
  }
  CHECK(wait.window().window() >= SpinWindow::kMin);
  CHECK(wait.window().window() <= SpinWindow::kMax);
}

TEST_CASE("a wait within the spin-whole limit never sleeps", "[sim]") {
  PreciseWait spun(std::chrono::milliseconds(2));
  PreciseWait slept;
  for (int i = 0; i < 5; ++i) {
    const auto deadline = PreciseWait::Clock::now() + microseconds(1500);
    spun.Until(deadline);
    CHECK(PreciseWait::Clock::now() >= deadline);
    slept.Until(PreciseWait::Clock::now() + microseconds(1500));
  }
  CHECK(spun.sleeps() == 0);
  CHECK(slept.sleeps() == 5);  // 1.5 ms is longer than any spin window
  // A longer wait sleeps until its window.
  spun.Until(PreciseWait::Clock::now() + std::chrono::milliseconds(4));
  CHECK(spun.sleeps() == 1);
}

}  // namespace
}  // namespace irontune::sim
