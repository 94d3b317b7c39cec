// RunCommand: a small helper that runs a program with a time limit and
// captures what it prints. Used to run xrt-smi.
//
// Threads: any; each call forks its own child. Failure: Status, never
// throws.
#ifndef IRONTUNE_DAEMON_XRT_SUBPROCESS_H_
#define IRONTUNE_DAEMON_XRT_SUBPROCESS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace irontune {

struct CommandResult {
  int exit_code = 0;  // when it exited
  int signal = 0;     // when a signal ended it (then exit_code is -1)
  std::string out;    // stdout
  std::string err;    // stderr
};

// Runs argv[0] (looked up in PATH when it has no '/') with argv, stdin from
// /dev/null, and waits for it, at most `timeout`. Output beyond `max_bytes`
// per stream is dropped. REQUIRES: !argv.empty().
// NotFound when the program cannot be executed (naming it and why);
// DeadlineExceeded when it ran past `timeout` (it is killed, SIGKILL);
// Internal when pipes or fork fail. A non-zero exit is a result, not an
// error.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout,
                                         size_t max_bytes = 1 << 20);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_SUBPROCESS_H_
