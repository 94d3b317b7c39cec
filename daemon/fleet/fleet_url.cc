#include "daemon/fleet/fleet_url.h"

#include <libpq-fe.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace irontune {
namespace {

using Fields = std::map<std::string, std::string>;

// The fields `url` sets, or libpq's reason it does not parse.
absl::StatusOr<Fields> ParseFields(std::string_view url) {
  char* error = nullptr;
  const std::string text(url);
  PQconninfoOption* options = PQconninfoParse(text.c_str(), &error);
  if (options == nullptr) {
    std::string reason =
        error == nullptr
            ? "out of memory"
            : std::string(absl::StripTrailingAsciiWhitespace(error));
    PQfreemem(error);
    return absl::InvalidArgumentError(
        absl::StrCat("--fleet: the URL does not parse: ", reason));
  }
  Fields fields;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr) fields[o->keyword] = o->val;
  }
  PQconninfoFree(options);
  return fields;
}

bool IsLocalHost(std::string_view host) {
  return host.empty() || host.front() == '/' || host.front() == '@' ||
         host == "localhost" || host == "127.0.0.1" || host == "::1";
}

// The hosts the URL names that are not on this box (host, else hostaddr).
std::vector<std::string> RemoteHosts(const Fields& fields) {
  auto it = fields.find("host");
  if (it == fields.end()) it = fields.find("hostaddr");
  if (it == fields.end()) return {};
  std::vector<std::string> remote;
  for (absl::string_view host : absl::StrSplit(it->second, ',')) {
    if (!IsLocalHost(std::string_view(host.data(), host.size()))) {
      remote.emplace_back(host);
    }
  }
  return remote;
}

absl::Status RequireTls(Fields& fields) {
  const std::vector<std::string> remote = RemoteHosts(fields);
  if (remote.empty()) return absl::OkStatus();
  auto mode = fields.find("sslmode");
  if (mode == fields.end()) {
    fields["sslmode"] = "verify-full";
    return absl::OkStatus();
  }
  if (mode->second == "require" || mode->second == "verify-ca" ||
      mode->second == "verify-full") {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--fleet: sslmode=", mode->second, " for ", absl::StrJoin(remote, ", "),
      ": a store on another host is reached with TLS (sslmode require, "
      "verify-ca or verify-full; verify-full when left out)"));
}

absl::Status CheckPasswordFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || access(path.c_str(), R_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--fleet-password-file ", path, ": cannot be read"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--fleet-password-file ", path, ": not a regular file"));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--fleet-password-file ", path,
        ": others may read it (chmod 600; libpq ignores such a file)"));
  }
  return absl::OkStatus();
}

// key='value' with ' and \ escaped, as libpq reads it.
std::string Quoted(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

std::string Display(const Fields& fields) {
  std::vector<std::string> parts;
  for (const char* key : {"host", "hostaddr", "port", "dbname", "user"}) {
    auto it = fields.find(key);
    if (it != fields.end()) parts.push_back(absl::StrCat(key, "=", it->second));
  }
  return parts.empty() ? "libpq's defaults" : absl::StrJoin(parts, " ");
}

}  // namespace

absl::StatusOr<FleetConnection> ResolveFleetUrl(
    std::string_view url, const FleetUrlOptions& options) {
  if (absl::StripAsciiWhitespace(absl::string_view(url.data(), url.size()))
          .empty()) {
    return absl::InvalidArgumentError("--fleet: the URL is empty");
  }
  absl::StatusOr<Fields> parsed = ParseFields(url);
  if (!parsed.ok()) return parsed.status();
  Fields& fields = *parsed;
  if (fields.count("password") != 0) {
    return absl::InvalidArgumentError(
        "--fleet: the URL holds a password, which every local user could "
        "read on the command line; put it in a passfile (libpq's format, "
        "mode 0600) named by --fleet-password-file or PGPASSFILE");
  }
  if (absl::Status tls = RequireTls(fields); !tls.ok()) return tls;
  if (!options.password_file.empty()) {
    if (absl::Status s = CheckPasswordFile(options.password_file); !s.ok()) {
      return s;
    }
    fields["passfile"] = options.password_file;
  }
  fields.emplace("connect_timeout", "5");
  // A store that stops answering on TCP (a host gone, a cut network) fails
  // the call within about 30 s rather than TCP's many minutes, so a box
  // keeps timing into its outbox and shutdown never waits on it.
  fields.emplace("keepalives", "1");
  fields.emplace("keepalives_idle", "10");
  fields.emplace("keepalives_interval", "5");
  fields.emplace("keepalives_count", "3");
  fields.emplace("tcp_user_timeout", "30000");
  fields.emplace("application_name", options.application_name);
  FleetConnection out;
  std::vector<std::string> pairs;
  for (const auto& [key, value] : fields) {
    pairs.push_back(absl::StrCat(key, "=", Quoted(value)));
  }
  out.conninfo = absl::StrJoin(pairs, " ");
  out.display = Display(fields);
  return out;
}

}  // namespace irontune
