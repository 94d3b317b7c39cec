// irontune-client's command line. main.cc calls RunClient; tests call it
// with their own streams.
#ifndef IRONTUNE_CLIENT_CLI_H_
#define IRONTUNE_CLIENT_CLI_H_

#include <iosfwd>

#include "client/environment.h"

namespace irontune {

// Parses argv and runs the command. Results go to `out`, errors and
// progress to `err`. Returns one of ExitCode.
int RunClient(int argc, const char* const* argv, std::ostream& out,
              std::ostream& err, const ClientEnvironment& env);

// The same with an empty environment.
int RunClient(int argc, const char* const* argv, std::ostream& out,
              std::ostream& err);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_CLI_H_
