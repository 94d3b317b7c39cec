// Helper threads that work beside the device thread (digests, judging,
// the sim's outputs, inputs made ahead) lower their own scheduling
// priority, so that when the CPU is short the device thread, which wakes
// as each run ends and times the next, is not kept waiting behind them:
// a late wake-up there is wall time the device sits idle.
//
// Threads: affects the calling thread only. Failure: none; a refusal
// leaves the priority as it was (it is a hint).
#ifndef IRONTUNE_DAEMON_BASE_THREAD_PRIORITY_H_
#define IRONTUNE_DAEMON_BASE_THREAD_PRIORITY_H_

namespace irontune {

// How much lower than the process's a helper thread runs: nice +10 gives
// it about a tenth of the CPU share of a thread at the process's nice.
inline constexpr int kHelperNiceness = 10;

// Lowers the calling thread's priority by kHelperNiceness (Linux: its own
// nice value, which setpriority keeps per thread).
void LowerThreadPriority();

// The calling thread's nice value.
int ThreadNiceness();

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_THREAD_PRIORITY_H_
