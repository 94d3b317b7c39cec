#include "daemon/scheduler/replies.h"

#include <catch2/catch.hpp>
#include <string>

namespace irontune {
namespace {

Comparison Timed(double delta_us, std::optional<double> noise_us) {
  Comparison c;
  v1::Field f;
  f.set_name("tile_size");
  f.mutable_value()->set_int_value(256);
  c.tunables.push_back(f);
  c.delta_us = delta_us;
  c.noise_us = noise_us;
  return c;
}

TEST_CASE("TrialOf keeps a setting's tunables, delta, noise and refusal") {
  Comparison c = Timed(-10.5, 1.25);
  c.refused = "output differs";
  const v1::Trial t = TrialOf(c);
  REQUIRE(t.tunables_size() == 1);
  CHECK(t.tunables(0).name() == "tile_size");
  CHECK(t.tunables(0).value().int_value() == 256);
  CHECK(t.delta_us() == -10.5);
  CHECK(t.has_noise_us());
  CHECK(t.noise_us() == 1.25);
  CHECK(t.refused() == "output differs");
}

TEST_CASE("TrialOf leaves the noise unset for a setting of one round") {
  const v1::Trial t = TrialOf(Timed(3, std::nullopt));
  CHECK_FALSE(t.has_noise_us());
  CHECK(t.refused().empty());
}

TEST_CASE("SetBest fills a progress event's best setting") {
  v1::ShapeProgress p;
  SetBest(Timed(-2, std::nullopt), &p);
  CHECK(p.has_best());
  REQUIRE(p.best_size() == 1);
  CHECK(p.best(0).name() == "tile_size");
  CHECK(p.best_delta_us() == -2);
  CHECK(p.best_noise_us() == 0);
}

TEST_CASE("CacheSummaryOf gives the hit rate, 0 before any lookup") {
  CacheStats stats;
  stats.rows = 7;
  stats.database_bytes = 4096;
  CHECK(CacheSummaryOf(stats).hit_rate() == 0);
  stats.hits = 1;
  stats.misses = 3;
  const v1::CacheSummary s = CacheSummaryOf(stats);
  CHECK(s.rows() == 7);
  CHECK(s.bytes() == 4096);
  CHECK(s.hits() == 1);
  CHECK(s.misses() == 3);
  CHECK(s.hit_rate() == Approx(0.25));
}

TEST_CASE("SetPlatform and ClearCacheResponseOf copy every field") {
  Platform platform;
  platform.name = "NPU Strix";
  platform.generation = "npu2";
  platform.power_mode = PowerMode::kTurbo;
  platform.columns = 8;
  platform.core_mhz = 1810;
  platform.hw_contexts = 6;
  v1::StatusResponse status;
  SetPlatform(platform, &status);
  CHECK(status.platform() == "NPU Strix");
  CHECK(status.generation() == "npu2");
  CHECK(status.power_mode() == std::string(PowerModeName(PowerMode::kTurbo)));
  CHECK(status.columns() == 8);
  CHECK(status.core_mhz() == 1810);
  CHECK(status.hw_contexts() == 6);

  ClearCounts cleared;
  cleared.measurements = 5;
  cleared.iron_costs = 2;
  cleared.verdicts = 1;
  const v1::ClearCacheResponse r = ClearCacheResponseOf(cleared);
  CHECK(r.measurements() == 5);
  CHECK(r.iron_costs() == 2);
  CHECK(r.verdicts() == 1);
}

}  // namespace
}  // namespace irontune
