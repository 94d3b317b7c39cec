// What every irontune-client command is given: its output streams, the
// process environment it may consult, and the slot its work goes into.
// Commands register themselves on a CLI::App (AddFooCommands); CLI11 runs
// their callbacks while parsing, and those only store the work in `run`, so
// a usage error never half-runs a command.
//
// Single-threaded: everything here runs on the thread that calls RunClient.
#ifndef IRONTUNE_CLIENT_COMMAND_H_
#define IRONTUNE_CLIENT_COMMAND_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "client/environment.h"

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
  // Security (docs/security.md); empty: not given.
  std::string token_file;  // --token-file; else $IRONTUNE_TOKEN
  std::string tls_ca;      // --tls-ca: TLS, trusting this CA
  std::string tls_cert;    // --tls-cert, --tls-key: a client cert
  std::string tls_key;
  std::string tls_server_name;  // --tls-server-name
  bool tls = false;             // --tls: TLS with the system's CAs
};

// Where a command is registered and what it runs with. Everything here
// outlives the parse and the run (RunClient owns it); copies refer to the
// same objects.
struct CommandContext {
  const Streams& io;
  const ClientEnvironment& env;
  const RemoteFlags& remote;
  std::function<int()>* run;  // a command's callback stores its work here
};

// Registers subcommand `name` with its --help `description` on `parent`.
// When CLI11 selects it, `run` becomes the work in *ctx.run. Returns the
// subcommand, owned by `parent`, for its options.
CLI::App* AddCommand(CLI::App& parent, const CommandContext& ctx,
                     const std::string& name, const std::string& description,
                     std::function<int()> run);

// The paragraph command `name`'s --help opens with (client/help.cc holds
// them all); empty for a name it does not know.
std::string CommandHelp(std::string_view name);

// Registers the commands `Commands...` describe on `parent`, in that order,
// each with its CommandHelp. Each is a struct of the command's flags with
//   static constexpr char kName[];             // what the user types
//   void Bind(CLI::App& cmd);                  // binds the flags to options
//   int Run(const CommandContext& ctx) const;  // the work; returns ExitCode
// One object of each is created; it lives as long as `parent` does.
template <typename... Commands>
void AddCommands(CLI::App& parent, const CommandContext& ctx) {
  auto add = [&](auto command) {
    command->Bind(*AddCommand(parent, ctx, command->kName,
                              CommandHelp(command->kName),
                              [ctx, command] { return command->Run(ctx); }));
  };
  (add(std::make_shared<Commands>()), ...);
}

// Options several commands share. Each binds `*value`, which must outlive
// the parse, on `cmd`.

// The required positional MODEL: a recording.
void AddModelArg(CLI::App& cmd, std::string* value);

// The required positional JOB: a job id.
void AddJobArg(CLI::App& cmd, std::string* value);

// --json, described by `description`.
void AddJsonFlag(CLI::App& cmd, bool* value, const std::string& description);

// Prints `status` as the client's error line and returns kExitError.
int Fail(std::ostream& err, const absl::Status& status);

// Prints `message` as the client's error line and returns kExitUsage.
int UsageError(std::ostream& err, const std::string& message);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_COMMAND_H_
