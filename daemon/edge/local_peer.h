// Who is at the other end of a unix socket, and the role irontuned's
// config gives them: the peer's uid and gid as the kernel reports them
// (SO_PEERCRED, taken when it connected), its user name and groups from
// the system's user database, and --local-role rules matched against them,
// as PostgreSQL's `peer` authentication maps OS users to roles.
//
// A rule is WHO:ROLE. WHO is a user (name or uid) or, with a leading `@`,
// a group (name or gid); ROLE is `admin`, `submit` or `none` (no calls at
// all). A user's rule wins over group rules; of group rules the first
// given that the peer belongs to (primary or supplementary group) wins;
// else the default role (--local-default-role, `admin` unless set: the
// socket's mode and group are then the control, as without rules).
//
// Names are resolved to ids once, at start: an unknown user or group is an
// error naming the rule. Threads: LocalRoles is immutable once made.
#ifndef IRONTUNE_DAEMON_EDGE_LOCAL_PEER_H_
#define IRONTUNE_DAEMON_EDGE_LOCAL_PEER_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "daemon/edge/auth.h"  // Role, LocalRole, LocalPeer

namespace irontune {

struct LocalRoleRule {
  bool group = false;  // WHO began with '@'
  std::string who;     // as given, without the '@'
  uint32_t id = 0;     // the uid or gid it names, resolved
  LocalRole role;
};

// "alice:submit", "@ci:submit", "1001:none", "@27:admin": a rule, its
// user or group resolved to an id. InvalidArgument naming `text` for a
// malformed rule or role; NotFound naming the user or group when the
// system has none of that name.
absl::StatusOr<LocalRoleRule> ParseLocalRoleRule(absl::string_view text);

// The gid of group `name` (a name, else a number), or nullopt when the
// system has no such group: --socket-group's lookup and --local-role's.
std::optional<gid_t> GroupIdOf(const std::string& name);

class LocalRoles {
 public:
  LocalRoles() = default;
  LocalRoles(std::vector<LocalRoleRule> rules, LocalRole default_role)
      : rules_(std::move(rules)), default_role_(default_role) {}

  // The role of a peer with `uid` in `groups`, as the file comment says;
  // `because` (may be null) gets which rule decided ("--local-role
  // @ci:submit", "--local-default-role admin").
  LocalRole RoleOf(uid_t uid, const std::vector<gid_t>& groups,
                   std::string* because) const;

  bool empty() const { return rules_.empty(); }

 private:
  std::vector<LocalRoleRule> rules_;
  LocalRole default_role_ = Role::kAdmin;
};

// The peer of connected unix socket `fd`: SO_PEERCRED, then its user
// name and groups looked up, its role from `roles`. Errors name errno.
absl::StatusOr<LocalPeer> IdentifyPeer(int fd, const LocalRoles& roles);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_LOCAL_PEER_H_
