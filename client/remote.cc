#include "client/remote.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <ostream>
#include <sstream>

#include "absl/strings/ascii.h"
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

namespace {

// The text of `path`, given as `flag`; InvalidArgument when it cannot be
// read or is empty.
absl::StatusOr<std::string> ReadGiven(const std::string& flag,
                                      const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": cannot be read, or is empty"));
  }
  return text.str();
}

}  // namespace

bool IsSameHostServer(const std::string& server) {
  if (absl::StartsWith(server, "unix:") ||
      absl::StartsWith(server, "unix-abstract:")) {
    return true;
  }
  std::string host;
  if (absl::StartsWith(server, "[")) {  // [v6]:port
    const size_t close = server.find(']');
    if (close == std::string::npos) return false;
    host = server.substr(1, close - 1);
  } else {
    host = server.substr(0, server.rfind(':'));
  }
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 &&
         IN6_IS_ADDR_LOOPBACK(&v6);
}

void AddSecurityFlags(CLI::App& app, RemoteFlags* remote) {
  app.add_option("--token-file", remote->token_file,
                 "a file whose first line is the bearer token irontuned "
                 "knows you by (default: $IRONTUNE_TOKEN). A token is sent "
                 "only over TLS, a unix socket or loopback: to another "
                 "host:port without --tls-ca or --tls it is refused");
  app.add_flag("--tls", remote->tls,
               "connect with TLS, trusting the system's CAs (implied by "
               "any other --tls-* flag)");
  app.add_option("--tls-ca", remote->tls_ca,
                 "connect with TLS, trusting the CA in this PEM file");
  app.add_option("--tls-cert", remote->tls_cert,
                 "a PEM client certificate, for a daemon that asks for one "
                 "(with --tls-key)");
  app.add_option("--tls-key", remote->tls_key,
                 "the PEM private key of --tls-cert");
  app.add_option("--tls-server-name", remote->tls_server_name,
                 "connect with TLS, checking that the daemon's certificate "
                 "carries this name, where it is not the --server host (e.g. "
                 "localhost)");
}

absl::StatusOr<ConnectOptions> ResolveConnectOptions(
    const std::string& server, const RemoteFlags& remote,
    const ClientEnvironment& env) {
  ConnectOptions options;
  if (!remote.token_file.empty()) {
    absl::StatusOr<std::string> text =
        ReadGiven("--token-file", remote.token_file);
    if (!text.ok()) return text.status();
    options.token = std::string(absl::StripAsciiWhitespace(
        absl::string_view(*text).substr(0, text->find('\n'))));
    if (options.token.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--token-file ", remote.token_file, ": its first line is empty"));
    }
  } else {
    options.token = std::string(absl::StripAsciiWhitespace(env.token));
  }
  options.tls = remote.tls || !remote.tls_ca.empty() ||
                !remote.tls_cert.empty() || !remote.tls_key.empty() ||
                !remote.tls_server_name.empty();
  options.tls_server_name = remote.tls_server_name;
  if (!options.token.empty() && !options.tls && !IsSameHostServer(server)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not sending the token (",
        remote.token_file.empty() ? "IRONTUNE_TOKEN" : "--token-file", ") to ",
        server,
        " in clear: add --tls-ca FILE (or --tls, trusting the system's CAs) "
        "for a daemon serving TLS, or reach the daemon on its unix socket or "
        "on loopback (docs/security.md)"));
  }
  if (remote.tls_cert.empty() != remote.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs both --tls-cert and --tls-key");
  }
  const std::pair<const char*, std::pair<const std::string*, std::string*>>
      files[] = {
          {"--tls-ca", {&remote.tls_ca, &options.tls_ca_pem}},
          {"--tls-cert", {&remote.tls_cert, &options.tls_cert_pem}},
          {"--tls-key", {&remote.tls_key, &options.tls_key_pem}},
      };
  for (const auto& [flag, paths] : files) {
    if (paths.first->empty()) continue;
    absl::StatusOr<std::string> pem = ReadGiven(flag, *paths.first);
    if (!pem.ok()) return pem.status();
    *paths.second = *std::move(pem);
  }
  return options;
}

std::string DescribeRpcError(const absl::Status& status,
                             const std::string& server) {
  const std::string message(status.message());
  if (IsSetupError(status)) return message;
  if (IsNotConnected(status)) {
    return absl::StrCat(
        "cannot reach irontuned at ", server, " (", message, ").\n",
        "Is the daemon running? Start it with `systemctl start irontuned`, "
        "or by hand with\n  irontuned --state-dir /var/lib/irontune "
        "--listen ",
        server,
        "\nor point the client elsewhere with --server or "
        "IRONTUNE_SERVER.",
        absl::StartsWith(server, "unix:")
            ? ""
            : "\nA daemon serving TLS needs --tls-ca (or --tls).");
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
    case absl::StatusCode::kUnauthenticated:
      return absl::StrCat(
          "irontuned does not know you: ", message,
          "\nGive the token it gave you with --token-file FILE or "
          "IRONTUNE_TOKEN (docs/security.md).");
    case absl::StatusCode::kPermissionDenied:
      return absl::StrCat("irontuned: permission denied: ", message);
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
      tuner_(Connect(server_, ctx)) {}

std::unique_ptr<TunerConnection> Daemon::Connect(const std::string& server,
                                                 const CommandContext& ctx) {
  absl::StatusOr<ConnectOptions> options =
      ResolveConnectOptions(server, ctx.remote, ctx.env);
  if (!options.ok()) return FailingConnection(options.status());
  return ConnectTuner(server, *options);
}

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
