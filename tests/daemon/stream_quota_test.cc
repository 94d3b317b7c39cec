#include "daemon/edge/stream_quota.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

namespace irontune {
namespace {

StreamQuota::Slot MustOpen(StreamQuota& quota, const std::string& caller,
                           Role role) {
  absl::StatusOr<StreamQuota::Slot> slot = quota.Open(caller, role);
  INFO(slot.status().ToString());
  REQUIRE(slot.ok());
  return *std::move(slot);
}

TEST_CASE("stream quota: one caller's streams stop at its quota") {
  StreamQuota quota(StreamLimits{8, 2, 2});
  std::vector<StreamQuota::Slot> ci;
  ci.push_back(MustOpen(quota, "ci", Role::kSubmit));
  ci.push_back(MustOpen(quota, "ci", Role::kSubmit));
  auto third = quota.Open("ci", Role::kSubmit);
  REQUIRE(absl::IsResourceExhausted(third.status()));
  const std::string why(third.status().message());
  CHECK_THAT(why, Catch::Contains("\"ci\" has 2 streams open"));
  CHECK_THAT(why, Catch::Contains("--max-streams-per-caller 2"));
  CHECK(quota.open("ci") == 2);
  CHECK(quota.open() == 2);
  // Another caller is not held back by it.
  StreamQuota::Slot other = MustOpen(quota, "other", Role::kSubmit);
  CHECK(quota.open("other") == 1);
  // Admins keep to the quota too.
  StreamQuota::Slot ops1 = MustOpen(quota, "ops", Role::kAdmin);
  StreamQuota::Slot ops2 = MustOpen(quota, "ops", Role::kAdmin);
  CHECK(absl::IsResourceExhausted(quota.Open("ops", Role::kAdmin).status()));
  // A stream that ends gives its caller room again.
  ci.pop_back();
  CHECK(quota.open("ci") == 1);
  CHECK(quota.Open("ci", Role::kSubmit).ok());
}

TEST_CASE("stream quota: the last streams are kept for admins") {
  StreamQuota quota(StreamLimits{4, 4, 2});
  std::vector<StreamQuota::Slot> held;
  held.push_back(MustOpen(quota, "a", Role::kSubmit));
  held.push_back(MustOpen(quota, "b", Role::kSubmit));
  auto refused = quota.Open("c", Role::kSubmit);
  REQUIRE(absl::IsResourceExhausted(refused.status()));
  const std::string why(refused.status().message());
  CHECK_THAT(why, Catch::Contains("2 streams are open"));
  CHECK_THAT(why, Catch::Contains("--admin-streams"));
  CHECK_THAT(why, Catch::Contains("--max-streams 4"));
  CHECK(quota.open() == 2);
  // An admin gets the kept ones, up to --max-streams.
  held.push_back(MustOpen(quota, "ops", Role::kAdmin));
  held.push_back(MustOpen(quota, "ops", Role::kAdmin));
  auto full = quota.Open("root", Role::kAdmin);
  REQUIRE(absl::IsResourceExhausted(full.status()));
  CHECK_THAT(std::string(full.status().message()),
             Catch::Contains("4 streams are open, the limit (--max-streams 4"));
  held.clear();
  CHECK(quota.open() == 0);
  CHECK(quota.open("ops") == 0);
}

TEST_CASE(
    "stream quota: the limits' defaults, and admin slots that leave none") {
  AdmissionLimits limits;
  auto defaults = StreamLimitsOf(limits);
  REQUIRE(defaults.ok());
  CHECK(defaults->total == 256);
  CHECK(defaults->per_caller == 64);
  CHECK(defaults->admin_slots == kDefaultAdminStreams);

  limits.concurrent_streams = 3;
  auto small = StreamLimitsOf(limits);
  REQUIRE(small.ok());
  CHECK(small->per_caller == 1);   // a quarter, at least 1
  CHECK(small->admin_slots == 0);  // at most a quarter

  limits.streams_per_caller = 2;
  limits.admin_streams = 2;
  auto given = StreamLimitsOf(limits);
  REQUIRE(given.ok());
  CHECK(given->per_caller == 2);
  CHECK(given->admin_slots == 2);

  limits.admin_streams = 3;
  auto none_left = StreamLimitsOf(limits);
  REQUIRE(absl::IsInvalidArgument(none_left.status()));
  CHECK_THAT(std::string(none_left.status().message()),
             Catch::Contains("--admin-streams 3 is not below --max-streams 3"));
}

}  // namespace
}  // namespace irontune
