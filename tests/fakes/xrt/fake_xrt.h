// The test double of XRT, seen from a test: its scripted failures and what
// it saw. The double itself implements the XRT headers under include/xrt/
// (exactly the API irontune's daemon/xrt/ uses); README.md describes the
// design files it reads and the keys of IRONTUNE_FAKE_XRT_SCRIPT.
//
// Threads: every call is safe from any thread (one process-wide mutex).
#ifndef IRONTUNE_TESTS_FAKES_XRT_FAKE_XRT_H_
#define IRONTUNE_TESTS_FAKES_XRT_FAKE_XRT_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fake_xrt {

// What a design file (the fake xclbin or ELF) says.
struct Design {
  std::string path;
  std::string uuid;    // 32 hex digits
  std::string kernel;  // "MLIR_AIE" (xclbin) or "main:sequence" (ELF)
  double run_us = 0;   // scripted device time of one run
  // Per data buffer argument of a step, in argument order: "in" (the host
  // fills it), "out" (the run writes it), "inout" (both) or "none". Empty:
  // the run writes nothing.
  std::vector<std::string> io;
  bool wrong_output = false;  // the outputs are off (a broken setting)
  int scratchpad_words = 0;   // ELF: its ctrl scratchpad's 32-bit words
};

// What a run writes into its output buffer at `position` (0-based among
// the step's data buffer arguments) of `nbytes` bytes, from its input
// buffers (those marked "in", in argument order): a deterministic mix of
// them, so equal inputs give equal outputs whatever the setting, and a
// wrong-output design something else.
std::string Output(const std::vector<std::string_view>& inputs, size_t nbytes,
                   int position, bool wrong);

// The double's clock. A run's device time passes on it: in the "virtual"
// clock mode (the default) wait() moves it on by what is left of that time
// at once, so the clock reads steady_clock plus every wait skipped so far;
// in the "real" mode wait() sleeps and the clock is steady_clock.
// irontune's XRT backend reads its timed span from it (SpanClockNow()).
std::chrono::steady_clock::time_point Now();
// The time the virtual clock has been moved on since Reset.
std::chrono::nanoseconds Skipped();

// Forgets every count and event and reads the script again from
// IRONTUNE_FAKE_XRT_SCRIPT (none: no failures). Throws std::runtime_error
// for a script that is not valid JSON or has an unknown key.
void Reset();

// Hardware contexts alive now, runs started, buffers allocated since Reset.
int LiveContexts();
int64_t Runs();
int64_t BoAllocations();

// What happened, in order, since Reset (the last 10000 events): "bo N",
// "sync_to_device N", "sync_from_device N", "start", "wait", "wait2".
std::vector<std::string> Events();

// The arguments of the last run started: scalars by index, buffer ids by
// index, and the instruction words as they were at start (xclbin chain).
struct StartedRun {
  std::map<int, int64_t> scalars;
  std::map<int, int> buffers;
  std::vector<uint32_t> insts;
  std::string kernel;
  // ELF: the run's ctrl scratchpad as last synced to the device, when the
  // run has one.
  std::vector<uint32_t> scratchpad;
};
StartedRun LastStarted();

}  // namespace fake_xrt

#endif  // IRONTUNE_TESTS_FAKES_XRT_FAKE_XRT_H_
