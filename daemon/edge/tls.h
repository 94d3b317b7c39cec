// Which listen addresses may serve plaintext, and the TLS material for the
// others. No gRPC types: daemon.cc turns a TlsConfig into
// grpc::SslServerCredentials.
//
// The rule (docs/security.md): unix sockets and loopback TCP (127.0.0.0/8,
// ::1, localhost) may be plaintext. Any other TCP address needs TLS
// (--tls-cert and --tls-key), or --insecure, which serves plaintext anyway
// and is logged as a warning. When TLS is configured every TCP address uses
// it, loopback too.
//
// Threads: pure functions, safe from any thread.
#ifndef IRONTUNE_DAEMON_EDGE_TLS_H_
#define IRONTUNE_DAEMON_EDGE_TLS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace irontune {

enum class Transport {
  kUnix,          // unix:PATH: reached through its file's mode and group
  kUnixAbstract,  // unix-abstract:NAME: any local user reaches it
  kLoopbackTcp,   // 127.0.0.0/8, [::1], localhost
  kRemoteTcp,     // anything else: 0.0.0.0, [::], a host name, an address
};

// How `address` (a --listen value: "unix:PATH", "HOST:PORT", "[V6]:PORT",
// optionally with gRPC's "dns:///", "ipv4:" or "ipv6:" prefix) is reached.
Transport TransportOf(const std::string& address);

// The files as the config gives them; empty: not given.
struct TlsFiles {
  std::string cert;       // --tls-cert: PEM certificate chain
  std::string key;        // --tls-key: PEM private key
  std::string client_ca;  // --tls-client-ca: PEM CA for client certificates
};

// The files' contents.
struct TlsConfig {
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_pem;  // empty: client certificates are not asked for
};

// Reads `files`. nullopt when none is given. InvalidArgument when only one
// of cert and key is given, or a client CA without them; NotFound /
// InvalidArgument naming the flag and file when one cannot be read or holds
// no PEM block.
absl::StatusOr<std::optional<TlsConfig>> LoadTls(const TlsFiles& files);

// OK when every address of `listen` may be served as configured: with
// `tls`, or plaintext on unix/loopback, or plaintext anywhere when
// `insecure`. Otherwise FailedPrecondition naming the address and the
// flags that would allow it. Appends to `warnings` what start-up should
// log: each address served plaintext off loopback, and, without
// `tokens`, each off-loopback address (nobody there will be admitted).
//
// Without `tokens`, only unix:PATH callers are local (admin): a loopback
// TCP or unix-abstract address, which every local user reaches whatever
// the socket file's mode, is FailedPrecondition unless `loopback_admin`
// (--allow-loopback-without-tokens), which makes its callers admin and is
// a warning.
absl::Status CheckListen(const std::vector<std::string>& listen, bool tls,
                         bool insecure, bool tokens, bool loopback_admin,
                         std::vector<std::string>* warnings);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_TLS_H_
