// Shared by the commands that talk to irontuned: where the daemon is, how
// long a call may take, and how a failed call is told to the user.
// The free functions are pure and thread-safe; a Daemon belongs to one
// command run, on one thread.
#ifndef IRONTUNE_CLIENT_REMOTE_H_
#define IRONTUNE_CLIENT_REMOTE_H_

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/command.h"
#include "client/rpc.h"

namespace CLI {
class App;
}  // namespace CLI

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

// Whether `server` is on this box by its spelling: "unix:PATH",
// "unix-abstract:NAME", or host:port whose host is localhost, an address in
// 127.0.0.0/8, or ::1 ("[::1]:port"). Anything else, gRPC URIs such as
// "dns:///localhost:1" or "ipv4:127.0.0.1:1" included, counts as remote.
bool IsSameHostServer(const std::string& server);

// Registers the top-level --token-file, --tls, --tls-ca, --tls-cert,
// --tls-key and --tls-server-name on `app`, bound to `*remote`.
void AddSecurityFlags(CLI::App& app, RemoteFlags* remote);

// The token (--token-file's first line, else $IRONTUNE_TOKEN, stripped)
// and TLS material (the files read) `remote` asks for to reach `server`.
// Any of --tls, --tls-ca, --tls-cert, --tls-key and --tls-server-name means
// TLS. InvalidArgument naming the flag and file when one cannot be read or
// is empty, or when only one of --tls-cert and --tls-key is given; and,
// for a token without TLS to a server that is not IsSameHostServer, one
// that says to add --tls-ca or --tls: a token never goes in clear.
absl::StatusOr<ConnectOptions> ResolveConnectOptions(
    const std::string& server, const RemoteFlags& remote,
    const ClientEnvironment& env);

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

// As DescribeRpcError, but when the connection to the daemon was lost while
// job `job_id` (non-empty) ran: which job was lost, that `jobs` shows it
// interrupted, and that a resubmit resumes from the cache.
std::string DescribeJobRpcError(const absl::Status& status,
                                const std::string& server,
                                const std::string& job_id);

// irontuned as one command run reaches it: its address (ResolveServer of
// --server and $IRONTUNE_SERVER), a connection, and the timeout for its
// calls (ResolveTimeout of --timeout and the command's default). The
// connection is made lazily, so constructing a Daemon never fails.
// Refers to `ctx`'s error stream, which must outlive it.
class Daemon {
 public:
  Daemon(const CommandContext& ctx, double default_timeout_s);

  TunerConnection& tuner() const { return *tuner_; }
  double timeout_s() const { return timeout_s_; }

  // Prints the failed call's DescribeRpcError and returns kExitError.
  int Fail(const absl::Status& status) const;
  // Prints DescribeJobRpcError for a call following job `job_id` ("" when
  // not known yet) and returns kExitError.
  int FailJob(const absl::Status& status, const std::string& job_id) const;

 private:
  // ConnectTuner with ResolveConnectOptions, or a FailingConnection with
  // its error.
  static std::unique_ptr<TunerConnection> Connect(const std::string& server,
                                                  const CommandContext& ctx);

  std::ostream& err_;
  const std::string server_;
  const double timeout_s_;
  const std::unique_ptr<TunerConnection> tuner_;
};

// A unary method of TunerConnection.
template <typename Request, typename Response>
using UnaryMethod = absl::StatusOr<Response> (TunerConnection::*)(
    const Request& request, double timeout_s);

// Calls `method` with `request` under --timeout, else kUnaryTimeoutS. On
// success prints `text(response)` (a std::string) to stdout and returns
// kExitOk; on failure prints it as Daemon::Fail does and returns
// kExitError.
template <typename Request, typename Response, typename Text>
int CallAndPrint(const CommandContext& ctx,
                 UnaryMethod<Request, Response> method, const Request& request,
                 const Text& text) {
  const Daemon daemon(ctx, kUnaryTimeoutS);
  absl::StatusOr<Response> response =
      (daemon.tuner().*method)(request, daemon.timeout_s());
  if (!response.ok()) return daemon.Fail(response.status());
  ctx.io.out << text(*response);
  return kExitOk;
}

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_REMOTE_H_
