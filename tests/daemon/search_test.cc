#include "daemon/tune/search.h"

#include <google/protobuf/text_format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "common/profile.h"

namespace irontune {
namespace {

template <typename T>
T Parse(const std::string& text) {
  T out;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &out));
  return out;
}

// Operator 0: a GEMM whose "rows_used" bounds M and whose "pos" bounds
// nothing; operator 1: an RMSNorm with no bound value. Op 0 runs in two
// steps: the first reads A whole from "a1", B as the front half of "b", C
// whole from "c" (which has no content); the second reads A whole from "a2".
v1::Calls MakeCalls() {
  return Parse<v1::Calls>(R"pb(
    format_version: 1
    operators {
      class_name: "GEMM"
      params {
        name: "M"
        value { int_value: 8 }
      }
      values { name: "rows_used" symbol: "rows" bounds: "M" }
      values { name: "pos" symbol: "pos" }
      buffers {
        name: "A"
        role: BUFFER_ROLE_IN
        dtype: DTYPE_BF16
        shape: [ 4, 8 ]
      }
      buffers {
        name: "B"
        role: BUFFER_ROLE_IN
        dtype: DTYPE_BF16
        shape: [ 8, 4 ]
      }
      buffers {
        name: "C"
        role: BUFFER_ROLE_OUT
        dtype: DTYPE_BF16
        shape: [ 4, 4 ]
      }
    }
    operators {
      class_name: "RMSNorm"
      values { name: "pos" symbol: "pos" }
      buffers {
        name: "x"
        role: BUFFER_ROLE_INOUT
        dtype: DTYPE_BF16
        shape: [ 32 ]
      }
    }
    calls {
      recording {
        name: "decode"
        values: [ "position", "rows" ]
        buffers { name: "a1" nbytes: 64 }
        buffers { name: "a2" nbytes: 64 }
        buffers { name: "b" nbytes: 128 }
        buffers { name: "c" nbytes: 32 }
        buffers { name: "x" nbytes: 64 }
        steps {
          op: 0
          refs { buffer: "a1" }
          refs { buffer: "b" }
          refs { buffer: "c" }
        }
        steps {
          op: 1
          refs { buffer: "x" length: 64 }
        }
        steps {
          op: 0
          refs { buffer: "a2" offset: 0 length: 64 }
          refs { buffer: "b" offset: 64 }
          refs { buffer: "c" }
        }
        bindings {
          op: 0
          member: "rows_used"
          expression {
            binary {
              op: OP_MIN
              lhs { value: "rows" }
              rhs { constant: 8 }
            }
          }
        }
        bindings {
          op: 0
          member: "pos"
          expression {
            binary {
              op: OP_ADD
              lhs { value: "position" }
              rhs { constant: 1 }
            }
          }
        }
        bindings {
          op: 1
          member: "pos"
          expression { value: "position" }
        }
      }
      values { key: "position" value: 5 }
      values { key: "rows" value: 3 }
      contents { buffer: "a1" data: "first-a" }
      contents { buffer: "a2" data: "second-a" }
      contents { buffer: "b" data: "bee" }
      contents { buffer: "x" data: "ex" }
    }
  )pb");
}

v1::Point MakePoint(double weight, int64_t position, int64_t rows) {
  v1::Point p;
  p.set_weight(weight);
  (*p.mutable_values())["position"] = position;
  (*p.mutable_values())["rows"] = rows;
  return p;
}

TEST_CASE("OpValues evaluates an operator's bindings", "[search]") {
  const v1::Calls calls = MakeCalls();
  const v1::Timed& call = calls.calls(0);

  SECTION("at the call's values") {
    absl::StatusOr<CallValues> v = OpValues(call, 0);
    REQUIRE(v.ok());
    CHECK(*v == CallValues{{"pos", 6}, {"rows_used", 3}});
    absl::StatusOr<CallValues> w = OpValues(call, 1);
    REQUIRE(w.ok());
    CHECK(*w == CallValues{{"pos", 5}});
  }
  SECTION("at other values") {
    const CallValues at = {{"position", 100}, {"rows", 20}};
    absl::StatusOr<CallValues> v = OpValues(call, 0, &at);
    REQUIRE(v.ok());
    CHECK(*v == CallValues{{"pos", 101}, {"rows_used", 8}});
  }
  SECTION("an operator no binding sets has no values") {
    absl::StatusOr<CallValues> v = OpValues(call, 7);
    REQUIRE(v.ok());
    CHECK(v->empty());
  }
  SECTION("a missing value fails naming the binding") {
    const CallValues at = {{"position", 1}};
    absl::StatusOr<CallValues> v = OpValues(call, 0, &at);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(v.status().message()),
               Catch::Contains("recording.bindings[0].expression"));
  }
}

