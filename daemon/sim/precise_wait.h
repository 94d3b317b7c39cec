// PreciseWait: waits on the real-time clock until a deadline, to within a
// microsecond or so, for the simulated NPU's runs. A thread's sleep ends
// late by the kernel's timer slack and wake-up latency (on a virtual
// machine, 70 to 150 us on average, with spikes of milliseconds), which
// would add to every run and count as the host's time; spinning the whole
// run would hold a core. So it sleeps until a window before the deadline
// and spins the rest, the window following how late its sleeps ended: a
// running estimate of their 90th percentile (SpinWindow), between 100 us
// and 1 ms. A wait no longer than its spin_whole limit (set where the
// waiting thread has a CPU of its own, thread_roles.h) is spun whole:
// a sleep on a CPU that another thread holds can end a scheduler tick
// late, several times the wait itself.
//
// Threads: one PreciseWait is used by one thread at a time (the device's).
#ifndef IRONTUNE_DAEMON_SIM_PRECISE_WAIT_H_
#define IRONTUNE_DAEMON_SIM_PRECISE_WAIT_H_

#include <chrono>
#include <cstdint>

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

  // Waits of at most `spin_whole` never sleep (zero: every wait sleeps
  // until its spin window).
  explicit PreciseWait(Clock::duration spin_whole = Clock::duration::zero())
      : spin_whole_(spin_whole) {}

  // Returns at `deadline` or just after, never before.
  void Until(Clock::time_point deadline);

  const SpinWindow& window() const { return window_; }
  // How many waits slept.
  int64_t sleeps() const { return sleeps_; }

 private:
  Clock::duration spin_whole_;
  SpinWindow window_;
  int64_t sleeps_ = 0;
};

}  // namespace irontune::sim

#endif  // IRONTUNE_DAEMON_SIM_PRECISE_WAIT_H_
