// A daemon under test: irontuned (or a build of it, such as
// irontuned-fake-xrt) started as a subprocess, waited for until it answers
// `irontune-client status`, talked to through irontune-client, and stopped
// with SIGTERM. The one fixture the end-to-end tests start daemons with;
// header-only, so it adds nothing to irontune::testing's link.
//
// Every wait is bounded: a daemon that never answers makes Up() false, it
// never hangs a test. Not thread-safe.
#ifndef IRONTUNE_TESTS_TESTING_DAEMON_PROCESS_H_
#define IRONTUNE_TESTS_TESTING_DAEMON_PROCESS_H_

#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/testing/process.h"

namespace irontune::e2e {

// The argv of an irontuned on the simulated NPU: `daemon` (its binary) on
// state dir `state_dir`, listening on `listen`, its clock `clock`
// ("virtual" or "realtime"), logging at info (so WaitForServingAddress
// works), then `extra`.
inline std::vector<std::string> SimDaemonArgv(
    const std::string& daemon, const std::string& state_dir,
    const std::string& listen, const std::string& clock = "virtual",
    const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {daemon,     "--state-dir", state_dir,
                                   "--listen", listen,        "--sim-clock",
                                   clock,      "--log-level", "info"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

class DaemonProcess {
 public:
  // Starts `argv` (argv[0] the daemon's binary) with its output under
  // `dir`, reached by `client` (irontune-client's binary) at `server` (as
  // --server takes it, e.g. "unix:DIR/sock"). Check process().started(),
  // then Up().
  DaemonProcess(const std::string& name, const std::vector<std::string>& argv,
                std::string dir, std::string client, std::string server)
      : dir_(std::move(dir)),
        client_(std::move(client)),
        server_(std::move(server)),
        process_(std::make_unique<Process>(name, argv, dir_)) {}
  // SIGTERM, and up to 15 s for it to exit (then Process kills it).
  ~DaemonProcess() {
    if (process_->started() && process_->exit_code() < 0) {
      process_->Signal(SIGTERM);
      process_->Wait(15);
    }
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Waits up to `seconds` until `status` answers; false when the daemon
  // exits first or the time ends.
  bool Up(double seconds = 15) {
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (Client({"--timeout", "1", "status"}, 10).code == 0) return true;
      if (!process_->started() || process_->Wait(0)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // irontune-client --server SERVER ARGS, run to its end (at most
  // `seconds`).
  Result Client(std::vector<std::string> args, double seconds = 300) const {
    args.insert(args.begin(), {client_, "--server", server_});
    return Run(args, dir_, seconds);
  }
  // The same, started and left running.
  std::unique_ptr<Process> StartClient(std::vector<std::string> args) const {
    args.insert(args.begin(), {client_, "--server", server_});
    return std::make_unique<Process>("client", args, dir_);
  }

  // SIGTERM, then up to `seconds` for the exit: its code, or -1 when it
  // has not exited.
  int Stop(double seconds = 15) {
    process_->Signal(SIGTERM);
    return process_->Wait(seconds) ? process_->exit_code() : -1;
  }

  Process& process() { return *process_; }
  const Process& process() const { return *process_; }
  const std::string& server() const { return server_; }
  const std::string& dir() const { return dir_; }
  std::string Log() const { return process_->Stderr(); }

 private:
  std::string dir_;
  std::string client_;
  std::string server_;
  std::unique_ptr<Process> process_;
};

}  // namespace irontune::e2e

#endif  // IRONTUNE_TESTS_TESTING_DAEMON_PROCESS_H_