TEST_CASE("OpPoints merges points by the bound values", "[search]") {
  v1::Calls calls = MakeCalls();
  v1::Timed& call = *calls.mutable_calls(0);

  SECTION("points with the same bound extent merge") {
    *call.add_points() = MakePoint(0.5, 5, 3);
    *call.add_points() = MakePoint(0.25, 2, 12);
    *call.add_points() = MakePoint(0.25, 9, 3);
    absl::StatusOr<std::vector<WeightedValues>> points =
        OpPoints(call, 0, calls.operators(0));
    REQUIRE(points.ok());
    REQUIRE(points->size() == 2);
    CHECK((*points)[0].weight == Approx(0.75));
    // The first point's values are kept, not the third's (pos 10).
    CHECK((*points)[0].values == CallValues{{"pos", 6}, {"rows_used", 3}});
    CHECK((*points)[1].weight == Approx(0.25));
    CHECK((*points)[1].values == CallValues{{"pos", 3}, {"rows_used", 8}});
  }
  SECTION("points that all merge give the call's own values") {
    *call.add_points() = MakePoint(0.5, 40, 9);
    *call.add_points() = MakePoint(0.5, 50, 12);
    absl::StatusOr<std::vector<WeightedValues>> points =
        OpPoints(call, 0, calls.operators(0));
    REQUIRE(points.ok());
    REQUIRE(points->size() == 1);
    CHECK((*points)[0].weight == 1.0);
    CHECK((*points)[0].values == CallValues{{"pos", 6}, {"rows_used", 3}});
  }
  SECTION("an operator without a bound extent is timed once") {
    *call.add_points() = MakePoint(0.5, 5, 3);
    *call.add_points() = MakePoint(0.5, 2, 12);
    absl::StatusOr<std::vector<WeightedValues>> points =
        OpPoints(call, 1, calls.operators(1));
    REQUIRE(points.ok());
    REQUIRE(points->size() == 1);
    CHECK((*points)[0].weight == 1.0);
    CHECK((*points)[0].values == CallValues{{"pos", 5}});
  }
  SECTION("no points give the call's values") {
    absl::StatusOr<std::vector<WeightedValues>> points =
        OpPoints(call, 0, calls.operators(0));
    REQUIRE(points.ok());
    REQUIRE(points->size() == 1);
    CHECK((*points)[0].values == CallValues{{"pos", 6}, {"rows_used", 3}});
  }
  SECTION("a point lacking a value fails") {
    v1::Point p;
    p.set_weight(1);
    (*p.mutable_values())["position"] = 1;
    *call.add_points() = p;
    CHECK_FALSE(OpPoints(call, 0, calls.operators(0)).ok());
  }
}

TEST_CASE("OpInputs gives whole graph buffers with contents", "[search]") {
  const v1::Calls calls = MakeCalls();
  const v1::Timed& call = calls.calls(0);

  // A: whole in both steps, the last step's wins. B: a view into half of
  // "b" (excluded though "b" has content). C: whole but no content.
  const std::map<std::string, std::string> inputs =
      OpInputs(call, 0, calls.operators(0));
  CHECK(inputs == std::map<std::string, std::string>{{"A", "second-a"}});

  CHECK(OpInputs(call, 1, calls.operators(1)) ==
        std::map<std::string, std::string>{{"x", "ex"}});
  CHECK(OpInputs(call, 5, calls.operators(0)).empty());
}

TEST_CASE("OpInputs leaves out a view into part of a graph buffer",
          "[search]") {
  v1::Calls calls = MakeCalls();
  v1::Recording& rec = *calls.mutable_calls(0)->mutable_recording();
  rec.mutable_buffers(1)->set_nbytes(128);  // a2 grows: A is its front half
  CHECK(OpInputs(calls.calls(0), 0, calls.operators(0)) ==
        std::map<std::string, std::string>{{"A", "first-a"}});
  rec.mutable_buffers(0)->set_nbytes(128);  // a1 too, and A at its back half
  rec.mutable_steps(0)->mutable_refs(0)->set_offset(64);
  CHECK(OpInputs(calls.calls(0), 0, calls.operators(0)).empty());
}

TEST_CASE("Comparison::Gains needs admission and a gain beyond the noise",
          "[search]") {
  Comparison t;
  t.delta_us = -10;
  t.noise_us = 1;
  CHECK(t.Gains());

  SECTION("refused") {
    t.refused = "output differs";
    CHECK_FALSE(t.Gains());
  }
  SECTION("no noise") {
    t.noise_us.reset();
    CHECK_FALSE(t.Gains());
  }
  SECTION("within the noise") {
    t.noise_us = 5;  // exactly kGainZ * noise: not beyond it
    CHECK_FALSE(t.Gains());
    t.noise_us = 4.99;
    CHECK(t.Gains());
    CHECK_FALSE(t.Gains(3.0));
  }
  SECTION("slower or even") {
    t.delta_us = 0;
    t.noise_us = 0;
    CHECK_FALSE(t.Gains());
    t.delta_us = 10;
    CHECK_FALSE(t.Gains());
  }
}

v1::Field IntField(const std::string& name, int64_t v) {
  v1::Field f;
  f.set_name(name);
  f.mutable_value()->set_int_value(v);
  return f;
}

