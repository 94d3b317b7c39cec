#include "daemon/edge/auth.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "daemon/base/sha256.h"
#include "daemon/edge/private_file.h"
#include "google/protobuf/descriptor.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {
namespace {

constexpr size_t kMaxNameLength = 64;
constexpr size_t kHashLength = 64;
// A tokens file is a few lines; anything far larger is not one.
constexpr std::streamsize kMaxTokensFileBytes = 1 << 20;

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == '@' || c == '+' || c == '-';
}

absl::Status CheckName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "name \"", name, "\" must have 1 to ", kMaxNameLength, " characters"));
  }
  for (char c : name) {
    if (!IsNameChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "name \"", name, "\" may hold only letters, digits and . _ @ + -"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CheckHash(absl::string_view hash) {
  std::string lower = absl::AsciiStrToLower(hash);
  bool hex = lower.size() == kHashLength;
  for (char c : lower) hex = hex && absl::ascii_isxdigit(c);
  if (!hex) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", hash, "\" is not a SHA-256 (64 hex digits)"));
  }
  return lower;
}

// One non-comment line: its entry, or why not.
absl::StatusOr<TokenEntry> ParseLine(absl::string_view line) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected NAME ROLE SHA256, found ", fields.size(), " fields"));
  }
  TokenEntry entry;
  if (absl::Status s = CheckName(fields[0]); !s.ok()) return s;
  entry.name = std::string(fields[0]);
  absl::StatusOr<Role> role = ParseRole(fields[1]);
  if (!role.ok()) return role.status();
  entry.role = *role;
  absl::StatusOr<std::string> hash = CheckHash(fields[2]);
  if (!hash.ok()) return hash.status();
  if (*hash == HashToken("")) {
    return absl::InvalidArgumentError(
        "this is the SHA-256 of the empty token (a missing or empty file "
        "hashed); make the line with irontuned --hash-token NAME:ROLE < "
        "TOKENFILE");
  }
  entry.sha256 = *std::move(hash);
  return entry;
}

// Equality of two equally long strings, in time independent of where they
// differ.
bool ConstantTimeEqual(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

// "ipv4:127.0.0.1:5000" -> "127.0.0.1"; "ipv6:[::1]:5000" -> "::1".
absl::string_view PeerHost(absl::string_view peer) {
  if (absl::ConsumePrefix(&peer, "ipv6:")) {
    absl::ConsumePrefix(&peer, "%5B");
    absl::ConsumePrefix(&peer, "[");
    const size_t end = peer.find_first_of("]%");
    return end == absl::string_view::npos ? peer : peer.substr(0, end);
  }
  absl::ConsumePrefix(&peer, "ipv4:");
  const size_t colon = peer.rfind(':');
  return colon == absl::string_view::npos ? peer : peer.substr(0, colon);
}

bool IsLoopbackV4(absl::string_view host) {
  in_addr addr{};
  if (inet_pton(AF_INET, std::string(host).c_str(), &addr) != 1) return false;
  return (ntohl(addr.s_addr) >> 24) == 127;
}

bool IsLoopbackV6(absl::string_view host) {
  in6_addr addr{};
  if (inet_pton(AF_INET6, std::string(host).c_str(), &addr) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&addr)) return true;
  return IN6_IS_ADDR_V4MAPPED(&addr) && addr.s6_addr[12] == 127;
}

}  // namespace

const char* RoleName(Role role) {
  return role == Role::kAdmin ? "admin" : "submit";
}

absl::StatusOr<Role> ParseRole(absl::string_view text) {
  if (text == "submit") return Role::kSubmit;
  if (text == "admin") return Role::kAdmin;
  return absl::InvalidArgumentError(
      absl::StrCat("role \"", text, "\" is neither submit nor admin"));
}

std::string HashToken(absl::string_view token) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(token);
  return Sha256Hex(std::string_view(stripped.data(), stripped.size()));
}

