// What `--fleet URL` names, checked before anything connects: the
// PostgreSQL server holding the fleet's shared store, and how to reach it.
//
// The URL is libpq's: a postgresql:// (or postgres://) URI or key=value
// pairs, so PGSERVICE, PGHOST and the other environment variables libpq
// reads fill in what it leaves out. On top of libpq's rules:
//   - no password in the URL (a command line is visible to every local user
//     in /proc): it comes from a passfile, ~/.pgpass or PGPASSFILE, or the
//     file --fleet-password-file names, in libpq's format
//     (host:port:db:user:password), mode 0600 or stricter;
//   - a server that is not on this box (any host but a unix socket path,
//     localhost, 127.0.0.1 or ::1) is reached with TLS: sslmode is
//     verify-full unless the URL says require or verify-ca; disable, allow
//     and prefer are refused for it;
//   - connect_timeout defaults to 5 s, application_name to the caller's,
//     and TCP keepalives and tcp_user_timeout to about 30 s, so a store
//     that stops answering fails the call instead of hanging it.
//
// Thread-safe (values only).
#ifndef IRONTUNE_DAEMON_FLEET_FLEET_URL_H_
#define IRONTUNE_DAEMON_FLEET_FLEET_URL_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace irontune {

struct FleetUrlOptions {
  // The passfile to use ("" for libpq's default, PGPASSFILE or ~/.pgpass).
  std::string password_file;
  // How the server lists this connection ("irontuned box npu-strix-01").
  std::string application_name = "irontuned";
};

struct FleetConnection {
  // What libpq is given: every field of the URL, plus those added above.
  std::string conninfo;
  // For logs and errors: host, port, database and user, never a secret.
  std::string display;
};

// Checks `url` under the rules above. InvalidArgument naming what is wrong
// ("--fleet: ...") when it does not parse, holds a password, or asks for a
// remote server without TLS; FailedPrecondition when the password file is
// missing, unreadable or readable by others.
absl::StatusOr<FleetConnection> ResolveFleetUrl(std::string_view url,
                                                const FleetUrlOptions& options);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_FLEET_FLEET_URL_H_