TunableValues S(int64_t m, int64_t n, int64_t cols) {
  return {IntField("tile_m", m), IntField("tile_n", n),
          IntField("num_aie_columns", cols)};
}

bool Same(const TunableValues& a, const TunableValues& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name() != b[i].name() || !ValuesEqual(a[i].value(), b[i].value()))
      return false;
  }
  return true;
}

bool SameAll(const std::vector<TunableValues>& a,
             const std::vector<TunableValues>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!Same(a[i], b[i])) return false;
  }
  return true;
}

TEST_CASE("Line tries each value of a tunable, moving the fewest others",
          "[search]") {
  const TunableValues through = S(32, 32, 4);

  SECTION("coupled tunables move together") {
    // tile_m = 128 exists only with tile_n = 64: reached by moving tile_n.
    const std::vector<TunableValues> found = {S(32, 32, 4),  S(64, 64, 8),
                                              S(64, 32, 4),  S(128, 64, 8),
                                              S(128, 64, 4), S(64, 64, 4)};
    CHECK(SameAll(Line(found, through, "tile_m"),
                  {S(32, 32, 4), S(64, 32, 4), S(128, 64, 4)}));
  }
  SECTION("every setting tied for the fewest moves is in, in found order") {
    // tile_m = 16 moves one other tunable either way: both are tried, so
    // the line does not depend on which the domain lists first.
    const std::vector<TunableValues> a = {S(16, 64, 4), S(16, 32, 8),
                                          S(16, 64, 8)};
    CHECK(SameAll(Line(a, through, "tile_m"), {S(16, 64, 4), S(16, 32, 8)}));
    const std::vector<TunableValues> b = {S(16, 32, 8), S(16, 64, 4)};
    CHECK(SameAll(Line(b, through, "tile_m"), {S(16, 32, 8), S(16, 64, 4)}));
  }
  SECTION("values in first-seen order, along another tunable") {
    const std::vector<TunableValues> found = {S(64, 32, 8), S(32, 32, 2),
                                              S(32, 32, 8), S(64, 32, 2)};
    CHECK(SameAll(Line(found, through, "num_aie_columns"),
                  {S(32, 32, 8), S(32, 32, 2)}));
  }
  SECTION("an int and a double are different values") {
    TunableValues d = S(32, 32, 4);
    d[0].mutable_value()->set_double_value(32.0);
    const std::vector<TunableValues> found = {S(32, 32, 4), d};
    CHECK(Line(found, through, "tile_m").size() == 2);
  }
  SECTION("nothing found") {
    CHECK(Line({}, through, "tile_m").empty());
    CHECK(Line({S(32, 32, 4)}, through, "nope").empty());
  }
}

std::vector<std::string> Names(const std::vector<v1::Field>& fields) {
  std::vector<std::string> out;
  for (const v1::Field& f : fields) out.push_back(f.name());
  return out;
}

