// The example recording is one a real model could run: every operator's
// recorded setting builds on the NPU it was recorded for.
#include <catch2/catch.hpp>
#include <string>

#include "common/recording.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"

namespace irontune {
namespace {

TEST_CASE("every recorded setting of the example builds on sim:npu2") {
  auto calls = LoadRecording(std::string(IRONTUNE_SOURCE_DIR) +
                             "/examples/llama-3.2-1b.rec");
  REQUIRE(calls.ok());
  auto device = MakeSimDevice("sim:npu2");
  REQUIRE(device.ok());
  auto platform = (*device)->GetPlatform();
  REQUIRE(platform.ok());
  SimBuilder builder;
  for (int i = 0; i < calls->operators_size(); ++i) {
    BuildRequest request{calls->operators(i), *platform, 1, true,
                         v1::PACKAGING_FULL_ELF};
    auto outcome = builder.Build(request);
    REQUIRE(outcome.ok());
    INFO("operators[" << i << "] " << calls->operators(i).class_name() << ": "
                      << outcome->refusal);
    CHECK(outcome->artifact.has_value());
  }
}

}  // namespace
}  // namespace irontune
