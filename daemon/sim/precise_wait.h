// PreciseWait: waits on the real-time clock until a deadline, to within a
// microsecond or so, for the simulated NPU's runs. A thread's sleep ends
// late by the kernel's timer slack and wake-up latency (on a virtual
// machine, 70 to 150 us on average, with spikes of milliseconds), which
// would add to every run and count as the host's time; spinning the whole
// run would hold a core. So it sleeps until a window before the deadline
// and spins the rest, the window following how late its sleeps ended: a
// running estimate of their 90th percentile (SpinWindow), between 100 us
// and 1 ms.
//
// Threads: one PreciseWait is used by one thread at a time (the device's).
#ifndef IRONTUNE_DAEMON_SIM_PRECISE_WAIT_H_
#define IRONTUNE_DAEMON_SIM_PRECISE_WAIT_H_

#include <chrono>

namespace irontune::sim {

// A running estimate of a high percentile of the lateness of sleeps: each
// one later than the estimate raises it by 9 steps, each other lowers it
// by one, so it settles where 1 in 10 is later (a stochastic quantile
// estimate), clamped to [kMin, kMax].
class SpinWindow {
 public:
  using Duration = std::chrono::nanoseconds;
  static constexpr Duration kMin = std::chrono::microseconds(100);
  static constexpr Duration kMax = std::chrono::milliseconds(1);
  static constexpr Duration kStep = std::chrono::microseconds(2);

  Duration window() const { return window_; }
  // One sleep that ended `late` after the time it was asked to end.
  void Observe(Duration late);

 private:
  Duration window_ = kMin;
};

class PreciseWait {
 public:
  using Clock = std::chrono::steady_clock;

  // Returns at `deadline` or just after, never before.
  void Until(Clock::time_point deadline);

  const SpinWindow& window() const { return window_; }

 private:
  SpinWindow window_;
};

}  // namespace irontune::sim

#endif  // IRONTUNE_DAEMON_SIM_PRECISE_WAIT_H_
