#include "daemon/tune/ranking.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "common/value.h"

namespace irontune {
namespace {

v1::Field F(const std::string& name, int64_t v) {
  v1::Field f;
  f.set_name(name);
  *f.mutable_value() = IntValue(v);
  return f;
}

// A shape of dim `n` whose settings are two tiles, a and b, each a power of
// two up to 64: 49 settings, setting 0 (a = b = 1) the recorded one.
struct Space {
  double n;
  std::vector<std::pair<int, int>> tiles;
  std::vector<CostFeatures> features;
};

Space MakeSpace(double n) {
  Space s{n, {}, {}};
  for (int a = 1; a <= 64; a *= 2) {
    for (int b = 1; b <= 64; b *= 2) {
      s.tiles.push_back({a, b});
      s.features.push_back(FeaturesOf({F("N", static_cast<int64_t>(n))},
                                      {F("a", a), F("b", b)}));
    }
  }
  return s;
}

// Log cost (log step time less the shape's log work, log n): best at
// a = 16 whatever n, and b best at n / 256.
double Truth(const Space& s, int i) {
  const auto [a, b] = s.tiles[i];
  const double da = std::log2(a) - 4, db = std::log2(b) - std::log2(s.n / 256);
  return 0.04 * da * da + 0.03 * db * db + 0.01 * da * db;
}

int Best(const Space& s) {
  int best = 0;
  for (int i = 0; i < static_cast<int>(s.tiles.size()); ++i) {
    if (Truth(s, i) < Truth(s, best)) best = i;
  }
  return best;
}

// Runs rounds until the ranking stops; the settings timed, in order.
std::vector<int> Search(const Space& s, std::vector<CostSample> prior) {
  Ranking ranking(s.features, std::move(prior), 0.005);
  std::vector<int> timed = {0};
  ranking.Timed(0, Truth(s, 0));
  for (int round = 0; round < 100; ++round) {
    absl::StatusOr<std::vector<int>> next = ranking.Next(kRankBatch);
    REQUIRE(next.ok());
    if (next->empty()) break;
    REQUIRE(next->size() <= static_cast<size_t>(kRankBatch));
    for (int i : *next) {
      REQUIRE_FALSE(ranking.Known(i));
      ranking.Timed(i, Truth(s, i));
      timed.push_back(i);
    }
  }
  return timed;
}

double BestOf(const Space& s, const std::vector<int>& timed) {
  double best = Truth(s, timed[0]);
  for (int i : timed) best = std::min(best, Truth(s, i));
  return best;
}

TEST_CASE("Alone, a ranking spreads, then finds the best of a smooth space",
          "[ranking]") {
  const Space s = MakeSpace(4096);
  Ranking ranking(s.features, {}, 0.005);
  // Nothing to fit: the first round is the spread farthest from setting 0.
  absl::StatusOr<std::vector<int>> first = ranking.Next(kRankBatch);
  REQUIRE(first.ok());
  REQUIRE(first->size() == static_cast<size_t>(kRankBatch));
  CHECK(s.tiles[(*first)[0]] == std::make_pair(64, 64));
  CHECK(std::set<int>(first->begin(), first->end()).size() == first->size());

  const std::vector<int> timed = Search(s, {});
  CHECK(std::set<int>(timed.begin(), timed.end()).size() == timed.size());
  CHECK(timed.size() < s.tiles.size());
  CHECK(BestOf(s, timed) <= Truth(s, Best(s)) + 0.005);
}

TEST_CASE("What other shapes showed puts the best in the first rounds",
          "[ranking]") {
  std::vector<CostSample> prior;
  for (double n : {1024.0, 16384.0, 65536.0}) {
    const Space other = MakeSpace(n);
    for (int i = 0; i < static_cast<int>(other.tiles.size()); ++i) {
      prior.push_back({other.features[i], Truth(other, i), 1});
    }
  }
  const Space s = MakeSpace(4096);
  const std::vector<int> alone = Search(s, {});
  const std::vector<int> taught = Search(s, prior);
  CHECK(BestOf(s, taught) <= Truth(s, Best(s)) + 0.005);
  CHECK(taught.size() < alone.size());
  // The first round (after the recorded setting) holds the best.
  CHECK(std::find(taught.begin(), taught.begin() + 1 + kRankBatch, Best(s)) !=
        taught.begin() + 1 + kRankBatch);
}

TEST_CASE("A ranking never offers what is known, dropped or set aside",
          "[ranking]") {
  const Space s = MakeSpace(4096);
  Ranking ranking(s.features, {}, 0.005);
  ranking.Timed(0, Truth(s, 0));
  for (int i = 1; i < 40; ++i) ranking.Dropped(i);
  absl::StatusOr<std::vector<int>> next = ranking.Next(20, {40, 41});
  REQUIRE(next.ok());
  for (int i : *next) CHECK(i > 41);
  CHECK(next->size() == s.tiles.size() - 42);
  for (int i : *next) ranking.Dropped(i);
  ranking.Dropped(40);
  ranking.Dropped(41);
  next = ranking.Next(20);
  REQUIRE(next.ok());
  CHECK(next->empty());
}

TEST_CASE("The model's error counts the checked predictions and a prior",
          "[ranking]") {
  const Space s = MakeSpace(4096);
  Ranking ranking(s.features, {}, 0.005);
  CHECK(ranking.Error() == Approx(kPriorError));
  ranking.Timed(0, Truth(s, 0));
  ranking.Timed(1, Truth(s, 1));
  absl::StatusOr<std::vector<int>> next = ranking.Next(2);
  REQUIRE(next.ok());
  REQUIRE(next->size() == 2);
  // A figure far from every prediction raises the error.
  ranking.Timed((*next)[0], 100);
  CHECK(ranking.checked() == 1);
  CHECK(ranking.Error() > 1);
}

}  // namespace
}  // namespace irontune
