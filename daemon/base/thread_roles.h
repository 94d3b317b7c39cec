// The two kinds of thread that share the CPUs while the device is timed.
//
// The timing thread runs the device's calls and wakes as each run ends to
// start the next: on a busy CPU that wake-up can wait for the next
// scheduler tick (4 ms at 250 Hz), and every such wait is wall time the
// device sits idle. So a device may reserve timing CPUs (the simulated NPU
// one CPU of its own, a real NPU the CPUs that take its completion
// interrupts), and pins the timing thread to them while it times a run.
//
// Helper threads work beside it (digests, judging, the sim's outputs,
// inputs made ahead, builds): each lowers its own priority by
// kHelperNiceness and keeps off the timing CPUs, where other CPUs remain.
//
// Threads: the reservation is process-wide and safe from any thread; the
// rest acts on the calling thread only. Failure: none. These are hints to
// the scheduler: a refusal leaves the thread as it was.
#ifndef IRONTUNE_DAEMON_BASE_THREAD_ROLES_H_
#define IRONTUNE_DAEMON_BASE_THREAD_ROLES_H_

#include <vector>

namespace irontune {

// How much lower than the process's a helper thread runs: nice +10 gives
// it about a tenth of the CPU share of a thread at the process's nice.
inline constexpr int kHelperNiceness = 10;

// The CPUs the calling thread may run on, ascending (empty if unknown).
std::vector<int> ThreadCpus();

// The calling thread's nice value.
int ThreadNiceness();

// One CPU for a device that has no timing CPUs of its own: the last of the
// calling thread's CPUs, when it may run on two or more; else none (a
// single CPU is not kept from the helpers).
std::vector<int> SpareTimingCpu();

// Adds `cpus` to the process's timing CPUs, which helper threads started
// from now on keep off. Never released: a daemon holds its device for
// life.
void ReserveTimingCpus(const std::vector<int>& cpus);

// The process's timing CPUs, ascending.
std::vector<int> TimingCpus();

// Makes the calling thread a helper: its nice value rises by
// kHelperNiceness (Linux keeps one per thread; nice stops at 19), and it
// may run on its CPUs less the timing CPUs, unless that leaves none.
void BecomeHelperThread();

// Pins the calling thread to `cpus` for the life of the scope, then gives
// back the CPUs it had. Does nothing for an empty `cpus`.
class ScopedPin {
 public:
  explicit ScopedPin(const std::vector<int>& cpus);
  ~ScopedPin();
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;

 private:
  std::vector<int> before_;  // empty: nothing to give back
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_THREAD_ROLES_H_
