#include "daemon/tune/tuned_profile.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <vector>

#include "common/profile.h"
#include "daemon/tune/settings.h"
#include "daemon/tune/settings_timer.h"
#include "daemon/tune/shapes.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

// A trial of `s` whose members are `delta` +- `noise` from the recorded
// setting, each.
ShapeTrial TrialOf(const TunableValues& s, const std::vector<double>& delta,
                   const std::vector<double>& noise) {
  ShapeTrial t = Untimed(s, delta.size());
  t.trial.delta_us = 0;
  double squares = 0;
  for (size_t m = 0; m < delta.size(); ++m) {
    t.member_delta_us[m] = delta[m];
    t.member_noise_us[m] = noise[m];
    t.trial.delta_us += delta[m];
    squares += noise[m] * noise[m];
  }
  t.trial.noise_us = std::sqrt(squares);
  return t;
}

// `shape`'s recorded setting with its first tunable at `value`.
TunableValues Moved(const v1::Calls& calls, const Shape& shape, int64_t value) {
  TunableValues s = RecordedSetting(calls.operators(shape.members[0].op));
  s[0].mutable_value()->set_int_value(value);
  return s;
}

TEST_CASE(
    "TunedProfile: each entry's gain weighted by its steps, and the "
    "model's time per pass") {
  v1::Calls calls = testing::AddSiluCalls();
  // The ElementwiseAdd runs 3 steps, the SiLU 1.
  v1::Timed& call = *calls.mutable_calls(0);
  for (int k = 0; k < 2; ++k) {
    *call.mutable_recording()->add_steps() = call.recording().steps(0);
  }
  auto shapes = Shapes(calls, RecordingSearchSpace(), "npu2");
  REQUIRE(shapes.ok());
  REQUIRE(shapes->size() == 2);
  const Shape& add = (*shapes)[0];
  const Shape& silu = (*shapes)[1];
  REQUIRE(add.members.size() == 1);
  REQUIRE(add.members[0].steps == 3);
  REQUIRE(silu.members[0].steps == 1);
  const TunableValues add_recorded =
      RecordedSetting(calls.operators(add.members[0].op));
  const TunableValues silu_recorded =
      RecordedSetting(calls.operators(silu.members[0].op));

  // The Add takes a setting 0.5 us a step faster (confirmed: 0.4 +- 0.05
  // against the incumbent, the recorded setting); the SiLU stays.
  std::vector<ShapeResult> results(2);
  ShapeResult& a = results[0];
  a.key = add.key;
  a.trials = {Untimed(add_recorded, 1),
              TrialOf(Moved(calls, add, 999), {-0.5}, {0.1})};
  a.best = 1;
  a.against_incumbent = TrialOf(Moved(calls, add, 999), {-0.4}, {0.05});
  a.recorded_us = 3.0;
  ShapeResult& s = results[1];
  s.key = silu.key;
  s.trials = {Untimed(silu_recorded, 1)};
  s.against_incumbent = Untimed(silu_recorded, 1);
  s.recorded_us = 5.0;

  const Profile empty;
  TunedProfile tuned(calls, empty, *shapes);
  tuned.Add(0, a);
  tuned.Add(1, s);
  const auto [profile, diff] = std::move(tuned).Finish(results);
  REQUIRE(diff.added_size() == 2);
  REQUIRE(diff.added_gains_size() == 2);
  const v1::EntryGain& add_gain = diff.added_gains(0);
  REQUIRE(diff.added(0).operator_class() == "ElementwiseAdd");
  // Per step as before; weighted by the 3 steps that run it.
  CHECK(add_gain.gain_us() == Approx(0.4));
  CHECK(add_gain.noise_us() == Approx(0.05));
  REQUIRE(add_gain.has_weighted_gain());
  CHECK(add_gain.weighted_gain_us() == Approx(1.2));
  CHECK(add_gain.weighted_noise_us() == Approx(0.15));
  // The model-level gain is the sum of the entries' weighted gains.
  CHECK(diff.model_gain_us() == Approx(1.2));
  // The SiLU kept its setting: 0 +- 0, weighed as such.
  const v1::EntryGain& silu_gain = diff.added_gains(1);
  CHECK(silu_gain.has_weighted_gain());
  CHECK(silu_gain.weighted_gain_us() == 0);
  CHECK(silu_gain.weighted_noise_us() == 0);
  // A pass of the calls with the tuned profile: 3 x (3.0 - 0.5) + 1 x 5.0.
  REQUIRE(diff.has_model_time());
  CHECK(diff.model_time_us() == Approx(12.5));
}

TEST_CASE(
    "TunedProfile: a changed entry carries its weighted gain; an "
    "untimed shape adds no model time") {
  const v1::Calls calls = testing::AddSiluCalls();
  auto shapes = Shapes(calls, RecordingSearchSpace(), "npu2");
  REQUIRE(shapes.ok());
  const Shape& add = (*shapes)[0];
  const TunableValues recorded =
      RecordedSetting(calls.operators(add.members[0].op));
  // A profile entry covering the Add sets its first tunable to 256.
  Profile submitted;
  v1::ProfileEntry entry;
  entry.set_operator_class("ElementwiseAdd");
  *entry.add_dims() = add.dims[0];
  *entry.add_tunables() = Moved(calls, add, 256)[0];
  submitted.Add(entry);
  std::vector<ShapeResult> results(2);
  ShapeResult& a = results[0];
  a.trials = {Untimed(recorded, 1),
              TrialOf(Moved(calls, add, 256), {0.1}, {0.1}),
              TrialOf(Moved(calls, add, 512), {-0.2}, {0.1})};
  a.incumbent = 1;
  a.best = 2;
  a.against_incumbent = TrialOf(Moved(calls, add, 512), {-0.3}, {0.04});
  a.recorded_us = 0;  // not timed: no model time from it
  TunedProfile tuned(calls, submitted, *shapes);
  tuned.Add(0, a);
  tuned.Untuned(1, "the budget was spent", 1.0);
  const auto [profile, diff] = std::move(tuned).Finish(results);
  REQUIRE(diff.changed_size() == 1);
  const v1::EntryChange& c = diff.changed(0);
  CHECK(c.gain_us() == Approx(0.3));
  REQUIRE(c.has_weighted_gain());
  CHECK(c.weighted_gain_us() == Approx(0.3));  // one step
  CHECK(c.weighted_noise_us() == Approx(0.04));
  CHECK_FALSE(diff.has_model_time());
  CHECK(diff.model_time_us() == 0);
}

}  // namespace
}  // namespace irontune
