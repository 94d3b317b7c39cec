// FleetFront against the test cluster, with this process playing the boxes:
// a submit queued and attached to, its events followed from the store's
// notices, and a job that fails still answered with its partial profile.
#include <thread>

#include "catch2/catch.hpp"
#include "daemon/fleet/fleet_pool.h"
#include "daemon/fleet/fleet_queue.h"
#include "daemon/fleet/job_notices.h"
#include "daemon/scheduler/fleet_front.h"
#include "tests/fleet/fleet_fixtures.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

using testing::FreshStore;
using testing::OpenStore;
using testing::Strix;

// A front's parts over the store at `connection`.
struct Front {
  explicit Front(const FleetConnection& connection)
      : open([connection] { return FleetStore::Open(connection, "front"); }),
        pool(open, 2),
        notices(open),
        front(pool, notices, *FleetPlatforms::Parse({"npu2=strix"})) {
    notices.Start();
  }
  FleetPool::Opener open;
  FleetPool pool;
  JobNotices notices;
  FleetFront front;
};

// A shard's result as a box commits it: a succeeded job of one shape.
std::string ShardResult() {
  v1::JobResult r;
  r.mutable_summary()->set_state(v1::JOB_STATE_SUCCEEDED);
  r.mutable_autotune()->mutable_stats()->set_shapes(1);
  r.mutable_autotune()->mutable_stats()->set_settings_timed(7);
  return r.SerializeAsString();
}

TEST_CASE("A front follows a job from the store's notices to its end",
          "[fleet][pg]") {
  const FleetConnection connection = FreshStore();
  Front f(connection);
  const v1::AutotuneRequest request = testing::SmallAutotune(/*quick=*/true);
  const FleetTarget target{"npu-strix", PowerMode::kPerformance};
  auto submitted = f.front.Submit(request, "ci", target);
  REQUIRE(submitted.ok());
  CHECK_FALSE(submitted->attached);
  CHECK_FALSE(submitted->stored);
  auto again = f.front.Submit(request, "someone", target);
  REQUIRE(again.ok());
  CHECK(again->id == submitted->id);
  CHECK(again->attached);

  std::vector<v1::AutotuneEvent> events;
  absl::Status ended;
  std::thread follower([&] {
    ended = f.front.Follow(
        submitted->id,
        [&](const v1::AutotuneEvent& e) {
          events.push_back(e);
          return true;
        },
        [] { return false; });
  });
  // This process plays the boxes: shard 0 done, shard 1 failed 3 times.
  auto box = OpenStore(connection, "box strix-1");
  FleetQueue queue(*box);
  auto lease = queue.ClaimShard(Strix(), absl::Seconds(30));
  REQUIRE(lease.ok());
  REQUIRE(lease->has_value());
  REQUIRE((*lease)->shard == 0);
  ShardOutcome outcome;
  outcome.result = ShardResult();
  REQUIRE(queue.CompleteShard(**lease, Strix(), outcome).ok());
  for (int attempt = 1; attempt <= kMaxShardAttempts; ++attempt) {
    auto next = queue.ClaimShard(Strix(), absl::Seconds(30));
    REQUIRE(next.ok());
    REQUIRE(next->has_value());
    REQUIRE(queue.FailShard(**next, "the NPU hung").ok());
  }
  follower.join();

  CHECK(absl::IsAborted(ended));
  CHECK_THAT(std::string(ended.message()),
             Catch::Contains("f-" + std::to_string(submitted->id)) &&
                 Catch::Contains("the NPU hung"));
  REQUIRE(events.size() >= 4);
  CHECK(events.front().has_queued());
  CHECK(events.front().job_id() == FleetJobName(submitted->id));
  int started = 0, progress = 0, retries = 0;
  for (const v1::AutotuneEvent& e : events) {
    started += e.has_started();
    progress += e.has_progress();
    retries += e.has_log() && e.log().text().find("ended without a result") !=
                                  std::string::npos;
  }
  CHECK(started == 1);
  CHECK(progress == 1);
  CHECK(retries == kMaxShardAttempts - 1);
  // The result still comes: the done shard's work, the other untuned with
  // the error.
  REQUIRE(events.back().has_result());
  const v1::AutotuneResult& result = events.back().result();
  CHECK(result.stats().settings_timed() == 7);
  REQUIRE(result.diff().untuned_size() == 1);
  CHECK_THAT(result.diff().untuned(0).reason(),
             Catch::Contains("the NPU hung"));

  auto stored = f.front.Result(submitted->id);
  REQUIRE(stored.ok());
  CHECK(stored->summary().state() == v1::JOB_STATE_FAILED);
  CHECK(stored->summary().client() == "ci");
  CHECK(stored->autotune().diff().untuned_size() == 1);
}

TEST_CASE("A submit identical to a done job is answered from the store",
          "[fleet][pg]") {
  const FleetConnection connection = FreshStore();
  Front f(connection);
  v1::AutotuneRequest request = testing::SmallAutotune(/*quick=*/true);
  const FleetTarget target{"npu-strix", PowerMode::kPerformance};
  const int64_t id = f.front.Submit(request, "ci", target)->id;
  auto box = OpenStore(connection, "box strix-1");
  FleetQueue queue(*box);
  for (int i = 0; i < 2; ++i) {
    auto lease = queue.ClaimShard(Strix(), absl::Seconds(30));
    REQUIRE(lease.ok());
    REQUIRE(lease->has_value());
    ShardOutcome outcome;
    outcome.result = ShardResult();
    REQUIRE(queue.CompleteShard(**lease, Strix(), outcome).ok());
  }
  auto stored = f.front.Submit(request, "other", target);
  REQUIRE(stored.ok());
  CHECK(stored->id == id);
  CHECK(stored->stored);
  // Asking to time again makes a new job.
  request.set_remeasure(true);
  auto fresh = f.front.Submit(request, "ci", target);
  REQUIRE(fresh.ok());
  CHECK(fresh->id != id);
  CHECK_FALSE(fresh->stored);
  // Another power mode is another job.
  auto other = f.front.Submit(request, "ci", {"npu-strix", PowerMode::kTurbo});
  REQUIRE(other.ok());
  CHECK(other->id != fresh->id);
}

}  // namespace
}  // namespace irontune
