// What every command of irontune-client shares that is not its flags: the
// exit codes and what the client reads from its process rather than from
// argv. A plain types header: commands include it, not the command line.
#ifndef IRONTUNE_CLIENT_ENVIRONMENT_H_
#define IRONTUNE_CLIENT_ENVIRONMENT_H_

#include <string>

namespace irontune {

// Exit codes, as `irontune-client --help` documents them.
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,
  kExitUsage = 2,
  kExitProfileChanged = 3,  // submit --check: an entry's gain clears the
                            // --check-min-gain
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

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_ENVIRONMENT_H_
