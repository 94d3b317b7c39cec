// What irontuned reads from and asks of `xrt-smi`, XRT's device tool:
//
//   xrt-smi examine -d BDF -r platform                     -> name, power mode
//   xrt-smi examine -d BDF -r aie-partitions -f JSON -o F  -> who holds
//   contexts xrt-smi configure -d BDF --pmode MODE                  -> sets the
//   power mode
//
// `-d BDF` names the NPU the daemon holds (XrtSmiOptions::bdf): without it
// xrt-smi reports on its first device, whichever NPU xrt:N is.
//
// The parsers are pure and tested on captured output
// (tests/xrt/testdata/). XrtSmi runs the program (its path configurable,
// so tests use tests/fakes/xrt/xrt-smi) with a time limit.
//
// Threads: the parsers any; an XrtSmi from one thread at a time.
#ifndef IRONTUNE_DAEMON_XRT_XRT_SMI_H_
#define IRONTUNE_DAEMON_XRT_XRT_SMI_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "daemon/npu/device.h"

namespace irontune {

// The two fields of the platform report irontune needs.
struct SmiPlatform {
  std::string name;  // as reported: "NPU Strix", "RyzenAI-npu4"
  PowerMode power_mode = PowerMode::kDefault;
  // False when the report says "not supported" (XRT prints that where the
  // driver answers no power mode query: core/common/info_platform.cpp
  // add_performance_info @ 202510.2.19.194 and master 963c58ee). The NPU
  // then clocks itself as in the default mode, so power_mode is kDefault,
  // and no mode can be set (XrtSmi::SetPowerMode refuses).
  bool power_mode_supported = true;
};

// Parses `xrt-smi examine -r platform`'s text. Keys are matched without
// regard to case or the padding before the colon; values are trimmed; the
// device banner ("[0000:c5:00.1] : NPU Strix") is not a field. The first
// "Name" and the first "Power Mode" win. InvalidArgument naming the field
// that is missing or the power mode that is unknown.
absl::StatusOr<SmiPlatform> ParsePlatformReport(absl::string_view text);

// Parses `xrt-smi examine -r aie-partitions -f JSON`'s file: the pids of
// every hardware context (devices[].aie_partitions.partitions[]
// .hw_contexts[].pid), without `own_pid`, sorted and unique. The file is
// read as XRT writes it, with Boost's property-tree JSON writer
// (tools/common/XBHelpMenus.cpp, reports/ReportAiePartitions.cpp @
// 202510.2.19.194 and master): every value is a string ("pid": "4242"),
// and an empty list or object is the empty string (an idle NPU's
// "partitions": ""). Numbers are taken too. A report with no partitions
// is no holders. InvalidArgument naming the path in the JSON for anything
// malformed.
absl::StatusOr<std::vector<int>> ParseAiePartitions(absl::string_view json,
                                                    int own_pid);

// The one platform name an NPU is known by, whichever name its driver
// reports (docs/npu-box.md, "NPU names"): the in-tree amdxdna driver and
// the out-of-tree one before 2025-03 report "RyzenAI-npu1", "-npu2",
// "-npu4", "-npu5", "-npu6"; the out-of-tree one since then "NPU Phoenix",
// "NPU Strix", "NPU Strix Halo", "NPU Kracken" (2025-03 to 2025-04), "NPU
// Krackan", and since 2026-01 the board's own name from its firmware ("NPU
// Krackan 1", "NPU Gorgon Point 2"). Each maps to the name today's driver
// gives that NPU, spelled as it spells it; a board's number is kept, as
// it names another board than the family name does. Case and spacing do
// not matter. The cache partitions on this name (daemon/store), so one
// NPU keeps one cache across drivers. InvalidArgument naming the name for
// one that is no NPU irontune drives (the AIE4 "RyzenAI-npu3", "-npu7"..).
absl::StatusOr<std::string> CanonicalNpuName(absl::string_view reported);

// The platform facts a name implies (docs/npu-facts.md): its canonical
// name (CanonicalNpuName), generation, usable columns, hardware contexts,
// full-ELF support, and the AIE clock at `mode` (the top clock for
// default, which is dynamic: an upper bound). InvalidArgument for a name
// that is no known NPU.
absl::StatusOr<Platform> PlatformOf(const SmiPlatform& smi);

struct XrtSmiOptions {
  // The program (irontuned's --xrt-smi); found in PATH when it has no
  // '/'. "": $XILINX_XRT/bin/xrt-smi, else /opt/xilinx/xrt/bin/xrt-smi,
  // whichever exists, else "xrt-smi".
  std::string path;
  absl::Duration timeout = absl::Seconds(30);
  // Where aie-partitions writes its JSON; "" picks a file under
  // $TMPDIR (or /tmp) named after the pid.
  std::string scratch_file;
  // The PCI BDF of the NPU ("0000:c5:00.1", as XRT's
  // xrt::info::device::bdf gives it): every command runs with `-d BDF`.
  // "": without -d, so xrt-smi picks its first device.
  std::string bdf;
};

class XrtSmi {
 public:
  explicit XrtSmi(XrtSmiOptions options);

  // `examine -r platform`, parsed. The program's failure (not found,
  // timed out, exited non-zero: with its output) or the parser's.
  absl::StatusOr<SmiPlatform> ExaminePlatform();
  // `examine -r aie-partitions -f JSON -o FILE`, parsed without own_pid.
  absl::StatusOr<std::vector<int>> HolderPids(int own_pid);
  // `configure --pmode MODE`. FailedPrecondition when the platform report
  // says the power mode is "not supported" (asked first), and for turbo
  // while any process holds a context (naming the pids; the NPU refuses it
  // too). Errors of the program name it and carry its output.
  absl::Status SetPowerMode(PowerMode mode);

  const XrtSmiOptions& options() const { return options_; }

 private:
  // Runs `subcommand [-d BDF] args...`.
  absl::StatusOr<std::string> Run(const std::string& subcommand,
                                  const std::vector<std::string>& args);
  XrtSmiOptions options_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_XRT_SMI_H_
