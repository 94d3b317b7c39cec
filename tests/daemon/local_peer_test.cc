#include "daemon/edge/local_peer.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

namespace irontune {
namespace {

LocalRoleRule Rule(bool group, uint32_t id, LocalRole role) {
  LocalRoleRule rule;
  rule.group = group;
  rule.who = std::to_string(id);
  rule.id = id;
  rule.role = role;
  return rule;
}

TEST_CASE("local roles: a user's rule wins, then the first group's") {
  const LocalRoles roles(
      {Rule(true, 100, Role::kAdmin), Rule(true, 200, LocalRole()),
       Rule(false, 1000, Role::kSubmit)},
      Role::kAdmin);
  std::string because;
  CHECK(roles.RoleOf(1000, {100, 200}, &because) == LocalRole(Role::kSubmit));
  CHECK(because == "--local-role 1000:submit");
  CHECK(roles.RoleOf(1001, {200, 100}, &because) == LocalRole(Role::kAdmin));
  CHECK(because == "--local-role @100:admin");
  CHECK_FALSE(roles.RoleOf(1001, {200}, &because).has_value());
  CHECK(because == "--local-role @200:none");
  CHECK(roles.RoleOf(1001, {300}, &because) == LocalRole(Role::kAdmin));
  CHECK(because == "--local-default-role admin");
  const LocalRoles closed({}, LocalRole());
  CHECK_FALSE(closed.RoleOf(0, {0}, nullptr).has_value());
}

TEST_CASE("local roles: rules name users and groups of the system") {
  const passwd* me = getpwuid(getuid());
  const group* mine = getgrgid(getgid());
  REQUIRE(me != nullptr);
  REQUIRE(mine != nullptr);
  absl::StatusOr<LocalRoleRule> user =
      ParseLocalRoleRule(std::string(me->pw_name) + ":submit");
  REQUIRE(user.ok());
  CHECK_FALSE(user->group);
  CHECK(user->id == getuid());
  CHECK(user->role == LocalRole(Role::kSubmit));
  absl::StatusOr<LocalRoleRule> grp =
      ParseLocalRoleRule("@" + std::string(mine->gr_name) + ":none");
  REQUIRE(grp.ok());
  CHECK(grp->group);
  CHECK(grp->id == getgid());
  CHECK_FALSE(grp->role.has_value());
  absl::StatusOr<LocalRoleRule> numeric = ParseLocalRoleRule("@4242:admin");
  REQUIRE(numeric.ok());
  CHECK(numeric->id == 4242);

  absl::StatusOr<LocalRoleRule> unknown =
      ParseLocalRoleRule("no-such-user-irontune:submit");
  CHECK(unknown.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(unknown.status().message()),
             Catch::Contains("no user \"no-such-user-irontune\""));
  for (const char* bad : {"alice", ":submit", "alice:root", "@:admin"}) {
    INFO(bad);
    CHECK_FALSE(ParseLocalRoleRule(bad).ok());
  }
  CHECK_THAT(std::string(ParseLocalRoleRule("alice:root").status().message()),
             Catch::Contains("none of admin, submit and none"));
}

TEST_CASE("local roles: a connected socket's peer is this process") {
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  const LocalRoles roles({Rule(false, getuid(), Role::kSubmit)}, Role::kAdmin);
  absl::StatusOr<LocalPeer> peer = IdentifyPeer(fds[0], roles);
  close(fds[0]);
  close(fds[1]);
  REQUIRE(peer.ok());
  CHECK(peer->uid == getuid());
  CHECK(peer->gid == getgid());
  CHECK(peer->pid == getpid());
  CHECK(peer->role == LocalRole(Role::kSubmit));
  const passwd* me = getpwuid(getuid());
  REQUIRE(me != nullptr);
  CHECK(peer->Label() ==
        "uid=" + std::to_string(getuid()) + "(" + me->pw_name + ")");
}

}  // namespace
}  // namespace irontune
