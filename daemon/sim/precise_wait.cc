#include "daemon/sim/precise_wait.h"

#include <algorithm>
#include <thread>

namespace irontune::sim {

void SpinWindow::Observe(Duration late) {
  window_ = late > window_ ? window_ + 9 * kStep : window_ - kStep;
  window_ = std::clamp(window_, kMin, kMax);
}

void PreciseWait::Until(Clock::time_point deadline) {
  const Clock::time_point now = Clock::now();
  const Clock::time_point wake = deadline - window_.window();
  if (deadline - now > spin_whole_ && now < wake) {
    ++sleeps_;
    std::this_thread::sleep_until(wake);
    window_.Observe(
        std::chrono::duration_cast<SpinWindow::Duration>(Clock::now() - wake));
  }
  while (Clock::now() < deadline) {
  }
}

}  // namespace irontune::sim
