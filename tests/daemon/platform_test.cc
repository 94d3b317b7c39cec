#include "daemon/npu/platform.h"

#include <catch2/catch.hpp>

namespace irontune {
namespace {

TEST_CASE("PlatformSlug spells partitions as IRON's directories",
          "[platform]") {
  CHECK(PlatformSlug("NPU Strix") == "npu-strix");
  CHECK(PlatformSlug("  NPU  Phoenix (rev 2) ") == "npu-phoenix-rev-2");
  CHECK(PlatformSlug("RyzenAI-npu4") == "ryzenai-npu4");
  CHECK(PlatformSlug("---") == "");
}

TEST_CASE("A platform answers to its name, short name, slug and generation",
          "[platform]") {
  const Platform strix{"NPU Strix", "npu2"};
  for (const char* asked : {"NPU Strix", "npu strix", "strix", "STRIX",
                            "npu-strix", "npu2", "NPU2", " npu2 ", ""}) {
    INFO(asked);
    CHECK(PlatformAnswersTo(strix, asked));
  }
  for (const char* asked : {"NPU Phoenix", "phoenix", "npu1", "npu", "str",
                            "npu-strix-halo", "krackan"}) {
    INFO(asked);
    CHECK_FALSE(PlatformAnswersTo(strix, asked));
  }
}

TEST_CASE("Power modes parse from xrt-smi's names in any case", "[platform]") {
  CHECK(ParsePowerMode(" Performance\n").value() == PowerMode::kPerformance);
  CHECK(ParsePowerMode("turbo").value() == PowerMode::kTurbo);
  const absl::StatusOr<PowerMode> bad = ParsePowerMode("fast");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("\"fast\"") != std::string::npos);
  for (PowerMode m :
       {PowerMode::kDefault, PowerMode::kPowersaver, PowerMode::kBalanced,
        PowerMode::kPerformance, PowerMode::kTurbo}) {
    CHECK(ParsePowerMode(PowerModeName(m)).value() == m);
  }
}

}  // namespace
}  // namespace irontune
