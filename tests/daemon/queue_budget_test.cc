#include "daemon/scheduler/queue_budget.h"

#include <catch2/catch.hpp>
#include <memory>
#include <utility>
#include <vector>

namespace irontune {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST_CASE("queue budget: a client's bytes stop at its own limit") {
  auto budget = QueueBudget::Make(10 * kMiB, 4 * kMiB);
  auto first = budget->Reserve("ci", 3 * kMiB);
  REQUIRE(first.ok());
  CHECK(first->amount() == 3 * kMiB);
  CHECK(budget->used("ci") == 3 * kMiB);
  CHECK(budget->used() == 3 * kMiB);

  auto second = budget->Reserve("ci", 2 * kMiB);
  REQUIRE(absl::IsResourceExhausted(second.status()));
  const std::string why(second.status().message());
  CHECK_THAT(why, Catch::Contains("2.0 MiB"));  // the request
  CHECK_THAT(why, Catch::Contains("3.0 MiB"));  // what it holds
  CHECK_THAT(why, Catch::Contains("4.0 MiB"));  // the limit
  CHECK_THAT(why, Catch::Contains("\"ci\""));   // whose
  CHECK_THAT(why, Catch::Contains("--client-queue-bytes"));
  // A refusal charges nothing; another client still fits.
  CHECK(budget->used("ci") == 3 * kMiB);
  CHECK(budget->Reserve("other", 4 * kMiB).ok());
  // The exact limit fits.
  CHECK(budget->Reserve("ci", 1 * kMiB).ok());
}

TEST_CASE("queue budget: everyone's bytes stop at the total") {
  auto budget = QueueBudget::Make(5 * kMiB, 4 * kMiB);
  std::vector<QueueBudget::Charge> held;
  for (const char* client : {"a", "b"}) {
    auto c = budget->Reserve(client, 2 * kMiB);
    REQUIRE(c.ok());
    held.push_back(*std::move(c));
  }
  auto over = budget->Reserve("c", 2 * kMiB);
  REQUIRE(absl::IsResourceExhausted(over.status()));
  CHECK_THAT(std::string(over.status().message()),
             Catch::Contains("--queue-memory"));
  CHECK_THAT(std::string(over.status().message()), Catch::Contains("5.0 MiB"));
  CHECK(budget->used() == 4 * kMiB);
  CHECK(budget->used("c") == 0);
  // One request larger than either limit is refused outright.
  CHECK(absl::IsResourceExhausted(budget->Reserve("d", 6 * kMiB).status()));
  // Released, the bytes are there again.
  held.pop_back();
  CHECK(budget->used() == 2 * kMiB);
  CHECK(budget->used("b") == 0);
  CHECK(budget->Reserve("c", 2 * kMiB).ok());
}

TEST_CASE("queue budget: a charge is released once, moved or not") {
  auto budget = QueueBudget::Make(8 * kMiB, 8 * kMiB);
  auto made = budget->Reserve("ci", 3 * kMiB);
  REQUIRE(made.ok());
  QueueBudget::Charge charge = *std::move(made);
  QueueBudget::Charge moved = std::move(charge);
  CHECK(charge.amount() == 0);
  CHECK(moved.amount() == 3 * kMiB);
  charge.Release();  // the moved-from one holds nothing
  CHECK(budget->used() == 3 * kMiB);
  moved.Release();
  moved.Release();
  CHECK(budget->used() == 0);
  CHECK(budget->used("ci") == 0);

  // Assigning over a charge releases what it held.
  auto a = budget->Reserve("ci", 2 * kMiB);
  auto b = budget->Reserve("ci", 1 * kMiB);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  QueueBudget::Charge slot = *std::move(a);
  slot = *std::move(b);
  CHECK(budget->used("ci") == 1 * kMiB);
}

TEST_CASE("queue budget: a charge may outlive its budget") {
  QueueBudget::Charge charge;
  std::weak_ptr<QueueBudget> weak;
  {
    auto budget = QueueBudget::Make(8 * kMiB, 8 * kMiB);
    weak = budget;
    auto c = budget->Reserve("ci", kMiB);
    REQUIRE(c.ok());
    charge = *std::move(c);
  }
  CHECK(weak.expired());
  CHECK(charge.amount() == kMiB);
  charge.Release();
  CHECK(charge.amount() == 0);
}

}  // namespace
}  // namespace irontune