TEST_CASE("NamedDims names dims off their default or covered", "[search]") {
  const v1::Operator gemm = Parse<v1::Operator>(R"pb(
    class_name: "GEMM"
    params {
      name: "M"
      value { int_value: 256 }
    }
    params {
      name: "K"
      value { int_value: 2048 }
    }
    params {
      name: "N"
      value { int_value: 2048 }
    }
    params {
      name: "b_col_maj"
      value { bool_value: true }
    }
    params {
      name: "dtype_in"
      value { string_value: "bf16" }
    }
  )pb");

  SECTION("defaults are left out") {
    CHECK(Names(NamedDims(gemm, {})) ==
          std::vector<std::string>{"M", "K", "N", "b_col_maj"});
    const std::vector<v1::Field> named = NamedDims(gemm, {});
    CHECK(named[3].value().bool_value());
  }
  SECTION("a dim a covering entry names is named, even at its default") {
    v1::Field dtype;
    dtype.set_name("dtype_in");
    dtype.mutable_value()->set_string_value("bf16");
    v1::Field c;
    c.set_name("c_col_maj");
    c.mutable_value()->set_bool_value(false);
    CHECK(Names(NamedDims(gemm, {{IntField("M", 256), dtype},
                                 {IntField("tile_m", 64), c}})) ==
          std::vector<std::string>{"M", "K", "N", "b_col_maj", "c_col_maj"});
  }
  SECTION("an unknown class names every dim") {
    const v1::Operator foo = Parse<v1::Operator>(R"pb(
      class_name: "Foo"
      params {
        name: "x"
        value { int_value: 1 }
        default_value { int_value: 1 }
      }
      params {
        name: "y"
        value { bool_value: false }
      }
    )pb");
    CHECK(Names(NamedDims(foo, {})) == std::vector<std::string>{"x", "y"});
  }
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

// A trial of tile_m = m, tile_n = n: delta against the recorded setting
// (tile_m 64, tile_n 64), noise.
Comparison Trial(int64_t m, int64_t n, double delta, double noise) {
  Comparison t;
  for (const auto& [name, v] :
       {std::pair<const char*, int64_t>{"tile_m", m}, {"tile_n", n}}) {
    v1::Field f;
    f.set_name(name);
    f.mutable_value()->set_int_value(v);
    t.tunables.push_back(f);
  }
  t.delta_us = delta;
  t.noise_us = noise;
  return t;
}

// Far faster than the recorded setting, but refused; and with its noise
// unknown.
Comparison FarRefused() {
  Comparison t = Trial(32, 64, -30, 1);
  t.refused = "output differs";
  return t;
}
Comparison FarUnknown() {
  Comparison t = Trial(32, 64, -30, 1);
  t.noise_us.reset();
  return t;
}

TEST_CASE("Beats: both margins, the incumbent's noise in quadrature",
          "[search]") {
  const Comparison recorded = Trial(64, 64, 0, 0);
  // 3 faster, noise 1: beyond 2 noises; the practical margin decides.
  CHECK(Beats(Trial(32, 64, -3, 1), recorded, true, 2.0, 0));
  CHECK(Beats(Trial(32, 64, -3, 1), recorded, true, 2.0, 2.9));
  CHECK_FALSE(Beats(Trial(32, 64, -3, 1), recorded, true, 2.0, 3.0));
  // Within two noises: not beyond the statistical margin.
  CHECK_FALSE(Beats(Trial(32, 64, -2, 1), recorded, true, 2.0, 0));
  // A refused or noiseless challenger never beats.
  CHECK_FALSE(Beats(FarRefused(), recorded, true, 2.0, 0));
  CHECK_FALSE(Beats(FarUnknown(), recorded, true, 2.0, 0));
  // An incumbent other than the recorded setting: the gain is the
  // difference of the deltas and the noises add in quadrature.
  const Comparison incumbent = Trial(32, 32, -5, 1);
  CHECK_FALSE(Beats(Trial(32, 64, -7, 1), incumbent, false, 2.0, 0));
  CHECK(Beats(Trial(32, 64, -7.9, 1), incumbent, false, 2.0, 0));
  Comparison unsure = incumbent;
  unsure.noise_us.reset();
  CHECK_FALSE(Beats(Trial(32, 64, -70, 1), unsure, false, 2.0, 0));
}

TEST_CASE("Pick: the incumbent keeps ties", "[search]") {
  // tile_m 32 measured a little faster than the incumbent (tile_m 64,
  // tile_n 32), within the noise: the incumbent stays.
  std::vector<Comparison> trials = {
      Trial(64, 64, 0, 0), Trial(64, 32, -10, 0.5), Trial(32, 32, -10.8, 0.5)};
  CHECK(Pick(trials, 1, 2.0, 0) == 1);
  // Beyond the noise but not beyond the practical margin: it stays too.
  trials[2].delta_us = -12;
  CHECK(Pick(trials, 1, 2.0, 0) == 2);
  CHECK(Pick(trials, 1, 2.0, 2.5) == 1);
  // The recorded setting as the incumbent: the fastest, 2, is clearly
  // faster than 1; with a practical margin of 2.5 they are equals, and 1
  // changes fewer tunables.
  CHECK(Pick(trials, 0, 2.0, 0) == 2);
  CHECK(Pick(trials, 0, 2.0, 2.5) == 1);
}

TEST_CASE("Pick: among equals the fewest changes, then the first", "[search]") {
  // Three challengers beat the recorded setting; the fastest (index 3) is
  // not distinguishable from the other two.
  std::vector<Comparison> trials = {
      Trial(64, 64, 0, 0), Trial(32, 32, -10.0, 0.4), Trial(32, 64, -10.2, 0.4),
      Trial(64, 32, -10.5, 0.4)};
  // Indices 2 and 3 change one tunable, index 1 two: the first of 2 and 3.
  CHECK(Pick(trials, 0, 2.0, 0) == 2);
  // Noise does not reorder equals: swapping the measured deltas of 2 and 3
  // picks the same.
  std::swap(trials[2].delta_us, trials[3].delta_us);
  CHECK(Pick(trials, 0, 2.0, 0) == 2);
  // A challenger clearly faster than the rest is not an equal of theirs.
  trials[1].delta_us = -20;
  CHECK(Pick(trials, 0, 2.0, 0) == 1);
  // The practical margin widens who counts as equal.
  trials[1].delta_us = -11.8;
  CHECK(Pick(trials, 0, 2.0, 0) == 1);
  CHECK(Pick(trials, 0, 2.0, 1.5) == 2);
}

TEST_CASE("Contends: faster, and its interval reaching past the margin",
          "[search]") {
  const Comparison recorded = Trial(64, 64, 0, 0);
  // 1 faster with noise 1: not beyond two noises, so it does not Beat, but
  // it may: it contends.
  CHECK_FALSE(Beats(Trial(32, 64, -1, 1), recorded, true, 2.0, 0.5));
  CHECK(Contends(Trial(32, 64, -1, 1), recorded, true, 2.0, 0.5));
  // Slower by its point estimate: never.
  CHECK_FALSE(Contends(Trial(32, 64, 0.1, 1), recorded, true, 2.0, 0.5));
  // Its interval does not reach the practical margin: 1 + 2 * 0.2 <= 1.4.
  CHECK_FALSE(Contends(Trial(32, 64, -1, 0.2), recorded, true, 2.0, 1.4));
  CHECK(Contends(Trial(32, 64, -1, 0.2), recorded, true, 2.0, 1.39));
  // Refused, or its noise unknown: never.
  CHECK_FALSE(Contends(FarRefused(), recorded, true, 2.0, 0));
  CHECK_FALSE(Contends(FarUnknown(), recorded, true, 2.0, 0));
  // Against another incumbent: the difference of the deltas.
  const Comparison incumbent = Trial(32, 32, -5, 1);
  CHECK_FALSE(Contends(Trial(64, 32, -5, 1), incumbent, false, 2.0, 0));
  CHECK(Contends(Trial(64, 32, -5.5, 1), incumbent, false, 2.0, 0));
  // Whatever Beats also Contends.
  CHECK(Beats(Trial(32, 64, -3, 1), recorded, true, 2.0, 0.5));
  CHECK(Contends(Trial(32, 64, -3, 1), recorded, true, 2.0, 0.5));
}

TEST_CASE("Contenders: the fastest few, in the trials' order", "[search]") {
  const std::vector<Comparison> trials = {
      Trial(64, 64, 0, 0),   Trial(32, 32, -1, 1),  Trial(32, 64, -3, 1),
      Trial(64, 32, 0.5, 1), Trial(128, 64, -2, 1), Trial(64, 128, -0.2, 1)};
  CHECK(Contenders(trials, 0, 2.0, 0.5, 8) == std::vector<int>{1, 2, 4, 5});
  CHECK(Contenders(trials, 0, 2.0, 0.5, 2) == std::vector<int>{2, 4});
  CHECK(Contenders(trials, 0, 2.0, 0.5, 0).empty());
  // Against index 4 (delta -2) only index 2 is faster.
  CHECK(Contenders(trials, 4, 2.0, 0.5, 8) == std::vector<int>{2});
}

TEST_CASE("Pooled: the mean, its noise, refusals and unknowns kept",
          "[search]") {
  const Comparison p = Pooled({Trial(32, 64, -1, 0.3), Trial(64, 64, -2, 0.4)});
  CHECK(p.delta_us == Approx(-1.5));
  REQUIRE(p.noise_us.has_value());
  CHECK(*p.noise_us == Approx(0.25));  // sqrt(0.09 + 0.16) / 2
  CHECK(p.refused.empty());
  CHECK(ChangedTunables(p.tunables, Trial(32, 64, 0, 0).tunables) == 0);
  // Four alike: the noise halves.
  const Comparison four =
      Pooled(std::vector<Comparison>(4, Trial(32, 64, -1, 0.4)));
  CHECK(*four.noise_us == Approx(0.2));
  Comparison refused = Trial(32, 64, -1, 0.4);
  refused.refused = "output differs";
  CHECK(Pooled({Trial(32, 64, -1, 0.4), refused}).refused == "output differs");
  Comparison unknown = Trial(32, 64, -1, 0.4);
  unknown.noise_us.reset();
  CHECK_FALSE(Pooled({unknown, Trial(32, 64, -1, 0.4)}).noise_us.has_value());
}

TEST_CASE("Pooled: from kSpreadBatches on, the median and the spread",
          "[search]") {
  REQUIRE(kSpreadBatches <= 8);
  // Seven batches near -1 and one whose rounds held an outlier: its noise
  // of 9 would have made the mean's noise 1.1; the median's is the
  // batches' own, 0.3 over sqrt(8).
  std::vector<Comparison> batches;
  for (double d : {-1.1, -0.9, -1.0, -1.05, -0.95, -1.0, -1.02}) {
    batches.push_back(Trial(32, 64, d, 0.3));
  }
  batches.push_back(Trial(32, 64, -1.2, 9.0));
  const Comparison p = Pooled(batches);
  CHECK(p.delta_us == Approx(-1.01));  // the mean of the middle two
  REQUIRE(p.noise_us.has_value());
  CHECK(*p.noise_us == Approx(0.3 / std::sqrt(8.0)));
  // Batches that disagree more than their own noises say: the spread
  // between them is the noise.
  std::vector<Comparison> spread;
  for (double d : {-2.0, 0.0, -1.5, -0.5, -1.0, 1.0, -3.0, -1.0}) {
    spread.push_back(Trial(32, 64, d, 0.05));
  }
  const Comparison q = Pooled(spread);
  CHECK(q.delta_us == Approx(-1.0));
  REQUIRE(q.noise_us.has_value());
  CHECK(*q.noise_us > 0.3);
  // Fewer than kSpreadBatches: the mean, as above, which the outlier
  // batch's noise still swamps.
  std::vector<Comparison> few = {Trial(32, 64, -1.2, 9.0)};
  double sum = -1.2;
  for (int i = 1; i < kSpreadBatches - 1; ++i) {
    few.push_back(Trial(32, 64, -0.4 * i, 0.3));
    sum += -0.4 * i;
  }
  const Comparison f = Pooled(few);
  CHECK(f.delta_us == Approx(sum / few.size()));
  CHECK(*f.noise_us > 9.0 / few.size());
}

TEST_CASE("Weigh: clears, falls short, or stays open", "[search]") {
  // Gain 3, noise 1, margin 0.5: 3 - 2 > 0.5.
  CHECK(Weigh(Trial(32, 64, -3, 1), 2.0, 0.5) == Evidence::kClears);
  // Gain 1: 1 - 2 < 0.5 < 1 + 2: open.
  CHECK(Weigh(Trial(32, 64, -1, 1), 2.0, 0.5) == Evidence::kOpen);
  // The same gain measured four times as well: 1 - 0.5 is not above 0.5.
  CHECK(Weigh(Trial(32, 64, -1, 0.25), 2.0, 0.5) == Evidence::kOpen);
  CHECK(Weigh(Trial(32, 64, -1, 0.2), 2.0, 0.5) == Evidence::kClears);
  // A tie measured well: 0 + 2 * 0.2 <= 0.5.
  CHECK(Weigh(Trial(32, 64, 0, 0.2), 2.0, 0.5) == Evidence::kFallsShort);
  CHECK(Weigh(Trial(32, 64, 0, 0.3), 2.0, 0.5) == Evidence::kOpen);
  Comparison refused = Trial(32, 64, -30, 1);
  refused.refused = "output differs";
  CHECK(Weigh(refused, 2.0, 0.5) == Evidence::kFallsShort);
  Comparison unknown = Trial(32, 64, -30, 1);
  unknown.noise_us.reset();
  CHECK(Weigh(unknown, 2.0, 0.5) == Evidence::kFallsShort);
}

// A confirmation of `against` (each challenger against the incumbent) whose
// figures against each other are `versus_noise` around the differences of
// their true times `truth`, antisymmetric: versus[i][j] = -versus[j][i].
Confirmation Confirmed(std::vector<Comparison> against,
                       const std::vector<double>& truth, double versus_noise) {
  Confirmation c;
  const size_t n = against.size();
  c.against_incumbent = std::move(against);
  c.versus.assign(n, std::vector<Comparison>(n));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      c.versus[i][j] = c.against_incumbent[i];
      c.versus[i][j].delta_us = truth[i] - truth[j];
      c.versus[i][j].noise_us = versus_noise;
    }
  }
  return c;
}

