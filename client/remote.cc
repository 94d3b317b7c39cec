#include "client/remote.h"

#include <ostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/rpc.h"

namespace irontune {

std::string ResolveServer(const std::string& flag, const std::string& env) {
  if (!flag.empty()) return flag;
  if (!env.empty()) return env;
  return kDefaultServer;
}

double ResolveTimeout(double flag_s, double default_s) {
  return flag_s >= 0 ? flag_s : default_s;
}

std::string DescribeRpcError(const absl::Status& status,
                             const std::string& server) {
  const std::string message(status.message());
  if (IsNotConnected(status)) {
    return absl::StrCat(
        "cannot reach irontuned at ", server, " (", message, ").\n",
        "Is the daemon running? Start it with `systemctl start irontuned`, "
        "or by hand with\n  irontuned --state-dir /var/lib/irontune "
        "--listen ",
        server,
        "\nor point the client elsewhere with --server or "
        "IRONTUNE_SERVER.");
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return absl::StrCat("irontuned refused the request: ", message);
    case absl::StatusCode::kDeadlineExceeded:
      return absl::StrCat("irontuned at ", server,
                          " did not finish before the deadline (", message,
                          "); raise --timeout, or 0 for none");
    case absl::StatusCode::kResourceExhausted:
      // The queue, a quota, a limit or the state dir's disk: the message
      // says which.
      return absl::StrCat("irontuned: not enough room: ", message);
    case absl::StatusCode::kNotFound:
      return absl::StrCat("irontuned: ", message);
    default:
      return absl::StrCat(
          "irontuned: ", absl::StatusCodeToString(status.code()), ": ",
          message);
  }
}

std::string DescribeJobRpcError(const absl::Status& status,
                                const std::string& server,
                                const std::string& job_id) {
  if (job_id.empty() || !IsNotConnected(status)) {
    return DescribeRpcError(status, server);
  }
  return absl::StrCat(
      "irontuned at ", server, " went away while job ", job_id, " ran (",
      status.message(),
      "); the job is lost. Once irontuned is back, "
      "`irontune-client jobs` shows it as interrupted. Submit it again: it "
      "resumes from the cache, and what it had timed is not timed again.");
}

int FailRpc(std::ostream& err, const absl::Status& status,
            const std::string& server) {
  err << "irontune-client: " << DescribeRpcError(status, server) << "\n";
  return kExitError;
}

Daemon::Daemon(const CommandContext& ctx, double default_timeout_s)
    : err_(ctx.io.err),
      server_(ResolveServer(ctx.remote.server, ctx.env.server)),
      timeout_s_(ResolveTimeout(ctx.remote.timeout_s, default_timeout_s)),
      tuner_(ConnectTuner(server_)) {}

int Daemon::Fail(const absl::Status& status) const {
  return FailRpc(err_, status, server_);
}

int Daemon::FailJob(const absl::Status& status,
                    const std::string& job_id) const {
  err_ << "irontune-client: " << DescribeJobRpcError(status, server_, job_id)
       << "\n";
  return kExitError;
}

}  // namespace irontune