absl::StatusOr<std::string> TokenLine(absl::string_view name, Role role,
                                      absl::string_view token) {
  if (absl::Status s = CheckName(name); !s.ok()) return s;
  const size_t length = absl::StripAsciiWhitespace(token).size();
  if (length == 0) return absl::InvalidArgumentError("the token is empty");
  if (length < kMinTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the token has ", length, " characters, fewer than ", kMinTokenLength,
        "; make one with e.g. openssl rand -hex 24"));
  }
  return absl::StrCat(name, " ", RoleName(role), " ", HashToken(token));
}

absl::StatusOr<TokenTable> TokenTable::Parse(absl::string_view text,
                                             absl::string_view file) {
  TokenTable table;
  std::set<std::string> names;
  std::set<std::string> hashes;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    absl::StatusOr<TokenEntry> entry = ParseLine(line);
    absl::Status s = entry.status();
    if (s.ok() && !names.insert(entry->name).second) {
      s = absl::InvalidArgumentError(
          absl::StrCat("name ", entry->name, " appears twice"));
    }
    if (s.ok() && !hashes.insert(entry->sha256).second) {
      s = absl::InvalidArgumentError(
          "this hash appears twice (two names for one token)");
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ":", number, ": ", s.message()));
    }
    table.entries_.push_back(*std::move(entry));
  }
  if (table.entries_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": no tokens (lines NAME ROLE SHA256)"));
  }
  return table;
}

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  // Anyone who can write the file can make themselves admin.
  absl::StatusOr<std::string> text = ReadPrivateFile(
      path, path,
      {.forbidden = S_IWGRP | S_IWOTH,
       .max_bytes = static_cast<uint64_t>(kMaxTokensFileBytes)});
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

const TokenEntry* TokenTable::Find(absl::string_view token) const {
  const std::string hash = HashToken(token);
  const TokenEntry* found = nullptr;
  for (const TokenEntry& entry : entries_) {
    if (ConstantTimeEqual(entry.sha256, hash) && found == nullptr) {
      found = &entry;
    }
  }
  return found;
}

const char* RpcName(Rpc rpc) {
  static const google::protobuf::ServiceDescriptor* const tuner =
      v1::AutotuneRequest::descriptor()->file()->FindServiceByName("Tuner");
  const int i = static_cast<int>(rpc);
  if (i < 0 || i >= tuner->method_count()) return "?";
  return tuner->method(i)->name().c_str();
}

Role RequiredRole(Rpc rpc) {
  switch (rpc) {
    case Rpc::kExportCache:
    case Rpc::kImportCache:
    case Rpc::kListImports:
    case Rpc::kDropImport:
    case Rpc::kClearCache:
      return Role::kAdmin;
    default:
      return Role::kSubmit;
  }
}

std::string LocalRoleName(const LocalRole& role) {
  return role.has_value() ? RoleName(*role) : "none";
}

absl::StatusOr<LocalRole> ParseLocalRole(absl::string_view text) {
  if (text == "none") return LocalRole();
  absl::StatusOr<Role> role = ParseRole(text);
  if (!role.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("role \"", text, "\" is none of admin, submit and none"));
  }
  return LocalRole(*role);
}

std::string LocalPeer::Label() const {
  return user.empty() ? absl::StrCat("uid=", uid)
                      : absl::StrCat("uid=", uid, "(", user, ")");
}

std::string Caller::ToString() const {
  return name.empty() ? peer : absl::StrCat(name, "@", peer);
}

bool IsLocalPeer(absl::string_view peer, bool loopback) {
  if (absl::StartsWith(peer, "unix:")) return true;
  if (!loopback) return false;
  if (absl::StartsWith(peer, "unix-abstract:")) return true;
  if (absl::StartsWith(peer, "ipv6:")) return IsLoopbackV6(PeerHost(peer));
  if (absl::StartsWith(peer, "ipv4:")) return IsLoopbackV4(PeerHost(peer));
  return false;
}