TEST_CASE("PickConfirmed: a winner another may beat is not taken", "[search]") {
  // Against the recorded setting (100 us, min_gain 0.5%: margin 0.5), two
  // winners indistinguishable by their figures against it: 64x32 changes
  // one tunable, 32x32 two. Pick over those figures takes 64x32.
  const TunableValues recorded = Trial(64, 64, 0, 0).tunables;
  const std::vector<Comparison> against = {Trial(32, 32, -10, 0.4),
                                           Trial(64, 32, -9.6, 0.4)};
  std::vector<Comparison> flat = {Trial(64, 64, 0, 0)};
  flat.insert(flat.end(), against.begin(), against.end());
  CHECK(Pick(flat, 0, 2.0, 0.5) == 2);
  // Paired with each other, 32x32 is 0.4 +- 0.05 faster: its gain may pass
  // the margin 64x32 would hold (0.5% of 90.4 us), so a re-tune from 64x32
  // could move. 32x32 is taken.
  const Confirmation sure = Confirmed(against, {-10, -9.6}, 0.05);
  CHECK(PickConfirmed(sure, recorded, 100, 0.005, 2.0) == 0);
  // 0.1 +- 0.05 apart: neither can pass the other's margin; both are
  // settled and the fewest changes decides.
  const Confirmation tie = Confirmed(against, {-9.7, -9.6}, 0.05);
  CHECK(PickConfirmed(tie, recorded, 100, 0.005, 2.0) == 1);
  // Which of the tie measured faster does not matter.
  const Confirmation swapped = Confirmed(against, {-9.6, -9.7}, 0.05);
  CHECK(PickConfirmed(swapped, recorded, 100, 0.005, 2.0) == 1);
}

