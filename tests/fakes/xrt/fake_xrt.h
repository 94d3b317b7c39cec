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
  bool elf = false;
  std::string uuid;    // 32 hex digits
  std::string kernel;  // an xclbin's kernel; an ELF's "main:sequence"
  // The kernel's arguments: an xclbin's (mlir-aie's MLIR_AIE kernel: opcode,
  // instructions, their count, 5 buffers), an ELF's global pointers (its
  // arenas); and an ELF's scalar arguments, which XRT refuses.
  int args = 0;
  int scalar_args = 0;
  int columns = 1;    // the partition's width it needs
  double run_us = 0;  // scripted device time of one run
  // xclbin: per data buffer argument (3..) in order, "in" (the host fills
  // it), "out" (the run writes it), "inout" (both) or "none". Empty: the
  // run writes nothing.
  std::vector<std::string> io;
  // ELF: the operator buffers a run reads and writes, as views of its
  // arena arguments.
  struct View {
    int arena = 0;
    uint64_t offset = 0;
    uint64_t nbytes = 0;
    std::string io;  // as above
  };
  std::vector<View> views;
  bool wrong_output = false;  // the outputs are off (a broken setting)
  int scratchpad_words = 0;   // ELF: its ctrl scratchpad's 32-bit words
};

// The bytes of a fake design file holding `json` (README.md, "Design
// files"): an xclbin is "xclbin2\0" then the text; an ELF a 64-byte ELF
// header (class ELFCLASS32, OS/ABI 69 aie2p unless given) then the text.
std::string XclbinFile(const std::string& json);
std::string ElfFile(const std::string& json, unsigned char os_abi = 69,
                    unsigned char elf_class = 1);

// What a run writes into its output buffer at `position` (0-based among
// an xclbin step's data buffer arguments, or among an ELF's views) of
// `nbytes` bytes, from its input buffers (those marked "in", in order): a
// deterministic mix of them, so equal inputs give equal outputs whatever
// the setting, and a wrong-output design something else.
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
// "sync_to_device N OFFSET SIZE", "sync_from_device N OFFSET SIZE",
// "clone N M" (XRT's copy of a buffer in the wrong memory group), "start",
// "wait", "wait2", "timeout" (a wait that timed out), "abort", "destroyed
// in progress" (a run destroyed while its command ran).
std::vector<std::string> Events();

// The arguments of the last run started: scalars by index (as many bytes
// as the argument declares: XRT truncates silently), buffer ids by index,
// and the instruction words on the device at start (xclbin chain).
struct StartedRun {
  std::map<int, int64_t> scalars;
  std::map<int, int> buffers;
  std::vector<uint32_t> insts;
  std::string kernel;
  // ELF: the run's ctrl scratchpad on the device at start, when it has one.
  std::vector<uint32_t> scratchpad;
};
StartedRun LastStarted();

}  // namespace fake_xrt

#endif  // IRONTUNE_TESTS_FAKES_XRT_FAKE_XRT_H_
