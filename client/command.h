// What every irontune-client command is given: its output streams, the
// process environment it may consult, and the slot its work goes into.
// Commands register themselves on a CLI::App (AddFooCommands); CLI11 runs
// their callbacks while parsing, and those only store the work in `run`, so
// a usage error never half-runs a command.
#ifndef IRONTUNE_CLIENT_COMMAND_H_
#define IRONTUNE_CLIENT_COMMAND_H_

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "client/cli.h"

namespace CLI {
class App;
}  // namespace CLI

namespace irontune {

struct Streams {
  std::ostream& out;  // results
  std::ostream& err;  // errors and progress
};

// Options every command that talks to irontuned shares. Filled by
// CLI11 from the top-level --server and --timeout.
struct RemoteFlags {
  std::string server;     // --server; empty: IRONTUNE_SERVER, then default
  double timeout_s = -1;  // --timeout; < 0: the command's default
};

// Where a command is registered and what it runs with. Everything here
// outlives the parse and the run (RunClient owns it).
struct CommandContext {
  const Streams& io;
  const ClientEnvironment& env;
  const RemoteFlags& remote;
  std::function<int()>* run;  // a command's callback stores its work here
};

// Prints `status` as the client's error line and returns kExitError.
int Fail(std::ostream& err, const absl::Status& status);

// Prints `message` as the client's error line and returns kExitUsage.
int UsageError(std::ostream& err, const std::string& message);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_COMMAND_H_
