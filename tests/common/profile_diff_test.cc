#include "common/profile_diff.h"

#include <catch2/catch.hpp>
#include <string>

namespace irontune {
namespace {

// A diff whose changed entry has `gain` +- `noise` us per pass, weighted
// (weighted false: as an older daemon sends it, per step only), and whose
// model takes `model_us` a pass (0: not sent).
v1::ProfileDiff OneChange(double gain, double noise, bool weighted = true,
                          double model_us = 10000) {
  v1::ProfileDiff diff;
  v1::EntryChange* c = diff.add_changed();
  c->set_operator_class("SiLU");
  c->set_has_gain(true);
  c->set_gain_us(gain / 16);
  c->set_noise_us(noise / 16);
  if (weighted) {
    c->set_has_weighted_gain(true);
    c->set_weighted_gain_us(gain);
    c->set_weighted_noise_us(noise);
  }
  if (model_us > 0) {
    diff.set_has_model_time(true);
    diff.set_model_time_us(model_us);
  }
  return diff;
}

TEST_CASE("ParseCheckMinGain: a share, a percentage or microseconds",
          "[profile]") {
  auto share = ParseCheckMinGain("0.002");
  REQUIRE(share.ok());
  CHECK(share->unit == CheckMinGain::Unit::kShare);
  CHECK(share->value == Approx(0.002));
  auto percent = ParseCheckMinGain("0.1%");
  REQUIRE(percent.ok());
  CHECK(percent->unit == CheckMinGain::Unit::kShare);
  CHECK(percent->value == Approx(0.001));
  CHECK(CheckMinGainText(*percent) == "0.1%");
  for (const char* text : {"25us", "25µs"}) {
    auto us = ParseCheckMinGain(text);
    REQUIRE(us.ok());
    CHECK(us->unit == CheckMinGain::Unit::kMicros);
    CHECK(us->value == Approx(25));
    CHECK(CheckMinGainText(*us) == "25 µs");
  }
  CHECK(ParseCheckMinGain("0")->value == 0);
  CHECK(ParseCheckMinGain("2000us").ok());  // microseconds have no cap
  CHECK(ParseCheckMinGain("0.1 %")->value == Approx(0.001));
  for (const char* bad :
       {"", "%", "us", "fast", "-1us", "-0.1%", "1", "100%", "nan", "inf"}) {
    auto r = ParseCheckMinGain(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(r.status().message()),
               Catch::StartsWith("--check-min-gain \"" + std::string(bad)));
  }
}

TEST_CASE("WeighCheck: a change counts when its gain clears the threshold",
          "[profile]") {
  const CheckMinGain share{CheckMinGain::Unit::kShare, 0.001};  // 10 us here
  SECTION("well above: counts") {
    const CheckVerdict v = WeighCheck(OneChange(30, 2), share);
    REQUIRE(v.weighed);
    CHECK(v.threshold_us == Approx(10));
    CHECK(v.model_time_us == Approx(10000));
    REQUIRE(v.entries.size() == 1);
    CHECK(v.entries[0].kind == CheckedEntry::Kind::kChanged);
    CHECK(v.entries[0].gain_us == Approx(30));
    CHECK(v.entries[0].counts);
    CHECK(v.fails);
  }
  SECTION("below: listed, not counted") {
    const CheckVerdict v = WeighCheck(OneChange(4, 1), share);
    REQUIRE(v.entries.size() == 1);
    CHECK_FALSE(v.entries[0].counts);
    CHECK_FALSE(v.fails);
  }
  SECTION("above the threshold on its estimate, not beyond its noise") {
    // 12 - 2 x 1.5 = 9 < 10: a gain near the threshold fails in few runs.
    CHECK_FALSE(WeighCheck(OneChange(12, 1.5), share).fails);
    CHECK(WeighCheck(OneChange(12, 0.9), share).fails);
  }
  SECTION("a slower change never counts") {
    CHECK_FALSE(WeighCheck(OneChange(-50, 1), share).fails);
  }
  SECTION("microseconds need no model time") {
    const CheckMinGain us{CheckMinGain::Unit::kMicros, 25};
    const CheckVerdict v = WeighCheck(OneChange(30, 2, true, 0), us);
    REQUIRE(v.weighed);
    CHECK(v.threshold_us == 25);
    CHECK(v.model_time_us == 0);
    CHECK(v.fails);  // 30 - 2 x 2 = 26 > 25
  }
}

TEST_CASE("WeighCheck: microseconds, zero, added and removed entries",
          "[profile]") {
  const CheckMinGain us{CheckMinGain::Unit::kMicros, 25};
  CHECK_FALSE(WeighCheck(OneChange(30, 3, true, 0), us).fails);  // 24
  // A threshold of 0: any gain beyond its noise counts, a rewrite of the
  // same setting (0 +- 0) does not.
  const CheckMinGain zero{CheckMinGain::Unit::kShare, 0};
  CHECK(WeighCheck(OneChange(0.5, 0.2), zero).fails);
  CHECK_FALSE(WeighCheck(OneChange(0, 0), zero).fails);
  // An added entry is weighed by its added_gains element; one without
  // (nothing measured) counts, as does a removed entry.
  v1::ProfileDiff added = OneChange(1, 1);
  added.add_added()->set_operator_class("GEMV");
  v1::EntryGain* g = added.add_added_gains();
  g->set_has_gain(true);
  g->set_has_weighted_gain(true);
  g->set_weighted_gain_us(2);
  g->set_weighted_noise_us(0.5);
  CheckVerdict v = WeighCheck(added, kDefaultCheckMinGain);
  REQUIRE(v.entries.size() == 2);
  CHECK(v.entries[1].kind == CheckedEntry::Kind::kAdded);
  CHECK(v.entries[1].index == 0);
  CHECK_FALSE(v.fails);
  added.add_added()->set_operator_class("GEMM");  // no gain sent
  v = WeighCheck(added, kDefaultCheckMinGain);
  REQUIRE(v.entries.size() == 3);
  CHECK_FALSE(v.entries[2].has_gain);
  CHECK(v.entries[2].counts);
  CHECK(v.fails);
  v1::ProfileDiff removed = OneChange(1, 1);
  removed.add_removed()->set_operator_class("RoPE");
  v = WeighCheck(removed, kDefaultCheckMinGain);
  REQUIRE(v.entries.size() == 2);
  CHECK(v.entries[1].kind == CheckedEntry::Kind::kRemoved);
  CHECK(v.entries[1].counts);
}

TEST_CASE("WeighCheck: what an older daemon sent falls back to any change",
          "[profile]") {
  // Per-step gains only: every moved entry counts, and the verdict says
  // why, whatever the threshold.
  const CheckVerdict old = WeighCheck(OneChange(1, 1, false), {});
  CHECK_FALSE(old.weighed);
  CHECK_THAT(old.fallback, Catch::Contains("no weighted gains"));
  CHECK(old.fails);
  CHECK(old.threshold_us == 0);
  // Weighted gains, but no model time to take a share of: a share cannot
  // be weighed, microseconds can.
  const CheckVerdict no_time =
      WeighCheck(OneChange(1, 1, true, 0), kDefaultCheckMinGain);
  CHECK_FALSE(no_time.weighed);
  CHECK_THAT(no_time.fallback, Catch::Contains("no model time"));
  CHECK(no_time.fails);
  CHECK_FALSE(
      WeighCheck(OneChange(1, 1, true, 0), {CheckMinGain::Unit::kMicros, 25})
          .fails);
  // Nothing moved: nothing fails, fallback or not.
  v1::ProfileDiff none;
  CHECK_FALSE(WeighCheck(none, kDefaultCheckMinGain).fails);
  CHECK(WeighCheck(none, kDefaultCheckMinGain).entries.empty());
}

}  // namespace
}  // namespace irontune
