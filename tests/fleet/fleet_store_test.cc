#include "daemon/fleet/fleet_store.h"

#include <cmath>
#include <limits>

#include "catch2/catch.hpp"
#include "tests/fleet/fleet_fixtures.h"

namespace irontune {
namespace {

using testing::Figure;
using testing::FreshStore;
using testing::OpenStore;
using testing::Strix;

std::vector<std::string> Keys(std::initializer_list<int> ns) {
  std::vector<std::string> keys;
  for (int n : ns) keys.push_back(Figure(n, 0).key);
  return keys;
}

TEST_CASE("Merging figures inserts what is new and keeps what is there",
          "[fleet][pg]") {
  auto store = OpenStore(FreshStore(), "box a");
  const std::vector<CacheEntry> first = {Figure(1, 10.0), Figure(2, 20.0)};
  auto counts = store->MergeFigures(Strix(), first);
  REQUIRE(counts.ok());
  CHECK(counts->inserted == 2);
  CHECK(counts->present == 0);

  // The same keys with other figures: the first stored wins.
  const std::vector<CacheEntry> again = {Figure(1, 99.0), Figure(3, 30.0)};
  counts = store->MergeFigures(Strix(), again);
  REQUIRE(counts.ok());
  CHECK(counts->inserted == 1);
  CHECK(counts->present == 1);

  auto got = store->GetFigures(Strix(), Keys({1, 2, 3, 4}));
  REQUIRE(got.ok());
  REQUIRE(got->size() == 4);
  REQUIRE((*got)[0].has_value());
  CHECK((*got)[0]->t_step_us() == 10.0);
  CHECK((*got)[0]->power_mode() == "performance");  // filled in
  CHECK((*got)[1]->t_step_us() == 20.0);
  CHECK((*got)[2]->t_step_us() == 30.0);
  CHECK_FALSE((*got)[3].has_value());
}

TEST_CASE("A figure never crosses its partition or toolchain", "[fleet][pg]") {
  auto store = OpenStore(FreshStore(), "box a");
  const std::vector<CacheEntry> rows = {Figure(7, 7.5)};
  REQUIRE(store->MergeFigures(Strix(), rows).ok());

  FleetPartition other_mode = Strix(PowerMode::kPowersaver);
  FleetPartition other_platform = Strix();
  other_platform.platform = "npu-krackan";
  FleetPartition other_tools = Strix();
  other_tools.toolchain = "fw 1.2.0; xrt 2.20.0; iron 0123abc";
  for (const FleetPartition& p : {other_mode, other_platform, other_tools}) {
    auto got = store->GetFigures(p, Keys({7}));
    REQUIRE(got.ok());
    CHECK_FALSE((*got)[0].has_value());
  }
  auto own = store->GetFigures(Strix(), Keys({7}));
  REQUIRE(own.ok());
  CHECK((*own)[0].has_value());
}

TEST_CASE("Rows that fail their checks are refused, the rest merged",
          "[fleet][pg]") {
  auto store = OpenStore(FreshStore(), "box a");
  CacheEntry bad_key = Figure(1, 1.0);
  bad_key.key = "'; DROP TABLE irontune.figures; --";
  const std::vector<CacheEntry> rows = {
      Figure(1, 1.0, "powersaver"),  // another partition's mode
      bad_key,
      Figure(2, std::numeric_limits<double>::quiet_NaN()),
      Figure(3, -1.0),
      Figure(4, 4.0, "performance"),
  };
  auto counts = store->MergeFigures(Strix(), rows);
  REQUIRE(counts.ok());
  CHECK(counts->inserted == 1);
  REQUIRE(counts->refused.size() == 4);
  CHECK_THAT(counts->refused[0],
             Catch::Contains("power mode powersaver") &&
                 Catch::Contains("partition's performance"));
  CHECK_THAT(counts->refused[1], Catch::Contains("not a cache key digest"));
  auto got = store->GetFigures(Strix(), Keys({1, 2, 3, 4}));
  REQUIRE(got.ok());
  CHECK_FALSE((*got)[0].has_value());
  CHECK_FALSE((*got)[1].has_value());
  CHECK_FALSE((*got)[2].has_value());
  CHECK((*got)[3].has_value());
}

TEST_CASE("Verdicts are kept per platform, the first stored winning",
          "[fleet][pg]") {
  auto store = OpenStore(FreshStore(), "box a");
  const VerdictKey key{"recipe-1", "env: iron 0123abc"};
  const std::vector<VerdictRow> first = {{key, "fits"},
                                         {{"", "env"}, "refused: x"}};
  auto counts = store->MergeVerdicts("npu-strix", first);
  REQUIRE(counts.ok());
  CHECK(counts->inserted == 1);
  CHECK(counts->refused.size() == 1);
  const std::vector<VerdictRow> later = {{key, "refused: too big"}};
  REQUIRE(store->MergeVerdicts("npu-strix", later)->present == 1);

  const std::vector<VerdictKey> keys = {key, {"recipe-2", "env"}};
  auto got = store->GetVerdicts("npu-strix", keys);
  REQUIRE(got.ok());
  CHECK((*got)[0] == std::optional<std::string>("fits"));
  CHECK_FALSE((*got)[1].has_value());
  auto phoenix = store->GetVerdicts("npu-phoenix", keys);
  REQUIRE(phoenix.ok());
  CHECK_FALSE((*phoenix)[0].has_value());
}

TEST_CASE("The first committed decision for a shape stands", "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto a = OpenStore(c, "box a");
  auto b = OpenStore(c, "box b");
  auto first = a->Decide(Strix(), "gemm M=128", "{\"tile_m\": 64}", 1);
  REQUIRE(first.ok());
  CHECK(*first == "{\"tile_m\": 64}");
  auto second = b->Decide(Strix(), "gemm M=128", "{\"tile_m\": 32}", 2);
  REQUIRE(second.ok());
  CHECK(*second == "{\"tile_m\": 64}");
  CHECK(b->GetDecision(Strix(), "gemm M=128").value() ==
        std::optional<std::string>("{\"tile_m\": 64}"));
  CHECK_FALSE(b->GetDecision(Strix(PowerMode::kTurbo), "gemm M=128")
                  .value()
                  .has_value());
}

TEST_CASE("Text the store cannot hold is refused, naming it", "[fleet][pg]") {
  auto store = OpenStore(FreshStore(), "box a");
  auto nul = store->Decide(Strix(), std::string("gemm\0M=1", 9), "{}", 1);
  REQUIRE(nul.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(nul.status().message()), Catch::Contains("NUL byte"));
  auto bad_utf8 = store->Decide(Strix(), "gemm \xff\xfe", "{}", 1);
  CHECK(bad_utf8.status().code() == absl::StatusCode::kInvalidArgument);
  // The connection is still usable.
  CHECK(store->Decide(Strix(), "gemm M=1", "{}", 1).ok());
}

}  // namespace
}  // namespace irontune
