// Running a command as a child process: a request on its stdin, its stdout
// and the tail of its stderr back, within a time limit.
//
// The child runs in a process group of its own, with the environment the
// options give (ours by default), an empty signal mask,
// default dispositions for the usual signals (irontuned ignores SIGPIPE and
// blocks SIGTERM/SIGINT; a child must not inherit that), and no descriptor
// of ours but its stdin, stdout and stderr. Its stdin is a socket, so that a
// child that stops reading never raises SIGPIPE in the caller.
//
// Threads: RunProcess is thread-safe; every call has its own pipes and
// child. It reaps only the child it started (waitpid on its pid).
#ifndef IRONTUNE_DAEMON_BASE_SUBPROCESS_H_
#define IRONTUNE_DAEMON_BASE_SUBPROCESS_H_

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace irontune {

struct ProcessOptions {
  // After this the whole process group is killed (SIGKILL).
  absl::Duration timeout = absl::Seconds(600);
  // More stdout than this kills the process group (stdout_overflow).
  size_t max_stdout = size_t{4} << 20;
  // How much of the end of stderr is kept.
  size_t stderr_keep = size_t{64} << 10;
  // When set and it turns true, the process group is killed within one
  // poll slice (stopped), e.g. as irontuned shuts down. Not owned; must
  // outlive the call.
  const std::atomic<bool>* stop = nullptr;
  // The child's whole environment, "NAME=value" entries; nullopt: ours.
  // (The program is looked up on our PATH either way.)
  std::optional<std::vector<std::string>> environment;
};

struct ProcessResult {
  bool exited = false;  // exited on its own; exit_code is its status
  int exit_code = -1;
  int term_signal = 0;           // the signal that ended it, when not exited
  bool timed_out = false;        // killed at the timeout
  bool stdout_overflow = false;  // killed for writing over max_stdout
  bool stopped = false;          // killed because `stop` turned true
  std::string out;               // stdout (at most max_stdout bytes)
  std::string err_tail;          // the last stderr_keep bytes of stderr
};

// Runs argv[0] (looked up on PATH when it has no '/') with `argv`, writes
// `input` to its stdin and closes it, and collects its output until it has
// exited and its stdout and stderr are closed, or until the timeout. Once
// the child has exited, what is left of its process group is killed.
// Errors: InvalidArgument for an empty argv; NotFound / PermissionDenied /
// Internal when the command cannot be started (naming it and why). A child
// that fails, crashes or times out is not an error: the result says so.
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         std::string_view input,
                                         const ProcessOptions& options);

// "exited with status 1", "killed by signal 11 (Segmentation fault)",
// "still running after 600s: killed", ...
std::string DescribeEnd(const ProcessResult& result,
                        const ProcessOptions& options);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_SUBPROCESS_H_
