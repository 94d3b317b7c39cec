// The fleet's toolchain: the builder's environment and the NPU's stack,
// one stable text; and, against the test cluster, a figure timed under one
// toolchain is a miss for a box of another.
#include "daemon/fleet/fleet_toolchain.h"

#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "tests/fleet/fleet_fixtures.h"

namespace irontune {
namespace {

using testing::Figure;
using testing::FreshStore;
using testing::OpenStore;

// A Strix box's stack: the out-of-tree driver and XRT 2.19's tag.
StackVersions StrixStack(const std::string& firmware = "1.5.2.380") {
  return {firmware, "2.21.0_20260821, 856409ca",
          "2.19.194, 7d8151e6ee73c6ec2e99501a58c9c2eca6cc68ce"};
}

constexpr char kBuilder[] =
    "command-builder/1 /usr/bin/iron-builder; iron-builder 1 (IRON 0.9.1)";

TEST_CASE("A toolchain names the stack and the builder, the same each time",
          "[fleet]") {
  const std::string toolchain = FleetToolchain(kBuilder, StrixStack());
  CHECK(toolchain ==
        "firmware \"1.5.2.380\"; driver \"2.21.0_20260821, 856409ca\"; xrt "
        "\"2.19.194, 7d8151e6ee73c6ec2e99501a58c9c2eca6cc68ce\"; builder "
        "\"command-builder/1 /usr/bin/iron-builder; iron-builder 1 (IRON "
        "0.9.1)\"");
  CHECK(FleetToolchain(kBuilder, StrixStack()) == toolchain);
  CHECK(FleetToolchain("sim-builder/1", {"sim-1", "sim", "sim"}) ==
        "firmware \"sim-1\"; driver \"sim\"; xrt \"sim\"; builder "
        "\"sim-builder/1\"");
  CHECK(FleetToolchain("", {}) ==
        "firmware unknown; driver unknown; xrt unknown; builder unknown");
}

TEST_CASE("Boxes differing in one version have different toolchains",
          "[fleet]") {
  const std::string base = FleetToolchain(kBuilder, StrixStack());
  CHECK(FleetToolchain(kBuilder, StrixStack("1.5.2.381")) != base);
  StackVersions driver = StrixStack();
  driver.driver = "in-tree (Linux 6.14.0-27-generic)";
  CHECK(FleetToolchain(kBuilder, driver) != base);
  StackVersions xrt = StrixStack();
  xrt.xrt = "2.26.0, 963c58ee224491e191b3be78d76f51e55e152177";
  CHECK(FleetToolchain(kBuilder, xrt) != base);
  CHECK(FleetToolchain("command-builder/1 /usr/bin/iron-builder; "
                       "iron-builder 1 (IRON 0.9.2)",
                       StrixStack()) != base);
  // A firmware the box cannot tell is not some known one.
  CHECK(FleetToolchain(kBuilder, StrixStack("")) != base);
  CHECK(FleetToolchain(kBuilder, StrixStack("unknown")) !=
        FleetToolchain(kBuilder, StrixStack("")));
}

TEST_CASE("No version can pass for another part of the toolchain", "[fleet]") {
  // The same characters in other places: quoted and escaped, they differ.
  StackVersions a = {"1\"; driver \"2", "3", ""};
  StackVersions b = {"1", "2\"; driver \"3", ""};
  CHECK(FleetToolchain("b", a) != FleetToolchain("b", b));
  CHECK(FleetToolchain("x\\", {"", "", ""}) !=
        FleetToolchain("x\\\\", {"", "", ""}));
  CHECK(FleetToolchain("b", {"1", "", ""}) ==
        "firmware \"1\"; driver unknown; xrt unknown; builder \"b\"");
  CHECK(FleetToolchain("b\n", {"\"", "", ""}) ==
        "firmware \"\\\"\"; driver unknown; xrt unknown; builder \"b\\n\"");
}

TEST_CASE("A figure timed on other firmware is a miss, never pulled",
          "[fleet][pg]") {
  const FleetConnection connection = FreshStore();
  auto a = OpenStore(connection, "box a");
  auto b = OpenStore(connection, "box b");
  auto c = OpenStore(connection, "box c");
  const FleetPartition on_a = {"npu-strix", PowerMode::kPerformance,
                               FleetToolchain(kBuilder, StrixStack())};
  FleetPartition on_b = on_a;  // only the firmware differs
  on_b.toolchain = FleetToolchain(kBuilder, StrixStack("1.5.2.381"));
  const std::vector<CacheEntry> rows = {Figure(1, 10.0)};
  REQUIRE(a->MergeFigures(on_a, rows)->inserted == 1);
  REQUIRE(a->Decide(on_a, "GEMM|M=64", "{\"tile_m\": 32}", std::nullopt).ok());

  const std::vector<std::string> keys = {rows[0].key};
  auto got = b->GetFigures(on_b, keys);
  REQUIRE(got.ok());
  CHECK_FALSE((*got)[0].has_value());
  auto pulled = b->FiguresAfter(on_b, FigureCursor{}, 100);
  REQUIRE(pulled.ok());
  CHECK(pulled->empty());
  auto decided = b->GetDecision(on_b, "GEMM|M=64");
  REQUIRE(decided.ok());
  CHECK_FALSE(decided->has_value());

  // A box of the same toolchain gets it.
  auto same = c->FiguresAfter(on_a, FigureCursor{}, 100);
  REQUIRE(same.ok());
  REQUIRE(same->size() == 1);
  CHECK(same->front().entry.key == rows[0].key);
  CHECK(c->GetDecision(on_a, "GEMM|M=64")->has_value());
}

}  // namespace
}  // namespace irontune
