#include <string>

#include "catch2/catch.hpp"
#include "daemon/process/daemon.h"
#include "tests/builder/builder_fixtures.h"

namespace irontune {
namespace {

TEST_CASE("irontuned refuses a builder command with a simulated NPU") {
  const std::string dir = e2e::TempDir("daemon-builder");
  DaemonOptions options;
  options.device = "sim:npu2";
  options.state_dir = dir;
  options.listen = {"unix:" + dir + "/sock"};
  options.builder_command = testing::FakeBuilderPath();
  absl::StatusOr<std::unique_ptr<Daemon>> daemon =
      Daemon::Start(std::move(options));
  REQUIRE_FALSE(daemon.ok());
  CHECK(daemon.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(daemon.status().message() ==
        "--builder-command builds designs for a real NPU (--device xrt:N); "
        "the simulated NPU sim:npu2 builds its own and cannot load them");
}

}  // namespace
}  // namespace irontune
