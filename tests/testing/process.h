// Subprocesses for end-to-end tests and the service benchmark: the real
// irontuned and irontune-client binaries, started with posix_spawn, their
// output captured to files and read back (whole, or waiting for a line).
#ifndef IRONTUNE_TESTS_TESTING_PROCESS_H_
#define IRONTUNE_TESTS_TESTING_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace irontune::e2e {

// A child process. Killed (SIGKILL) and reaped on destruction if still
// running. Not thread-safe.
class Process {
 public:
  // Starts `argv[0]` with `argv`, stdout and stderr to files under `dir`
  // named after `name`. Extra environment entries ("K=V") are added.
  Process(const std::string& name, const std::vector<std::string>& argv,
          const std::string& dir, const std::vector<std::string>& env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Waits up to `seconds` for the exit; returns true once exited.
  bool Wait(double seconds);
  // The exit code, or 128 + signal; -1 while running.
  int exit_code() const { return exit_code_; }
  std::string Stdout() const;
  std::string Stderr() const;
  // Waits up to `seconds` for a line of stderr containing `text` and
  // returns it (without its newline); "" if the child exits or the time
  // ends first.
  std::string WaitForStderrLine(const std::string& text, double seconds);

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string out_path_;
  std::string err_path_;
};

// Runs a command to completion (at most `seconds`) and returns it.
struct Result {
  int code;
  std::string out;
  std::string err;
};
Result Run(const std::vector<std::string>& argv, const std::string& dir,
           double seconds = 120, const std::vector<std::string>& env = {});

// The address irontuned serves on that starts with `prefix` (as
// "127.0.0.1:" for --listen 127.0.0.1:0, whose port the daemon picks), read
// from its start-up line on stderr ("irontuned ... serving ... on ADDR[,
// ADDR...]; state in DIR"), waiting up to `seconds` for the line. "" if the
// line or such an address does not come. REQUIRES: irontuned runs with
// --log-level info (or more).
std::string WaitForServingAddress(Process& irontuned, const std::string& prefix,
                                  double seconds = 30);

// A fresh, empty directory under the system temp dir.
// The figure in KiB of `field` ("VmRSS", "VmHWM", ...) in
// /proc/PID/status, or -1 when it cannot be read.
long ProcStatusKib(pid_t pid, const std::string& field);

std::string TempDir(const std::string& tag);

// Reads a whole file ("" if absent).
std::string ReadFile(const std::string& path);

}  // namespace irontune::e2e

#endif  // IRONTUNE_TESTS_TESTING_PROCESS_H_