TEST_CASE("PickConfirmed at z 0: a call left open is decided on its estimate",
          "[search]") {
  const TunableValues held = Trial(64, 32, 0, 0).tunables;
  // 0.7 +- 0.11 faster than a 100 us incumbent holds the margin (0.5) at
  // two noises: open, the incumbent stays. Decided at z 0, as a
  // confirmation still open after its last batch is, the gain is taken.
  Confirmation c = Confirmed({Trial(32, 32, -0.7, 0.11)}, {-0.7}, 0);
  CHECK(PickConfirmed(c, held, 100, 0.005, 2.0) == -1);
  CHECK(PickConfirmed(c, held, 100, 0.005, 0.0) == 0);
  // A gain below the margin is not, however small its noise.
  c = Confirmed({Trial(32, 32, -0.45, 0.11)}, {-0.45}, 0);
  CHECK(PickConfirmed(c, held, 100, 0.005, 0.0) == -1);
}

TEST_CASE("PickConfirmed: the incumbent keeps what no challenger beats",
          "[search]") {
  const TunableValues held = Trial(64, 32, 0, 0).tunables;
  // 0.6 faster than a 100 us incumbent: with noise 0.04 the gain less two
  // noises, 0.52, clears the practical margin (0.5) and it is taken.
  Confirmation c = Confirmed({Trial(32, 32, -0.6, 0.04)}, {-0.6}, 0);
  CHECK(PickConfirmed(c, held, 100, 0.005, 2.0) == 0);
  // With noise 0.2 it Beats the incumbent on its point estimate, beyond
  // both margins each alone, but its gain is not confirmed beyond the
  // practical margin: the incumbent stays.
  c.against_incumbent[0].noise_us = 0.2;
  CHECK(Beats(c.against_incumbent[0], Trial(64, 32, 0, 0), true, 2.0, 0.5));
  CHECK(PickConfirmed(c, held, 100, 0.005, 2.0) == -1);
  c.against_incumbent[0].noise_us = 0.06;
  CHECK(PickConfirmed(c, held, 100, 0.005, 2.0) == -1);
  // Beyond the noise but within the practical margin.
  c = Confirmed({Trial(32, 32, -0.45, 0.01)}, {-0.45}, 0);
  CHECK(PickConfirmed(c, held, 100, 0.005, 2.0) == -1);
  CHECK(PickConfirmed(c, held, 100, 0.004, 2.0) == 0);
  // A refused challenger never.
  c = Confirmed({Trial(32, 32, -30, 0.01)}, {-30}, 0);
  c.against_incumbent[0].refused = "output differs";
  CHECK(PickConfirmed(c, held, 100, 0.005, 2.0) == -1);
  CHECK(PickConfirmed(Confirmation{}, held, 100, 0.005, 2.0) == -1);
}

