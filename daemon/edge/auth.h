// Who may call irontuned, and what each caller may do: bearer tokens from a
// file, stored hashed, each with a name and a role, and the role every RPC
// needs. No gRPC types here: the service passes in the request's
// `authorization` header and its peer address (docs/security.md).
//
// The tokens file (--tokens FILE), one token a line:
//
//   # comment
//   NAME ROLE SHA256
//
// NAME is what jobs are owned by and logs show ([A-Za-z0-9._@+-], at most 64
// characters, unique); ROLE is `submit` or `admin`; SHA256 is the 64 hex
// digits of the SHA-256 of the token's text (surrounding whitespace
// stripped), as `irontuned --hash-token NAME:ROLE < TOKENFILE` or
// `printf %s "$TOKEN" | sha256sum` print it. Only the hashes are kept.
//
// A token has at least kMinTokenLength characters (--hash-token refuses a
// shorter one), and the SHA-256 of the empty text is refused in the file:
// it is what hashing a missing file gives.
//
// Without a tokens file, irontuned serves local callers only, each as admin
// and named by the request's `client` field: those of its unix socket
// paths, and, with --allow-loopback-without-tokens, of loopback TCP and
// unix-abstract addresses too (tls.h CheckListen refuses those otherwise);
// a caller from any other address is UNAUTHENTICATED.
//
// Threads: a TokenTable and an Authenticator are immutable once made, and
// safe to use from any number of threads.
#ifndef IRONTUNE_DAEMON_EDGE_AUTH_H_
#define IRONTUNE_DAEMON_EDGE_AUTH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace irontune {

enum class Role { kSubmit, kAdmin };

// "submit", "admin".
const char* RoleName(Role role);
// InvalidArgument for another word.
absl::StatusOr<Role> ParseRole(absl::string_view text);

// The fewest characters a token may have (surrounding whitespace
// stripped): 16 random characters are far beyond guessing.
inline constexpr size_t kMinTokenLength = 16;

// The lower-case hex SHA-256 of `token` with surrounding whitespace
// stripped: the third field of a tokens-file line.
std::string HashToken(absl::string_view token);

// One line of the tokens file.
struct TokenEntry {
  std::string name;
  Role role = Role::kSubmit;
  std::string sha256;  // 64 lower-case hex digits
};

// "NAME ROLE SHA256": the tokens-file line for `token`. InvalidArgument
// when `name` is not a valid name or `token` is empty or shorter than
// kMinTokenLength.
absl::StatusOr<std::string> TokenLine(absl::string_view name, Role role,
                                      absl::string_view token);

class TokenTable {
 public:
  // Parses a tokens file's text; errors name `file` and the line
  // ("FILE:3: ..."): a bad name, role or hash, a duplicate name or hash, a
  // line with other than three fields, the hash of the empty token (a
  // missing file hashed). An empty table is InvalidArgument
  // too (it would admit nobody).
  static absl::StatusOr<TokenTable> Parse(absl::string_view text,
                                          absl::string_view file);
  // Reads and parses `path`. NotFound / PermissionDenied naming it when
  // it cannot be read.
  static absl::StatusOr<TokenTable> Load(const std::string& path);

  // The entry whose hash is `token`'s, or null. Compares the hash with
  // every entry's in constant time, so neither the match nor its place
  // shows in the time taken. The pointer lives as long as the table.
  const TokenEntry* Find(absl::string_view token) const;

  size_t size() const { return entries_.size(); }

 private:
  std::vector<TokenEntry> entries_;
};

// The RPCs of irontune.v1.Tuner, for the role table, in the order
// tuner.proto declares them (RpcName reads their names from there).
enum class Rpc {
  kAutotune,
  kMeasure,
  kGetStatus,
  kListJobs,
  kCancel,
  kWatch,
  kGetResult,
  kExportCache,
  kImportCache,
  kListImports,
  kDropImport,
  kClearCache,
};

// The method's name in tuner.proto ("Autotune", ...); "?" for no Rpc.
const char* RpcName(Rpc rpc);

// The least role `rpc` needs. Cancel, Watch and GetResult need kSubmit for
// the caller's own jobs and kAdmin for another's (see MayTouchJob).
Role RequiredRole(Rpc rpc);