namespace {

// The entry of the bearer token in `authorization`; Unauthenticated
// saying what is missing otherwise.
absl::StatusOr<const TokenEntry*> FindBearer(
    const TokenTable& tokens, std::optional<absl::string_view> authorization) {
  if (!authorization.has_value()) {
    return absl::UnauthenticatedError(
        "no token: irontuned needs a bearer token (irontune-client "
        "--token-file FILE or $IRONTUNE_TOKEN)");
  }
  absl::string_view value = *authorization;
  if (!absl::ConsumePrefix(&value, "Bearer ") &&
      !absl::ConsumePrefix(&value, "bearer ")) {
    return absl::UnauthenticatedError(
        "the authorization header is not \"Bearer TOKEN\"");
  }
  if (absl::StripAsciiWhitespace(value).empty()) {
    return absl::UnauthenticatedError("the bearer token is empty");
  }
  const TokenEntry* entry = tokens.Find(value);
  if (entry == nullptr) {
    return absl::UnauthenticatedError("the token is not irontuned's");
  }
  return entry;
}

}  // namespace

absl::StatusOr<Caller> Authenticator::Authenticate(
    std::optional<absl::string_view> authorization,
    absl::string_view peer) const {
  return AuthenticateOn(authorization, IsLocalPeer(peer, loopback_admin_),
                        peer);
}

namespace {

// A local caller without tokens: admin, or with `local_peer` its role.
absl::StatusOr<Caller> LocalCaller(Caller caller, const LocalPeer* local_peer) {
  if (local_peer == nullptr) {
    caller.role = Role::kAdmin;
    return caller;
  }
  if (!local_peer->role.has_value()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "local user ", local_peer->Label(),
        " has role none on irontuned (--local-role, --local-default-role)"));
  }
  caller.role = *local_peer->role;
  if (caller.role == Role::kSubmit) {
    caller.name = local_peer->user.empty()
                      ? absl::StrCat("uid", local_peer->uid)
                      : local_peer->user;
    caller.named = true;
  }
  return caller;
}

}  // namespace

absl::StatusOr<Caller> Authenticator::AuthenticateOn(
    std::optional<absl::string_view> authorization, bool local,
    absl::string_view peer, const LocalPeer* local_peer) const {
  Caller caller;
  caller.peer = local_peer == nullptr
                    ? std::string(peer)
                    : absl::StrCat("unix:", local_peer->Label());
  if (!tokens_.has_value()) {
    if (!local && local_peer == nullptr) {
      return absl::UnauthenticatedError(absl::StrCat(
          "irontuned has no tokens file (--tokens) and serves only local "
          "callers (its unix socket path",
          loopback_admin_ ? ", loopback" : "", "); ", peer,
          peer.empty() ? "this caller" : "", " is not local"));
    }
    return LocalCaller(std::move(caller), local_peer);
  }
  ASSIGN_OR_RETURN(const TokenEntry* entry,
                   FindBearer(*tokens_, authorization));
  caller.name = entry->name;
  caller.role = entry->role;
  caller.has_token = true;
  caller.named = true;
  return caller;
}

absl::Status Authenticator::Authorize(const Caller& caller, Rpc rpc) {
  const Role needed = RequiredRole(rpc);
  if (needed == Role::kSubmit || caller.role == Role::kAdmin) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      caller.ToString(), " (role ", RoleName(caller.role), ") may not call ",
      RpcName(rpc), ": it needs role ", RoleName(needed)));
}

absl::Status Authenticator::MayTouchJob(const Caller& caller, Rpc rpc,
                                        absl::string_view job_id,
                                        absl::string_view owner) {
  if (caller.role == Role::kAdmin || owner == caller.name) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      caller.ToString(), " (role submit) may not call ", RpcName(rpc),
      " on job ", job_id, " of ", owner, ": only its owner or an admin"));
}

}  // namespace irontune
