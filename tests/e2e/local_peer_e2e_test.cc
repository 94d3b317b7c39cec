// End to end, who is local: irontuned reads each unix socket caller's uid
// (SO_PEERCRED) and serves it as --local-role gives its user or group. The
// real irontuned and irontune-client as subprocesses; another uid is
// played by `nobody` through setpriv where the tests run as root.
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/testing/process.h"

namespace irontune::e2e {
namespace {

const std::string kDaemon = IRONTUNE_IRONTUNED;
const std::string kClient = IRONTUNE_CLIENT;

std::string MyUser() {
  const passwd* me = getpwuid(getuid());
  REQUIRE(me != nullptr);
  return me->pw_name;
}

std::string MyGroup() {
  const group* mine = getgrgid(getgid());
  REQUIRE(mine != nullptr);
  return mine->gr_name;
}

// An irontuned on unix socket dir/sock with `flags`, until destroyed.
class UnixDaemon {
 public:
  UnixDaemon(const std::string& dir, std::vector<std::string> flags)
      : socket_(dir + "/run/sock") {
    std::vector<std::string> args = {
        kDaemon,           "--state-dir", dir + "/st", "--listen",
        "unix:" + socket_, "--sim-clock", "virtual"};
    args.insert(args.end(), flags.begin(), flags.end());
    process_ = std::make_unique<Process>("irontuned", args, dir);
    REQUIRE(!process_->WaitForStderrLine("serving", 30).empty());
  }
  ~UnixDaemon() {
    process_->Signal(SIGTERM);
    process_->Wait(15);
  }
  std::string server() const { return "unix:" + socket_; }
  Process& process() { return *process_; }

 private:
  std::string socket_;
  std::unique_ptr<Process> process_;
};

TEST_CASE("security: a unix socket caller is served as its --local-role") {
  const std::string dir = TempDir("sec-peer");
  const std::string me = MyUser();
  UnixDaemon daemon(dir, {"--local-role", me + ":submit", "--local-role",
                          "@" + MyGroup() + ":admin"});
  Result status =
      Run({kClient, "--server", daemon.server(), "status"}, dir, 30);
  INFO(status.err);
  CHECK(status.code == 0);
  // The user's rule wins over its group's: submit may not clear the cache.
  Result clear =
      Run({kClient, "--server", daemon.server(), "cache", "clear", "--yes"},
          dir, 30);
  CHECK(clear.code != 0);
  const std::string label = "uid=" + std::to_string(getuid()) + "(" + me + ")";
  CHECK_THAT(clear.err,
             Catch::Contains(label) && Catch::Contains("needs role admin"));
  const std::string log = daemon.process().Stderr();
  CHECK_THAT(log, Catch::Contains("local user " + label +
                                  " is served as "
                                  "submit (--local-role " +
                                  me + ":submit)"));
  CHECK_THAT(log, Catch::Contains("unix:" + label));
}

TEST_CASE("security: a local user's group gives its role, none refuses") {
  const std::string dir = TempDir("sec-peer-group");
  {
    UnixDaemon daemon(dir, {"--local-default-role", "none", "--local-role",
                            "@" + MyGroup() + ":admin"});
    CHECK(Run({kClient, "--server", daemon.server(), "cache", "clear", "--yes"},
              dir, 30)
              .code == 0);
  }
  UnixDaemon closed(dir, {"--local-default-role", "none"});
  Result refused =
      Run({kClient, "--server", closed.server(), "status"}, dir, 30);
  CHECK(refused.code != 0);
  CHECK_THAT(refused.err, Catch::Contains("has role none"));
}

TEST_CASE("security: another uid on the same socket has a role of its own") {
  if (geteuid() != 0 || getpwnam("nobody") == nullptr ||
      !std::filesystem::exists("/usr/bin/setpriv")) {
    WARN("needs root, the user nobody and setpriv: not run");
    return;
  }
  const std::string dir = TempDir("sec-peer-uid");
  std::filesystem::create_directories(dir + "/run");
  ::chmod(dir.c_str(), 0755);
  ::chmod((dir + "/run").c_str(), 0755);
  const group* nobody_group = getgrgid(getpwnam("nobody")->pw_gid);
  REQUIRE(nobody_group != nullptr);
  UnixDaemon daemon(dir, {"--socket-group", nobody_group->gr_name,
                          "--local-role", "nobody:none"});
  const std::vector<std::string> as_nobody = {
      "/usr/bin/setpriv", "--reuid=nobody",
      "--regid=" + std::string(nobody_group->gr_name), "--clear-groups"};
  // A copy nobody can run wherever the build tree is (CI may build under a
  // home directory only root may enter).
  const std::string client = dir + "/irontune-client";
  std::filesystem::copy_file(kClient, client);
  ::chmod(client.c_str(), 0755);
  std::vector<std::string> args = as_nobody;
  for (const std::string& a : {client, std::string("--server"), daemon.server(),
                               std::string("status")}) {
    args.push_back(a);
  }
  Result other = Run(args, dir, 30);
  CHECK(other.code != 0);
  CHECK_THAT(other.err, Catch::Contains("(nobody) has role none"));
  // The daemon's own uid, on the same socket, is still admin.
  CHECK(Run({kClient, "--server", daemon.server(), "cache", "clear", "--yes"},
            dir, 30)
            .code == 0);
}

}  // namespace
}  // namespace irontune::e2e
