#include "daemon/edge/tls.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "daemon/edge/private_file.h"

namespace irontune {
namespace {

// "HOST:PORT" -> "HOST"; "[V6]:PORT" -> "V6".
std::string HostOf(absl::string_view address) {
  absl::ConsumePrefix(&address, "dns:///");
  absl::ConsumePrefix(&address, "dns:");
  absl::ConsumePrefix(&address, "ipv4:");
  absl::ConsumePrefix(&address, "ipv6:");
  if (absl::ConsumePrefix(&address, "[")) {
    const size_t end = address.find(']');
    return std::string(address.substr(0, end));
  }
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return std::string(address);
  // A bare IPv6 address ("::1") has several colons and no port.
  if (address.find(':') != colon) return std::string(address);
  return std::string(address.substr(0, colon));
}

bool IsLoopbackHost(const std::string& host) {
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 &&
         IN6_IS_ADDR_LOOPBACK(&v6);
}

// The PEM text of `path`, given as `flag`.
// The private key may be neither changed nor read by other users; the
// certificates are public, but no one else may change them either.
absl::StatusOr<std::string> ReadPem(const std::string& flag,
                                    const std::string& path) {
  PrivateFileRules rules;
  rules.forbidden = S_IWGRP | S_IWOTH;
  if (flag == "--tls-key") rules.forbidden |= S_IROTH;
  absl::StatusOr<std::string> text =
      ReadPrivateFile(absl::StrCat(flag, " ", path), path, rules);
  if (!text.ok()) return text.status();
  if (text->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": holds no PEM block"));
  }
  return text;
}

}  // namespace

Transport TransportOf(const std::string& address) {
  if (absl::StartsWith(address, "unix:")) return Transport::kUnix;
  if (absl::StartsWith(address, "unix-abstract:")) {
    return Transport::kUnixAbstract;
  }
  return IsLoopbackHost(HostOf(address)) ? Transport::kLoopbackTcp
                                         : Transport::kRemoteTcp;
}

absl::StatusOr<std::optional<TlsConfig>> LoadTls(const TlsFiles& files) {
  if (files.cert.empty() && files.key.empty() && files.client_ca.empty()) {
    return std::nullopt;
  }
  if (files.cert.empty() || files.key.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both --tls-cert and --tls-key (--tls-client-ca only adds "
        "client certificates to them)");
  }
  TlsConfig config;
  auto read = [](const std::string& flag, const std::string& path,
                 std::string* out) -> absl::Status {
    absl::StatusOr<std::string> pem = ReadPem(flag, path);
    if (!pem.ok()) return pem.status();
    *out = *std::move(pem);
    return absl::OkStatus();
  };
  if (absl::Status s = read("--tls-cert", files.cert, &config.cert_pem);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = read("--tls-key", files.key, &config.key_pem); !s.ok()) {
    return s;
  }
  if (!files.client_ca.empty()) {
    if (absl::Status s =
            read("--tls-client-ca", files.client_ca, &config.client_ca_pem);
        !s.ok()) {
      return s;
    }
  }
  return config;
}

namespace {

// Without tokens: a loopback TCP or abstract address refused, or with
// `loopback_admin` warned about.
absl::Status CheckLoopbackWithoutTokens(const std::string& address,
                                        bool loopback_admin,
                                        std::vector<std::string>* warnings) {
  if (!loopback_admin) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--listen ", address,
        ": without --tokens only a unix socket path is served (its mode "
        "0660 and --socket-group say who may call); every local user "
        "reaches a loopback TCP or unix-abstract address, and would be "
        "admin. Give --tokens, listen on unix:PATH, or accept it with "
        "--allow-loopback-without-tokens"));
  }
  warnings->push_back(absl::StrCat(
      "--allow-loopback-without-tokens: every local user reaching ", address,
      " is admin (no tokens)"));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckListen(const std::vector<std::string>& listen, bool tls,
                         bool insecure, bool tokens, bool loopback_admin,
                         std::vector<std::string>* warnings) {
  for (const std::string& address : listen) {
    const Transport transport = TransportOf(address);
    if (!tokens && (transport == Transport::kLoopbackTcp ||
                    transport == Transport::kUnixAbstract)) {
      if (absl::Status s =
              CheckLoopbackWithoutTokens(address, loopback_admin, warnings);
          !s.ok()) {
        return s;
      }
    }
    if (transport != Transport::kRemoteTcp) continue;
    if (!tls && !insecure) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--listen ", address,
          ": plaintext gRPC is served only on a unix socket or loopback "
          "(127.0.0.0/8, ::1, localhost). Give --tls-cert and --tls-key to "
          "serve TLS there, or --insecure to serve plaintext anyway"));
    }
    if (!tls) {
      warnings->push_back(absl::StrCat(
          "--insecure: serving plaintext on ", address,
          ", off loopback: requests and tokens cross the network unencrypted"));
    }
    if (!tokens) {
      warnings->push_back(absl::StrCat(
          "no --tokens: callers reaching ", address,
          " from off this host will be refused (UNAUTHENTICATED)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace irontune
