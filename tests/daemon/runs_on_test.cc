#include <catch2/catch.hpp>
#include <string>

#include "daemon/npu/platform.h"
#include "daemon/scheduler/requests.h"

namespace irontune {
namespace {

// Name, generation, power mode.
Platform StrixAtBalanced() {
  return Platform{"NPU Strix", "npu2", PowerMode::kBalanced};
}

TEST_CASE("requests: a box runs a job that names its NPU and mode, or none") {
  const Platform strix = StrixAtBalanced();
  CHECK(CheckRunsOn("", "", strix).ok());
  CHECK(CheckRunsOn("npu2", "", strix).ok());
  CHECK(CheckRunsOn("strix", "balanced", strix).ok());
  CHECK(CheckRunsOn("NPU Strix", "Balanced", strix).ok());
}

TEST_CASE("requests: a box refuses a job for another NPU or power mode") {
  const Platform strix = StrixAtBalanced();
  const absl::Status other = CheckRunsOn("npu1", "", strix);
  CHECK(other.code() == absl::StatusCode::kFailedPrecondition);
  const std::string text(other.message());
  INFO(text);
  CHECK(text.find("\"npu1\"") != std::string::npos);
  CHECK(text.find("NPU Strix (npu2) at power mode balanced") !=
        std::string::npos);
  const absl::Status mode = CheckRunsOn("strix", "performance", strix);
  CHECK(mode.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(mode.message()).find("at power mode performance") !=
        std::string::npos);
  CHECK(CheckRunsOn("", "fast", strix).code() ==
        absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace irontune
