#include "daemon/xrt/subprocess.h"

#include "catch2/catch.hpp"

namespace irontune {
namespace {

TEST_CASE("RunCommand captures output and the exit code", "[xrt][subprocess]") {
  absl::StatusOr<CommandResult> r = RunCommand(
      {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, absl::Seconds(10));
  REQUIRE(r.ok());
  CHECK(r->exit_code == 3);
  CHECK(r->out == "out\n");
  CHECK(r->err == "err\n");
}

TEST_CASE("RunCommand kills what outlives its time", "[xrt][subprocess]") {
  absl::StatusOr<CommandResult> r =
      RunCommand({"/bin/sh", "-c", "exec sleep 30"}, absl::Milliseconds(200));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_THAT(std::string(r.status().message()),
             Catch::Contains("exec sleep 30"));
}

TEST_CASE("RunCommand names a program it cannot run", "[xrt][subprocess]") {
  absl::StatusOr<CommandResult> r =
      RunCommand({"/nonexistent/xrt-smi", "examine"}, absl::Seconds(10));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(r.status().message()),
             Catch::Contains("/nonexistent/xrt-smi"));
}

TEST_CASE("RunCommand keeps at most max_bytes", "[xrt][subprocess]") {
  absl::StatusOr<CommandResult> r = RunCommand(
      {"/bin/sh", "-c", "head -c 100000 /dev/zero"}, absl::Seconds(10), 1000);
  REQUIRE(r.ok());
  CHECK(r->out.size() == 1000);
  CHECK(r->exit_code == 0);
}

}  // namespace
}  // namespace irontune