// A local role: a Role, or nullopt for `none` (no calls at all).
using LocalRole = std::optional<Role>;

// "admin", "submit", "none".
std::string LocalRoleName(const LocalRole& role);
// InvalidArgument for another word.
absl::StatusOr<LocalRole> ParseLocalRole(absl::string_view text);

// A process connected to one of irontuned's unix socket paths, as the
// kernel identified it when it connected (daemon/edge/local_peer.h).
struct LocalPeer {
  uint32_t uid = 0;
  uint32_t gid = 0;  // its effective gid when it connected
  int32_t pid = 0;
  std::string user;              // "" when the uid has no entry
  std::vector<uint32_t> groups;  // gid and the user's supplementary groups
  LocalRole role;                // what --local-role gave it

  // "uid=1000(alice)", or "uid=1000" without a user entry: what logs show.
  std::string Label() const;
};

// An authenticated caller.
struct Caller {
  std::string name;  // the token's name; "" when irontuned has no tokens
  Role role = Role::kSubmit;
  // gRPC's peer address ("ipv4:127.0.0.1:5000"), or for a unix socket
  // path's caller "unix:" and its LocalPeer::Label ("unix:uid=1000(alice)")
  std::string peer;
  bool has_token = false;
  // Whether `name` is who the caller proved to be (a token's name, or a
  // local submit caller's user name), so jobs belong to it; otherwise
  // (local admins without tokens) the request's `client` field names the
  // owner.
  bool named = false;

  // "NAME@PEER" (or "PEER"), for logs.
  std::string ToString() const;
};

// Whether gRPC peer address `peer` is local: a unix socket ("unix:...");
// with `loopback`, also "unix-abstract:...", 127.0.0.0/8
// ("ipv4:127.x.y.z:port", "ipv6:[::ffff:127.x.y.z]:port") and ::1.
bool IsLocalPeer(absl::string_view peer, bool loopback);

class Authenticator {
 public:
  // `tokens` nullopt: no tokens file (local callers only, all admin).
  // `loopback_admin`: without tokens, loopback TCP and unix-abstract
  // callers are local too (--allow-loopback-without-tokens).
  explicit Authenticator(std::optional<TokenTable> tokens,
                         bool loopback_admin = false)
      : tokens_(std::move(tokens)), loopback_admin_(loopback_admin) {}

  bool has_tokens() const { return tokens_.has_value(); }
  bool loopback_admin() const { return loopback_admin_; }

  // The caller of a request with `authorization` (the header's value, or
  // nullopt when absent) from `peer`. Unauthenticated, with a message that
  // says what is missing, when tokens are configured and the header is not
  // "Bearer TOKEN" of a known token, or when they are not and the peer is
  // not local.
  absl::StatusOr<Caller> Authenticate(
      std::optional<absl::string_view> authorization,
      absl::string_view peer) const;
  // The same for a caller whose locality is known from the listener it
  // came through (`local`) rather than its peer address: what the check
  // before the message is read (call_gate.h) uses.
  // `local_peer` (may be null): the caller of a unix socket path, as the
  // kernel identified it. Without tokens it is served with its role
  // (PermissionDenied naming it and its rule for `none`), a submit caller
  // named by its user; with tokens the token decides, and the peer only
  // names where the call came from.
  absl::StatusOr<Caller> AuthenticateOn(
      std::optional<absl::string_view> authorization, bool local,
      absl::string_view peer, const LocalPeer* local_peer = nullptr) const;

  // OK when `caller` may call `rpc`; PermissionDenied naming the caller,
  // the RPC and the role it needs otherwise.
  static absl::Status Authorize(const Caller& caller, Rpc rpc);

  // OK when `caller` may cancel, watch or fetch a job of `owner`: its own
  // (owner == caller.name), or any as admin. PermissionDenied otherwise.
  static absl::Status MayTouchJob(const Caller& caller, Rpc rpc,
                                  absl::string_view job_id,
                                  absl::string_view owner);

 private:
  std::optional<TokenTable> tokens_;
  bool loopback_admin_ = false;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_AUTH_H_
