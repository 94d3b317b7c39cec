// A front's rules that need no store: the platforms it accepts, its job
// names, how a fleet job reads on the wire, and its pool's memory of a
// store that is down.
#include <catch2/catch.hpp>

#include "daemon/fleet/fleet_pool.h"
#include "daemon/scheduler/fleet_front.h"

namespace irontune {
namespace {

TEST_CASE(
    "fleet platforms: a platform by any of its names, a generation by the "
    "map") {
  auto map = FleetPlatforms::Parse({"npu2=krackan"});
  REQUIRE(map.ok());
  for (const char* asked : {"strix", "NPU Strix", "npu-strix", "STRIX"}) {
    auto t = map->Resolve(asked, "");
    REQUIRE(t.ok());
    CHECK(t->platform == "npu-strix");
    CHECK(t->power_mode == PowerMode::kDefault);
  }
  auto gen = map->Resolve("npu2", "performance");
  REQUIRE(gen.ok());
  CHECK(gen->platform == "npu-krackan");
  CHECK(gen->power_mode == PowerMode::kPerformance);
  CHECK(map->Resolve("Strix Halo", "")->platform == "npu-strix-halo");
}

TEST_CASE("fleet platforms: what a front refuses names what is wrong") {
  auto map = FleetPlatforms::Parse({"npu2=strix"});
  REQUIRE(map.ok());
  CHECK_THAT(std::string(map->Resolve("", "").status().message()),
             Catch::Contains("name the one the job must run on"));
  CHECK_THAT(std::string(map->Resolve("npu1", "").status().message()),
             Catch::Contains("npu1 is a generation"));
  CHECK_THAT(
      std::string(map->Resolve("stirx", "").status().message()),
      Catch::Contains("unknown NPU \"stirx\"") && Catch::Contains("Krackan"));
  CHECK_THAT(std::string(map->Resolve("strix", "warp").status().message()),
             Catch::StartsWith("power_mode: "));
  for (const char* entry :
       {"npu2", "npu9=strix", "npu2=nothing", "npu1=strix"}) {
    INFO(entry);
    auto bad = FleetPlatforms::Parse({entry});
    REQUIRE(absl::IsInvalidArgument(bad.status()));
    CHECK_THAT(std::string(bad.status().message()),
               Catch::StartsWith(std::string("--fleet-platform ") + entry));
  }
  CHECK_THAT(std::string(FleetPlatforms::Parse({"npu2=strix", "npu2=krackan"})
                             .status()
                             .message()),
             Catch::Contains("mapped twice"));
}

TEST_CASE("fleet job names: f- and a positive number, nothing else") {
  CHECK(FleetJobName(12) == "f-12");
  CHECK(ParseFleetJobName("f-12") == 12);
  CHECK(ParseFleetJobName(FleetJobName(9007199254740993)) == 9007199254740993);
  for (const char* bad : {"", "f-", "f-0", "f--1", "f-1x", "f- 1", "j-12", "12",
                          "f-99999999999999999999", "F-12"}) {
    INFO(bad);
    CHECK_FALSE(ParseFleetJobName(bad).has_value());
  }
}

TEST_CASE("a fleet job on the wire: its state, owner and shapes") {
  JobView view;
  view.id = 7;
  view.owner = "ci";
  view.state = FleetJobState::kFailed;
  view.error = "shard 1 (k) failed on 3 attempts: hung";
  view.interactive = false;
  view.created_unix_ms = 1234;
  view.shape_keys = {"a", "b", "c"};
  view.done = 2;
  const v1::JobSummary s = SummaryOf(view);
  CHECK(s.job_id() == "f-7");
  CHECK(s.client() == "ci");
  CHECK(s.state() == v1::JOB_STATE_FAILED);
  CHECK(s.priority() == v1::PRIORITY_BATCH);
  CHECK(s.shapes_done() == 2);
  CHECK(s.shapes_total() == 3);
  CHECK(s.submitted_unix_ms() == 1234);
  CHECK(s.error() == view.error);
  CHECK(WireStateOf(FleetJobState::kDone) == v1::JOB_STATE_SUCCEEDED);
  CHECK(WireStateOf(FleetJobState::kQueued) == v1::JOB_STATE_QUEUED);
  CHECK(WireStateOf(FleetJobState::kRunning) == v1::JOB_STATE_RUNNING);
  CHECK(WireStateOf(FleetJobState::kCancelled) == v1::JOB_STATE_CANCELLED);
}

TEST_CASE("fleet pool: a store found down is refused at once until the retry") {
  int tries = 0;
  FleetPool pool(
      [&tries]() -> absl::StatusOr<std::unique_ptr<FleetStore>> {
        ++tries;
        return absl::UnavailableError("connection refused");
      },
      /*size=*/2, /*retry_after=*/absl::Milliseconds(300));
  auto first = pool.Acquire();
  CHECK(absl::IsUnavailable(first.status()));
  CHECK(tries == 1);
  // Within the retry time no connection is tried: the last error answers.
  auto second = pool.Acquire();
  CHECK(absl::IsUnavailable(second.status()));
  CHECK_THAT(
      std::string(second.status().message()),
      Catch::Contains("unreachable") && Catch::Contains("connection refused"));
  CHECK(tries == 1);
  CHECK(pool.open() == 0);
  absl::SleepFor(absl::Milliseconds(350));
  CHECK(absl::IsUnavailable(pool.Acquire().status()));
  CHECK(tries == 2);
}

TEST_CASE("fleet pool: an opener's other errors are not remembered") {
  int tries = 0;
  FleetPool pool(
      [&tries]() -> absl::StatusOr<std::unique_ptr<FleetStore>> {
        ++tries;
        return absl::PermissionDeniedError("password authentication failed");
      },
      1);
  CHECK(absl::IsPermissionDenied(pool.Acquire().status()));
  CHECK(absl::IsPermissionDenied(pool.Acquire().status()));
  CHECK(tries == 2);
}

}  // namespace
}  // namespace irontune
