// Shared by the commands that talk to irontuned: where the daemon is, how
// long a call may take, and how a failed call is told to the user.
// Pure functions; thread-safe.
#ifndef IRONTUNE_CLIENT_REMOTE_H_
#define IRONTUNE_CLIENT_REMOTE_H_

#include <string>

#include "absl/status/status.h"
#include "client/command.h"

namespace irontune {

inline constexpr char kDefaultServer[] = "unix:/run/irontune/irontuned.sock";

// Default deadlines, in seconds (0: none), where --timeout is not given.
inline constexpr double kUnaryTimeoutS = 10;     // status, jobs, cancel, ...
inline constexpr double kDetachTimeoutS = 30;    // submit --detach: the job id
inline constexpr double kMeasureTimeoutS = 600;  // measure: queue + timing
inline constexpr double kCacheTimeoutS = 300;    // cache export / import
inline constexpr double kAutotuneTimeoutS = 0;   // submit, watch: none

// The daemon's address: --server, else $IRONTUNE_SERVER, else
// kDefaultServer.
std::string ResolveServer(const std::string& flag, const std::string& env);

// --timeout if given (>= 0; 0 means no deadline), else `default_s`.
double ResolveTimeout(double flag_s, double default_s);

// A message for a failed call to `server`: for a daemon that is not
// there, how to start it; for a refused request, the daemon's message
// (which starts with the field path, e.g. calls[0].recording.steps[3].op);
// else the code and the message. One or more lines, without a trailing
// newline and without the "irontune-client: " prefix.
std::string DescribeRpcError(const absl::Status& status,
                             const std::string& server);

// Prints DescribeRpcError and returns kExitError.
int FailRpc(std::ostream& err, const absl::Status& status,
            const std::string& server);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_REMOTE_H_
