#include "daemon/tune/cost_model.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/value.h"

namespace irontune {
namespace {

v1::Field F(const std::string& name, v1::Value value) {
  v1::Field f;
  f.set_name(name);
  *f.mutable_value() = std::move(value);
  return f;
}

TEST_CASE("A setting's features are its dims, tunables and their tiles",
          "[cost_model]") {
  const std::vector<v1::Field> dims = {F("M", IntValue(256))};
  const CostFeatures f = FeaturesOf(
      dims, {F("tile_m", IntValue(96)), F("fused", BoolValue(true)),
             F("shims", StringValue("tiles")), F("none", IntValue(0))});
  CHECK(f.at("d:M") == Approx(8));
  CHECK(f.at("t:tile_m") == Approx(std::log2(96.0)));
  CHECK(f.at("r:tile_m/M") == Approx(std::log2(256.0 / 96)));
  // Three tiles of 96 hold 288 rows: 32 of them past M's 256.
  CHECK(f.at("w:tile_m/M") == Approx(0.125));
  CHECK(f.at("t:fused") == 1);
  CHECK(f.at("t:none") == -1);
  // A category is a number of its own, the same each time.
  CHECK(f.at("t:shims") ==
        FeaturesOf(dims, {F("shims", StringValue("tiles"))}).at("t:shims"));
  CHECK(f.at("t:shims") !=
        FeaturesOf(dims, {F("shims", StringValue("shims"))}).at("t:shims"));
  // The work: the dims that are positive numbers, multiplied.
  CHECK(LogWork({F("M", IntValue(256)), F("K", IntValue(8)),
                 F("t", BoolValue(true)), F("z", IntValue(0))}) ==
        Approx(std::log(2048.0)));
  // No ratio for what is not a positive number.
  CHECK_FALSE(f.contains("r:fused/M"));
  CHECK_FALSE(f.contains("r:none/M"));
}

// log2 step time of a tile over a dim: best at 64 tiles of the dim, a
// parabola in log2 of the tile count.
double Truth(double dim, double tile) {
  const double tiles = std::log2(dim / tile);
  return 3 + 0.01 * std::log2(dim) + 0.05 * (tiles - 6) * (tiles - 6);
}

std::vector<CostSample> Samples(double dim, std::mt19937& rng) {
  std::vector<CostSample> out;
  for (int t = 1; t <= dim; t *= 2) {
    const std::vector<v1::Field> dims = {F("N", IntValue(dim))};
    out.push_back(
        {FeaturesOf(dims, {F("tile", IntValue(t))}),
         Truth(dim, t) + std::normal_distribution<double>(0, 0.002)(rng)});
  }
  return out;
}

TEST_CASE("Trees fit to other shapes predict a new one's best setting",
          "[cost_model]") {
  std::mt19937 rng(7);
  std::vector<CostSample> known;
  for (double dim : {1024.0, 4096.0, 16384.0, 65536.0}) {
    for (CostSample& s : Samples(dim, rng)) known.push_back(std::move(s));
  }
  CostModel model;
  CHECK(model.Predict({CostFeatures()}).empty());  // not fit yet
  REQUIRE(model.Fit(known).ok());
  REQUIRE(model.fitted());
  // A dim it never saw: the best tile is 8192 / 64 = 128.
  std::vector<CostFeatures> rows;
  std::vector<int> tiles;
  for (int t = 1; t <= 8192; t *= 2) {
    rows.push_back(
        FeaturesOf({F("N", IntValue(8192))}, {F("tile", IntValue(t))}));
    tiles.push_back(t);
  }
  const std::vector<double> p = model.Predict(rows);
  REQUIRE(p.size() == rows.size());
  const size_t best = std::min_element(p.begin(), p.end()) - p.begin();
  CHECK(std::abs(std::log2(tiles[best] / 128.0)) <= 1);
  // Far from the best, the model says slower.
  CHECK(p.front() > p[best] + 0.5);
  CHECK(p.back() > p[best] + 0.5);
}

TEST_CASE("A fit does not depend on the samples' order", "[cost_model]") {
  std::mt19937 rng(3);
  std::vector<CostSample> a = Samples(4096, rng);
  std::vector<CostSample> b(a.rbegin(), a.rend());
  CostModel x, y;
  REQUIRE(x.Fit(a).ok());
  REQUIRE(y.Fit(b).ok());
  std::vector<CostFeatures> rows;
  for (const CostSample& s : a) rows.push_back(s.features);
  CHECK(x.Predict(rows) == y.Predict(rows));
  // One sample fits nothing.
  CostModel one;
  REQUIRE(one.Fit({a.front()}).ok());
  CHECK_FALSE(one.fitted());
}

TEST_CASE("Knowledge is kept by shape and never handed back to that shape",
          "[cost_model]") {
  CostKnowledge k;
  const CostSample s{{{"t:tile", 1}}, 2.0, 5.0};
  k.Learn("GEMV", "GEMV M=1", {s, s});
  k.Learn("GEMV", "GEMV M=2", {s});
  k.Learn("GEMM", "GEMM M=1", {s});
  CHECK(k.shapes() == 3);
  CHECK(k.SamplesOf("GEMV", "GEMV M=1").size() == 1);
  CHECK(k.SamplesOf("GEMV", "").size() == 3);
  CHECK(k.SamplesOf("GEMV", "")[0].weight == 1);  // learnt at weight 1
  CHECK(k.SamplesOf("RMSNorm", "").empty());
  // Learning a shape again replaces what was known of it.
  k.Learn("GEMV", "GEMV M=1", {s});
  CHECK(k.SamplesOf("GEMV", "").size() == 2);
  CHECK(k.shapes() == 3);
}

TEST_CASE("Knowledge past its bound drops its oldest shapes", "[cost_model]") {
  CostKnowledge k;
  const CostSample s{{{"t:tile", 1}}, 2.0, 1.0};
  const size_t half = CostKnowledge::kMostSamplesPerClass / 2 + 1;
  k.Learn("GEMV", "old", std::vector<CostSample>(half, s));
  k.Learn("GEMV", "new", std::vector<CostSample>(half, s));
  CHECK(k.SamplesOf("GEMV", "new").empty());  // "old" dropped
  CHECK(k.SamplesOf("GEMV", "old").size() == half);
}

}  // namespace
}  // namespace irontune