TEST_CASE("PickConfirmed: none settled, the one least likely beaten",
          "[search]") {
  const TunableValues recorded = Trial(64, 64, 0, 0).tunables;
  // Three winners, their figures against each other too noisy to settle
  // any: the one the others might beat by least is the fastest, 128x64,
  // though 64x32 changes fewer tunables.
  const Confirmation c =
      Confirmed({Trial(32, 32, -10, 0.4), Trial(64, 32, -9.8, 0.4),
                 Trial(128, 64, -10.3, 0.4)},
                {-10, -9.8, -10.3}, 1.0);
  CHECK(MostAnotherGains(c, {0, 1, 2}, 2, 2.0) == Approx(-0.3 + 2.0));
  CHECK(MostAnotherGains(c, {0, 1, 2}, 1, 2.0) == Approx(0.5 + 2.0));
  CHECK(MostAnotherGains(c, {1}, 1, 2.0) ==
        -std::numeric_limits<double>::infinity());
  CHECK(PickConfirmed(c, recorded, 100, 0.005, 2.0) == 2);
}

// Whatever the figures, a settled pick is one a re-tune from it keeps: no
// other winner Beats it on the same figures, paired with it, by the margin
// it holds as the incumbent.
TEST_CASE("PickConfirmed: a re-tune from a settled pick keeps it", "[search]") {
  std::mt19937 random(11);
  std::uniform_real_distribution<double> gain(0, 3);
  std::uniform_real_distribution<double> spread(0.01, 0.5);
  const TunableValues recorded = Trial(64, 64, 0, 0).tunables;
  const std::vector<std::pair<int, int>> tiles = {
      {32, 32}, {32, 64}, {64, 32}, {128, 64}};
  int settled = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<Comparison> against;
    std::vector<double> truth;
    for (const auto& [m, n] : tiles) {
      truth.push_back(-gain(random));
      against.push_back(Trial(m, n, truth.back(), spread(random)));
    }
    const Confirmation c = Confirmed(against, truth, spread(random));
    const int pick = PickConfirmed(c, recorded, 10, 0.05, 2.0);
    if (pick < 0) continue;
    std::vector<int> winners;
    for (int i = 0; i < 4; ++i) {
      if (Weigh(c.against_incumbent[i], 2.0, 0.5) == Evidence::kClears)
        winners.push_back(i);
    }
    REQUIRE(absl::c_linear_search(winners, pick));
    if (MostAnotherGains(c, winners, pick, 2.0) >
        PracticalFor(c, pick, 10, 0.05)) {
      continue;
    }
    ++settled;
    for (int q : winners) {
      if (q == pick) continue;
      INFO("round " << round << ", pick " << pick << ", q " << q);
      CHECK_FALSE(Beats(c.versus[q][pick], Trial(64, 64, 0, 0), true, 2.0,
                        PracticalFor(c, pick, 10, 0.05)));
    }
  }
  CHECK(settled > 100);
}

