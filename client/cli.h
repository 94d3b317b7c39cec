// irontune-client's command line. main.cc calls RunClient; tests call it
// with their own streams.
#ifndef IRONTUNE_CLIENT_CLI_H_
#define IRONTUNE_CLIENT_CLI_H_

#include <iosfwd>
#include <string>

namespace irontune {

// Exit codes, as `irontune-client --help` documents them.
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,
  kExitUsage = 2,
  kExitProfileChanged = 3,  // submit --check: the tuned profile differs
};

// What the client reads from its process rather than from argv; main.cc
// fills it, tests set it directly.
struct ClientEnvironment {
  // $IRONTUNE_SERVER; empty when unset.
  std::string server;
  // $IRONTUNE_TOKEN: the bearer token where --token-file is not given.
  std::string token;
  // $USER, sent as the request's client name unless --client says.
  std::string user;
  // Whether `err` is a terminal: progress is then a bar redrawn in place,
  // else one plain line per update.
  bool err_is_terminal = false;
  // The terminal's width in columns, bounding the progress bar.
  int terminal_width = 100;
};

// Parses argv and runs the command. Results go to `out`, errors and
// progress to `err`. Returns one of ExitCode.
int RunClient(int argc, const char* const* argv, std::ostream& out,
              std::ostream& err, const ClientEnvironment& env);

// The same with an empty environment.
int RunClient(int argc, const char* const* argv, std::ostream& out,
              std::ostream& err);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_CLI_H_
