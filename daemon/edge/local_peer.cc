#include "daemon/edge/local_peer.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace irontune {
namespace {

constexpr size_t kLookupBuffer = 16384;
constexpr int kMaxGroups = 256;

// The uid of user `name` (a name or a number).
std::optional<uid_t> UserId(const std::string& name) {
  uint32_t id = 0;
  if (absl::SimpleAtoi(name, &id)) return id;
  passwd entry{};
  passwd* found = nullptr;
  std::string buffer(kLookupBuffer, '\0');
  if (::getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(),
                   &found) != 0 ||
      found == nullptr) {
    return std::nullopt;
  }
  return found->pw_uid;
}

// `peer`'s user name and supplementary groups, where the uid has an entry.
void LookUpUser(LocalPeer& peer) {
  passwd entry{};
  passwd* found = nullptr;
  std::string buffer(kLookupBuffer, '\0');
  peer.groups = {peer.gid};
  if (::getpwuid_r(peer.uid, &entry, buffer.data(), buffer.size(), &found) !=
          0 ||
      found == nullptr) {
    return;
  }
  peer.user = found->pw_name;
  std::vector<gid_t> groups(kMaxGroups);
  int n = kMaxGroups;
  if (::getgrouplist(found->pw_name, found->pw_gid, groups.data(), &n) < 0) {
    n = kMaxGroups;  // more than kMaxGroups: the first ones
  }
  groups.resize(static_cast<size_t>(std::max(n, 0)));
  for (gid_t g : groups) {
    if (std::find(peer.groups.begin(), peer.groups.end(), g) ==
        peer.groups.end()) {
      peer.groups.push_back(g);
    }
  }
}

}  // namespace

std::optional<gid_t> GroupIdOf(const std::string& name) {
  group entry{};
  group* found = nullptr;
  std::string buffer(kLookupBuffer, '\0');
  if (::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(),
                   &found) == 0 &&
      found != nullptr) {
    return found->gr_gid;
  }
  uint32_t id = 0;
  if (absl::SimpleAtoi(name, &id)) return id;
  return std::nullopt;
}

absl::StatusOr<LocalRoleRule> ParseLocalRoleRule(absl::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--local-role \"", text,
                     "\": give WHO:ROLE (alice:submit, @ci:admin)"));
  }
  absl::string_view who = text.substr(0, colon);
  LocalRoleRule rule;
  rule.group = absl::ConsumePrefix(&who, "@");
  rule.who = std::string(who);
  absl::StatusOr<LocalRole> role = ParseLocalRole(text.substr(colon + 1));
  if (!role.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--local-role \"", text, "\": ", role.status().message()));
  }
  rule.role = *role;
  const std::optional<uint32_t> id =
      rule.group ? GroupIdOf(rule.who) : UserId(rule.who);
  if (rule.who.empty() || !id.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("--local-role \"", text, "\": the system has no ",
                     rule.group ? "group" : "user", " \"", rule.who, "\""));
  }
  rule.id = *id;
  return rule;
}

LocalRole LocalRoles::RoleOf(uid_t uid, const std::vector<gid_t>& groups,
                             std::string* because) const {
  const LocalRoleRule* chosen = nullptr;
  for (const LocalRoleRule& rule : rules_) {
    if (!rule.group && rule.id == uid) {
      chosen = &rule;
      break;
    }
  }
  for (const LocalRoleRule& rule : rules_) {
    if (chosen != nullptr) break;
    if (rule.group &&
        std::find(groups.begin(), groups.end(), rule.id) != groups.end()) {
      chosen = &rule;
    }
  }
  if (chosen == nullptr) {
    if (because != nullptr) {
      *because =
          absl::StrCat("--local-default-role ", LocalRoleName(default_role_));
    }
    return default_role_;
  }
  if (because != nullptr) {
    *because = absl::StrCat("--local-role ", chosen->group ? "@" : "",
                            chosen->who, ":", LocalRoleName(chosen->role));
  }
  return chosen->role;
}

absl::StatusOr<LocalPeer> IdentifyPeer(int fd, const LocalRoles& roles) {
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) {
    return absl::InternalError(
        absl::StrCat("SO_PEERCRED: ", std::strerror(errno)));
  }
  LocalPeer peer;
  peer.uid = credentials.uid;
  peer.gid = credentials.gid;
  peer.pid = credentials.pid;
  LookUpUser(peer);
  peer.role = roles.RoleOf(peer.uid, peer.groups, nullptr);
  return peer;
}

}  // namespace irontune
