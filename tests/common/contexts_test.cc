#include "common/contexts.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace irontune {
namespace {

std::vector<int64_t> ContextsOf(const std::vector<WeightedContext>& got) {
  std::vector<int64_t> out;
  for (const auto& c : got) out.push_back(c.context);
  return out;
}

double SumOfWeights(const std::vector<WeightedContext>& got) {
  double sum = 0;
  for (const auto& c : got) sum += c.weight;
  return sum;
}

TEST_CASE("Contexts halves down from top, ascending, trapezoid-weighted") {
  auto got = Contexts(8192, 6, 1);
  REQUIRE(got.ok());
  CHECK(ContextsOf(*got) ==
        std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192});
  // Edges 0, 384, 768, 1536, 3072, 6144, 8192 (midpoints between
  // neighbours), each width over 8192. All exact in binary.
  const std::vector<double> want = {384.0 / 8192,  384.0 / 8192,
                                    768.0 / 8192,  1536.0 / 8192,
                                    3072.0 / 8192, 2048.0 / 8192};
  REQUIRE(got->size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK((*got)[i].weight == want[i]);
  }
  CHECK((*got)[0].weight == 0.046875);
  CHECK((*got)[5].weight == 0.25);
  CHECK(SumOfWeights(*got) == 1.0);
}

TEST_CASE("Contexts with a prompt-chunk unit stops at the unit") {
  auto got = Contexts(8192, 6, 256);
  REQUIRE(got.ok());
  CHECK(ContextsOf(*got) ==
        std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192});

  auto more = Contexts(8192, 10, 256);
  REQUIRE(more.ok());
  // 128 < 256: halving stops after 256 although 10 were allowed.
  CHECK(ContextsOf(*more) ==
        std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192});

  auto fine = Contexts(8192, 10, 1);
  REQUIRE(fine.ok());
  CHECK(fine->size() == 10);
  CHECK(fine->front().context == 16);
  CHECK(SumOfWeights(*fine) == Approx(1.0));
}

TEST_CASE("Contexts stops where the half is no multiple of unit") {
  // 768 -> 384 (multiple of 128) -> 192 (not a multiple of 128).
  auto got = Contexts(768, 6, 128);
  REQUIRE(got.ok());
  CHECK(ContextsOf(*got) == std::vector<int64_t>{384, 768});
  // Edges 0, 576, 768.
  CHECK((*got)[0].weight == 0.75);
  CHECK((*got)[1].weight == 0.25);

  // An odd top: its half (floored) is no multiple of 2.
  auto odd = Contexts(6, 4, 2);
  REQUIRE(odd.ok());
  CHECK(ContextsOf(*odd) == std::vector<int64_t>{6});

  // Floor halving: 7 -> 3 -> 1 with unit 1.
  auto seven = Contexts(7, 5, 1);
  REQUIRE(seven.ok());
  CHECK(ContextsOf(*seven) == std::vector<int64_t>{1, 3, 7});
  // Edges 0, 2, 5, 7.
  CHECK((*seven)[0].weight == Approx(2.0 / 7));
  CHECK((*seven)[1].weight == Approx(3.0 / 7));
  CHECK((*seven)[2].weight == Approx(2.0 / 7));
}

TEST_CASE("Contexts with count 1 is top alone, weighted 1") {
  auto got = Contexts(8192, 1, 256);
  REQUIRE(got.ok());
  REQUIRE(got->size() == 1);
  CHECK((*got)[0].context == 8192);
  CHECK((*got)[0].weight == 1.0);
}

TEST_CASE("Contexts with unit equal to top is top alone") {
  auto got = Contexts(256, 6, 256);
  REQUIRE(got.ok());
  REQUIRE(got->size() == 1);
  CHECK((*got)[0].context == 256);
  CHECK((*got)[0].weight == 1.0);

  auto one = Contexts(1, 6, 1);
  REQUIRE(one.ok());
  CHECK(ContextsOf(*one) == std::vector<int64_t>{1});
}

TEST_CASE("Contexts rejects bad arguments with InvalidArgument") {
  struct Case {
    int64_t top;
    int count;
    int64_t unit;
    const char* names;
  };
  const Case cases[] = {
      {0, 6, 1, "top"},           {-8, 6, 1, "top"},    {8192, 0, 1, "count"},
      {8192, -1, 1, "count"},     {8192, 6, 0, "unit"}, {8192, 6, -4, "unit"},
      {1000, 6, 256, "multiple"},
  };
  for (const Case& c : cases) {
    auto got = Contexts(c.top, c.count, c.unit);
    INFO(c.top << " " << c.count << " " << c.unit);
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(got.status().message()),
               Catch::Matchers::Contains(c.names));
  }
}

}  // namespace
}  // namespace irontune