TEST_CASE("ConfirmationOpen: open figures and open pairs are timed again",
          "[search]") {
  std::vector<int> still;
  // Both clear the incumbent (100 us, margin 0.5); against each other
  // 0.4 +- 0.1 holds the margin: both are timed again.
  Confirmation c = Confirmed(
      {Trial(32, 32, -10, 0.4), Trial(64, 32, -9.6, 0.4)}, {-10, -9.6}, 0.1);
  CHECK(ConfirmationOpen(c, Trial(64, 64, 0, 0).tunables, 100, 0.005, 2.0,
                         still));
  CHECK(still == std::vector<int>{0, 1});
  // Measured well enough to tell: closed.
  c = Confirmed({Trial(32, 32, -10, 0.4), Trial(64, 32, -9.6, 0.4)},
                {-10, -9.6}, 0.01);
  CHECK_FALSE(ConfirmationOpen(c, Trial(64, 64, 0, 0).tunables, 100, 0.005, 2.0,
                               still));
  CHECK(still.empty());
  // One holds the margin against the incumbent; the other falls short of
  // it, so their pair does not matter: only the first is timed again.
  c = Confirmed({Trial(32, 32, -0.8, 0.2), Trial(64, 32, -0.1, 0.1)},
                {-0.8, -0.1}, 1.0);
  CHECK(ConfirmationOpen(c, Trial(64, 64, 0, 0).tunables, 100, 0.005, 2.0,
                         still));
  CHECK(still == std::vector<int>{0});
  // Two tied winners both clearly slower than a third: their pair no
  // longer matters, and the confirmation is closed.
  c = Confirmed({Trial(32, 32, -10, 0.2), Trial(64, 32, -10, 0.2),
                 Trial(128, 64, -14, 0.2)},
                {-10, -10, -14}, 0.3);
  CHECK_FALSE(ConfirmationOpen(c, Trial(64, 64, 0, 0).tunables, 100, 0.005, 2.0,
                               still));
  // Without the third, their pair holds the margin: both timed again.
  c = Confirmed({Trial(32, 32, -10, 0.2), Trial(64, 32, -10, 0.2)}, {-10, -10},
                0.3);
  CHECK(ConfirmationOpen(c, Trial(64, 64, 0, 0).tunables, 100, 0.005, 2.0,
                         still));
  CHECK(still == std::vector<int>{0, 1});
}

TEST_CASE(
    "ConfirmationOpen: a pair is closed once its outcome cannot change the "
    "pick",
    "[search]") {
  std::vector<int> still;
  const TunableValues recorded = Trial(64, 64, 0, 0).tunables;
  // 64x32 (one change) is 0.4 +- 0.1 faster than 32x32 (two changes): it
  // is settled (32x32 cannot beat it), and it is taken whether or not
  // 32x32 would be settled too, so their pair, which holds 32x32's margin,
  // is timed no more.
  Confirmation c = Confirmed(
      {Trial(64, 32, -10, 0.4), Trial(32, 32, -9.6, 0.4)}, {-10, -9.6}, 0.1);
  CHECK_FALSE(ConfirmationOpen(c, recorded, 100, 0.005, 2.0, still));
  CHECK(still.empty());
  CHECK(PickConfirmed(c, recorded, 100, 0.005, 2.0) == 0);
  // The same figures with the changes the other way round: were 64x32 the
  // slower one settled too, it would be taken, so the pair stays open.
  c = Confirmed({Trial(32, 32, -10, 0.4), Trial(64, 32, -9.6, 0.4)},
                {-10, -9.6}, 0.1);
  CHECK(ConfirmationOpen(c, recorded, 100, 0.005, 2.0, still));
  CHECK(still == std::vector<int>{0, 1});
}

TEST_CASE("ChangedTunables counts differing and missing names", "[search]") {
  CHECK(ChangedTunables(Trial(64, 64, 0, 0).tunables,
                        Trial(64, 64, 0, 0).tunables) == 0);
  CHECK(ChangedTunables(Trial(32, 64, 0, 0).tunables,
                        Trial(64, 64, 0, 0).tunables) == 1);
  CHECK(ChangedTunables(Trial(32, 32, 0, 0).tunables, {}) == 2);
}

TEST_CASE("Reaches: a screening figure within its noise of the best") {
  Comparison best;
  best.delta_us = -10;
  best.noise_us = 1.0;
  Comparison far;
  far.delta_us = -5;
  far.noise_us = 1.0;
  // -5 - 3 * sqrt(2) = -9.24 > -10 + 0.5: out of reach.
  CHECK_FALSE(Reaches(far, best, 3.0, 0.5));
  // With a practical margin of 1 it reaches: -9.24 <= -9.
  CHECK(Reaches(far, best, 3.0, 1.0));
  Comparison near = far;
  near.delta_us = -6;  // -10.24 <= -9.5
  CHECK(Reaches(near, best, 3.0, 0.5));
  Comparison refused = near;
  refused.refused = "judged out";
  CHECK_FALSE(Reaches(refused, best, 3.0, 0.5));
  Comparison unknown = far;
  unknown.noise_us.reset();  // one round: no noise, cannot be ruled out
  CHECK(Reaches(unknown, best, 3.0, 0.5));
}

}  // namespace
}  // namespace irontune
