// What irontuned reads from and asks of `xrt-smi`, XRT's device tool:
//
//   xrt-smi examine -r platform                      -> name, power mode
//   xrt-smi examine -r aie-partitions -f JSON -o F   -> who holds contexts
//   xrt-smi configure --pmode MODE                   -> sets the power mode
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
  std::string name;  // "NPU Strix"
  PowerMode power_mode = PowerMode::kDefault;
};

// Parses `xrt-smi examine -r platform`'s text. Keys are matched without
// regard to case or the padding before the colon; values are trimmed; the
// device banner ("[0000:c5:00.1] : NPU Strix") is not a field. The first
// "Name" and the first "Power Mode" win. InvalidArgument naming the field
// that is missing or the power mode that is unknown.
absl::StatusOr<SmiPlatform> ParsePlatformReport(absl::string_view text);

// Parses `xrt-smi examine -r aie-partitions -f JSON`'s file: the pids of
// every hardware context (devices[].aie_partitions.partitions[]
// .hw_contexts[].pid, as text or number), without `own_pid`, sorted and
// unique. A report with no partitions is no holders. InvalidArgument
// naming the path in the JSON for anything malformed.
absl::StatusOr<std::vector<int>> ParseAiePartitions(absl::string_view json,
                                                    int own_pid);

// The platform facts a name implies (docs/npu-facts.md): generation,
// usable columns, hardware contexts, full-ELF support, and the AIE clock
// at `mode` (the top clock for default, which is dynamic: an upper bound).
// InvalidArgument for a name that is no known NPU.
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
};

class XrtSmi {
 public:
  explicit XrtSmi(XrtSmiOptions options);

  // `examine -r platform`, parsed. The program's failure (not found,
  // timed out, exited non-zero: with its output) or the parser's.
  absl::StatusOr<SmiPlatform> ExaminePlatform();
  // `examine -r aie-partitions -f JSON -o FILE`, parsed without own_pid.
  absl::StatusOr<std::vector<int>> HolderPids(int own_pid);
  // `configure --pmode MODE`. Turbo is refused while any process holds a
  // context (FailedPrecondition naming the pids; the NPU refuses it too).
  // Errors of the program name it and carry its output.
  absl::Status SetPowerMode(PowerMode mode);

  const XrtSmiOptions& options() const { return options_; }

 private:
  absl::StatusOr<std::string> Run(const std::vector<std::string>& args);
  XrtSmiOptions options_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_XRT_SMI_H_
