// The test double of XRT, seen from a test: its scripted failures and what
// it saw. The double itself implements the XRT headers under include/xrt/
// (exactly the API irontune's daemon/xrt/ uses); README.md describes the
// design files it reads and the keys of IRONTUNE_FAKE_XRT_SCRIPT.
//
// Threads: every call is safe from any thread (one process-wide mutex).
#ifndef IRONTUNE_TESTS_FAKES_XRT_FAKE_XRT_H_
#define IRONTUNE_TESTS_FAKES_XRT_FAKE_XRT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fake_xrt {

// What a design file (the fake xclbin or ELF) says.
struct Design {
  std::string path;
  std::string uuid;    // 32 hex digits
  std::string kernel;  // "MLIR_AIE" (xclbin) or "main:sequence" (ELF)
  double run_us = 0;   // scripted device time of one run
};

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
};
StartedRun LastStarted();

}  // namespace fake_xrt

#endif  // IRONTUNE_TESTS_FAKES_XRT_FAKE_XRT_H_
