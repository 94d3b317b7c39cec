#include "daemon/tune/plan.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/value.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

ShapeCost Cost(double weighted_us, double device_seconds) {
  ShapeCost c;
  c.weighted_us = weighted_us;
  c.device_seconds = device_seconds;
  return c;
}

TEST_CASE("plan: shapes are tuned by weighted time, ties in Shapes order") {
  const std::vector<ShapeCost> costs = {Cost(5, 1), Cost(80, 1), Cost(5, 1),
                                        Cost(300, 1), Cost(0, 1)};
  CHECK(TuneOrder(costs) == std::vector<size_t>{3, 1, 0, 2, 4});
  CHECK(TuneOrder({}).empty());
}

TEST_CASE("plan: the step floor takes the largest of floor, bytes, bound") {
  const Platform platform = testing::PlatformOf("npu2");
  // 4096 x 4096 bf16 weights: 32 MiB at the memory peak, about 280 us.
  const v1::Operator big = testing::Gemv(4096, 4096, 2, 64, 64, 1);
  const double big_us = StepFloorUs(big, {}, platform, KernelCycles());
  CHECK(big_us > 250);
  CHECK(big_us < 300);
  // A tiny operator costs the step floor.
  const v1::Operator tiny = testing::Gemv(8, 8, 2, 8, 8, 1);
  CHECK(StepFloorUs(tiny, {}, platform, KernelCycles()) == kStepFloorUs);
}

TEST_CASE("plan: every setting up to exhaustive, two descent passes above") {
  auto setting = [](int64_t a, int64_t b) {
    v1::Field fa, fb;
    fa.set_name("a");
    *fa.mutable_value() = IntValue(a);
    fb.set_name("b");
    *fb.mutable_value() = IntValue(b);
    return TunableValues{fa, fb};
  };
  std::vector<TunableValues> all;
  for (int a = 0; a < 10; ++a) {
    for (int b = 0; b < 10; ++b) all.push_back(setting(a, b));
  }
  CHECK(PlannedSettings(all, 100) == 100);
  CHECK(PlannedSettings(all, 32) == 2 * (10 + 10));
  CHECK(PlannedSettings({}, 32) == 1);
}

TEST_CASE("plan: the distinct values of each tunable are counted by name") {
  auto field = [](const char* name, v1::Value value) {
    v1::Field f;
    f.set_name(name);
    *f.mutable_value() = std::move(value);
    return f;
  };
  const std::vector<TunableValues> settings = {
      {field("a", IntValue(1)), field("b", StringValue("x"))},
      {field("a", IntValue(2)), field("b", StringValue("x"))},
      {field("a", IntValue(1)), field("c", BoolValue(true))},
  };
  const std::map<std::string, size_t> counts = DistinctValueCounts(settings);
  CHECK(counts == std::map<std::string, size_t>{{"a", 2}, {"b", 1}, {"c", 1}});
  CHECK(DistinctValueCounts({}).empty());
}

TEST_CASE("plan: the estimate is corrected by measured over planned") {
  JobEstimator e({Cost(3, 10), Cost(2, 20), Cost(1, 30)}, 0);
  CHECK(e.planned_seconds() == 60);
  JobEstimate start = e.Estimate(0, std::nullopt, 0);
  CHECK(start.remaining_seconds == 60);
  CHECK(start.done == 0);
  // Within shape 0, what it used comes off its own part only.
  JobEstimate mid = e.Estimate(4, 0, 4);
  CHECK(mid.remaining_seconds == 56);
  CHECK(mid.current_seconds == 6);
  CHECK(e.Estimate(40, 0, 40).remaining_seconds == 50);
  // Shape 0 took twice its plan: the rest is scaled by 2.
  e.Finished(0, 20, /*tuned=*/true);
  JobEstimate after = e.Estimate(20, std::nullopt, 0);
  CHECK(after.done == 1);
  CHECK(after.remaining_seconds == Approx(2 * (20 + 30)));
  // An untuned shape drops out of what remains and of the correction.
  e.Finished(2, 0, /*tuned=*/false);
  CHECK(e.Estimate(20, std::nullopt, 0).remaining_seconds == Approx(40));
  e.Finished(1, 40, /*tuned=*/true);
  const JobEstimate end = e.Estimate(60, std::nullopt, 0);
  CHECK(end.done == 3);
  CHECK(end.total == 3);
  CHECK(end.remaining_seconds == 0);
}

TEST_CASE("plan: a budget caps what remains, the shape under way finishes") {
  JobEstimator e({Cost(3, 10), Cost(2, 20), Cost(1, 30)}, 15);
  CHECK(e.Estimate(0, std::nullopt, 0).remaining_seconds == 15);
  // Under way with 12 s used: the budget leaves 3, the shape 8 of its 10.
  JobEstimate mid = e.Estimate(2, 0, 2);
  CHECK(mid.remaining_seconds == 13);
  mid = e.Estimate(12, 0, 2);
  CHECK(mid.remaining_seconds == 8);
  e.Finished(0, 16, /*tuned=*/true);
  CHECK(e.Estimate(16, std::nullopt, 0).remaining_seconds == 0);
}

}  // namespace
}  // namespace irontune
