#include "daemon/builder/builder_env.h"

#include <string>
#include <vector>

#include "catch2/catch.hpp"

namespace irontune {
namespace {

using Env = std::vector<std::string>;

Env Of(const std::vector<std::string>& names, std::vector<const char*> env) {
  env.push_back(nullptr);
  return BuilderEnvironment(names, env.data());
}

TEST_CASE("The builder gets the base variables and the names passed") {
  const Env env = Of(
      {"XILINX_XRT", "MLIR_AIE_*"},
      {"PATH=/usr/bin", "HOME=/var/lib/irontune",
       "NOTIFY_SOCKET=/run/systemd/notify", "IRONTUNE_TOKEN=0123456789abcdef",
       "XILINX_XRT=/opt/xrt", "MLIR_AIE_INSTALL_DIR=/opt/mlir-aie",
       "MLIR_AIE=x", "LANG=C.UTF-8", "SECRET=hunter2", "TMPDIR=/tmp/b"});
  CHECK(env == Env{"PATH=/usr/bin", "HOME=/var/lib/irontune",
                   "XILINX_XRT=/opt/xrt", "MLIR_AIE_INSTALL_DIR=/opt/mlir-aie",
                   "LANG=C.UTF-8", "TMPDIR=/tmp/b"});
}

TEST_CASE("A prefix never passes the denied names, and PATH has a default") {
  CHECK(Of({"IRONTUNE_*", "NOTIFY*", "WATCHDOG_*"},
           {"IRONTUNE_TOKEN=t", "IRONTUNE_FAKE=1", "NOTIFY_SOCKET=/n",
            "WATCHDOG_USEC=1000"}) ==
        Env{"IRONTUNE_FAKE=1", std::string("PATH=") + kBuilderDefaultPath});
  // A name environ holds twice: the first, as getenv reads it.
  CHECK(Of({}, {"PATH=/a", "PATH=/b", "=junk", "noequals"}) == Env{"PATH=/a"});
}

TEST_CASE("The names --builder-env gives are checked") {
  CHECK(CheckBuilderEnvNames({"XILINX_XRT", "PYTHONPATH", "MLIR_AIE_*", "_X"})
            .ok());
  for (const char* bad : {"NOTIFY_SOCKET", "IRONTUNE_TOKEN", "LISTEN_FDS"}) {
    const absl::Status s = CheckBuilderEnvNames({bad});
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(s.message().find("irontuned never passes") != std::string::npos);
  }
  for (const char* bad : {"", "1X", "A-B", "A=B", "X*Y", "**"}) {
    INFO(bad);
    CHECK(CheckBuilderEnvNames({bad}).message().find("not a variable's name") !=
          std::string::npos);
  }
  CHECK(CheckBuilderEnvNames({"*"}).message() ==
        "--builder-env \"*\": a prefix needs at least one character before "
        "the *");
}

}  // namespace
}  // namespace irontune
