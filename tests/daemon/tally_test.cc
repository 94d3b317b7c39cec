#include "daemon/base/tally.h"

#include <catch2/catch.hpp>
#include <utility>

namespace irontune {
namespace {

// A rule admitting up to `limit` in all.
auto AtMost(uint64_t limit, uint64_t amount) {
  return [=](uint64_t total, uint64_t) {
    return total + amount <= limit ? absl::OkStatus()
                                   : absl::ResourceExhaustedError("full");
  };
}

TEST_CASE("tally: what is taken is counted in all and by holder") {
  Tally tally;
  absl::StatusOr<Tally::Hold> a = tally.Take("a", 3, AtMost(10, 3));
  absl::StatusOr<Tally::Hold> b = tally.Take("b", 4, AtMost(10, 4));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->amount() == 3);
  CHECK(tally.total() == 7);
  CHECK(tally.of("a") == 3);
  CHECK(tally.of("b") == 4);
  CHECK(tally.of("c") == 0);
}

TEST_CASE("tally: the rule sees the amounts held and a refusal takes nothing") {
  Tally tally;
  absl::StatusOr<Tally::Hold> first = tally.Take("a", 2, AtMost(10, 2));
  REQUIRE(first.ok());
  uint64_t seen_total = 0, seen_own = 0;
  absl::StatusOr<Tally::Hold> refused =
      tally.Take("a", 5, [&](uint64_t total, uint64_t own) {
        seen_total = total;
        seen_own = own;
        return absl::ResourceExhaustedError("no");
      });
  CHECK(seen_total == 2);
  CHECK(seen_own == 2);
  REQUIRE(absl::IsResourceExhausted(refused.status()));
  CHECK(refused.status().message() == "no");
  CHECK(tally.total() == 2);
  CHECK(tally.of("a") == 2);
}

TEST_CASE("tally: a hold gives its amount back once, moved or not") {
  Tally tally;
  absl::StatusOr<Tally::Hold> made = tally.Take("a", 5, AtMost(10, 5));
  REQUIRE(made.ok());
  Tally::Hold hold = *std::move(made);
  Tally::Hold moved = std::move(hold);
  CHECK(hold.amount() == 0);
  hold.Release();  // the moved-from one holds nothing
  CHECK(tally.total() == 5);
  moved.Release();
  moved.Release();
  CHECK(tally.total() == 0);
  CHECK(tally.of("a") == 0);
  // Assigning over a hold gives back what it held; a destroyed one too.
  absl::StatusOr<Tally::Hold> x = tally.Take("a", 2, AtMost(10, 2));
  absl::StatusOr<Tally::Hold> y = tally.Take("a", 1, AtMost(10, 1));
  REQUIRE(x.ok());
  REQUIRE(y.ok());
  {
    Tally::Hold h = *std::move(x);
    h = *std::move(y);
    CHECK(tally.of("a") == 1);
  }
  CHECK(tally.total() == 0);
}

TEST_CASE("tally: a hold may outlive its tally") {
  Tally::Hold hold;
  {
    Tally tally;
    absl::StatusOr<Tally::Hold> h = tally.Take("a", 1, AtMost(1, 1));
    REQUIRE(h.ok());
    hold = *std::move(h);
  }
  CHECK(hold.amount() == 1);
  hold.Release();
  CHECK(hold.amount() == 0);
}

}  // namespace
}  // namespace irontune
