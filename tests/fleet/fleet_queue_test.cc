#include "daemon/fleet/fleet_queue.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "catch2/catch.hpp"
#include "tests/fleet/fleet_fixtures.h"

namespace irontune {
namespace {

using testing::Figure;
using testing::FreshStore;
using testing::OpenStore;
using testing::Strix;

constexpr absl::Duration kTtl = absl::Seconds(60);

NewJob Job(const std::string& digest, int shards, int priority = 0,
           const std::string& platform = "npu-strix") {
  NewJob job;
  job.kind = "autotune";
  job.owner = "ci-bot";
  job.request_digest = digest;
  job.platform = platform;
  job.power_mode = PowerMode::kPerformance;
  job.priority = priority;
  job.request = "request of " + digest;
  for (int i = 0; i < shards; ++i) {
    job.shards.push_back(
        {"shape " + std::to_string(i), digest + " task " + std::to_string(i)});
  }
  return job;
}

// Makes the lease of `lease` expire now.
void Expire(FleetStore& store, const Lease& lease) {
  REQUIRE(store.connection()
              .Exec("UPDATE irontune.shards SET lease_expires = "
                    "clock_timestamp() - interval '1 second' WHERE job_id = "
                    "$1 AND shard = $2",
                    {pg::Param::Int(lease.job_id), pg::Param::Int(lease.shard)})
              .ok());
}

TEST_CASE("Shards are claimed by priority, then age, on their own NPU",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto store = OpenStore(c, "box strix-1");
  FleetQueue queue(*store);
  const int64_t batch = queue.SubmitJob(Job("batch", 2, 0))->id;
  const int64_t phoenix = queue.SubmitJob(Job("p", 1, 9, "npu-phoenix"))->id;
  NewJob urgent_job = Job("urgent", 1, 5);
  urgent_job.shards[0].shape_key = "another shape";  // not batch's in flight
  const int64_t urgent = queue.SubmitJob(urgent_job)->id;

  std::vector<std::pair<int64_t, int>> order;
  while (true) {
    auto lease = queue.ClaimShard(Strix(), kTtl);
    REQUIRE(lease.ok());
    if (!lease->has_value()) break;
    order.emplace_back((*lease)->job_id, (*lease)->shard);
    CHECK((*lease)->attempt == 1);
  }
  const std::vector<std::pair<int64_t, int>> want = {
      {urgent, 0}, {batch, 0}, {batch, 1}};
  CHECK(order == want);
  // Another power mode's box finds nothing; the Phoenix shard waits.
  CHECK_FALSE(queue.ClaimShard(Strix(PowerMode::kTurbo), kTtl)->has_value());
  CHECK(queue.GetJob(phoenix)->state == FleetJobState::kQueued);
  CHECK(queue.GetJob(batch)->state == FleetJobState::kRunning);
}

TEST_CASE("Boxes claiming at once get each shard once", "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  {
    auto store = OpenStore(c, "submitter");
    REQUIRE(FleetQueue(*store).SubmitJob(Job("big", 40)).ok());
  }
  std::mutex mu;
  std::vector<int> claimed;
  std::vector<std::thread> boxes;
  for (int b = 0; b < 4; ++b) {
    boxes.emplace_back([&, b] {
      auto store = OpenStore(c, "box " + std::to_string(b));
      FleetQueue queue(*store);
      while (true) {
        auto lease = queue.ClaimShard(Strix(), kTtl);
        if (!lease.ok() || !lease->has_value()) return;
        std::lock_guard<std::mutex> lock(mu);
        claimed.push_back((*lease)->shard);
      }
    });
  }
  for (std::thread& t : boxes) t.join();
  std::sort(claimed.begin(), claimed.end());
  std::vector<int> each(40);
  for (int i = 0; i < 40; ++i) each[i] = i;
  CHECK(claimed == each);
}

TEST_CASE("A job completes with its shards' results, figures and decisions",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto store = OpenStore(c, "box strix-1");
  FleetQueue queue(*store);
  const int64_t id = queue.SubmitJob(Job("model", 2))->id;
  for (int i = 0; i < 2; ++i) {
    auto lease = queue.ClaimShard(Strix(), kTtl);
    REQUIRE(lease->has_value());
    ShardOutcome outcome;
    outcome.figures = {Figure(10 + i, 1.5 + i)};
    outcome.verdicts = {{{"recipe " + std::to_string(i), "env"}, "fits"}};
    outcome.result = "result " + std::to_string((*lease)->shard);
    outcome.decision = "entry " + std::to_string((*lease)->shard);
    REQUIRE(queue.CompleteShard(**lease, Strix(), outcome).ok());
    CHECK(queue.GetJob(id)->state ==
          (i == 0 ? FleetJobState::kRunning : FleetJobState::kDone));
  }
  auto view = queue.GetJob(id);
  REQUIRE(view.ok());
  CHECK(view->done == 2);
  CHECK(view->results == std::vector<std::string>{"result 0", "result 1"});
  CHECK(view->completed_by ==
        std::vector<std::string>{"box strix-1", "box strix-1"});
  auto figures =
      store->GetFigures(Strix(), {Figure(10, 0).key, Figure(11, 0).key});
  REQUIRE(figures.ok());
  CHECK((*figures)[1]->t_step_us() == 2.5);
  CHECK(store->GetDecision(Strix(), "shape 1").value() ==
        std::optional<std::string>("entry 1"));
}

TEST_CASE("Two boxes completing a job's last shards at once end the job",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto submitter = OpenStore(c, "submitter");
  FleetQueue submits(*submitter);
  constexpr int kJobs = 20;
  for (int j = 0; j < kJobs; ++j) {
    REQUIRE(submits.SubmitJob(Job("pair " + std::to_string(j), 2)).ok());
  }
  auto a = OpenStore(c, "box a");
  auto b = OpenStore(c, "box b");
  FleetQueue qa(*a), qb(*b);
  for (int j = 0; j < kJobs; ++j) {
    // Each box holds one of the job's two shards, then both complete
    // together.
    auto la = qa.ClaimShard(Strix(), kTtl);
    auto lb = qb.ClaimShard(Strix(), kTtl);
    REQUIRE(la.ok());
    REQUIRE(lb.ok());
    REQUIRE(la->has_value());
    REQUIRE(lb->has_value());
    REQUIRE((*la)->job_id == (*lb)->job_id);
    absl::Status sa, sb;
    std::atomic<int> ready{0};
    const auto complete = [&ready](FleetQueue& q, const Lease& lease,
                                   absl::Status& out) {
      ++ready;
      while (ready < 2) {
      }
      ShardOutcome outcome;
      outcome.result = "done";
      out = q.CompleteShard(lease, Strix(), outcome);
    };
    std::thread ta(complete, std::ref(qa), **la, std::ref(sa));
    std::thread tb(complete, std::ref(qb), **lb, std::ref(sb));
    ta.join();
    tb.join();
    REQUIRE(sa.ok());
    REQUIRE(sb.ok());
    INFO("job " << (*la)->job_id);
    CHECK(submits.GetJob((*la)->job_id)->state == FleetJobState::kDone);
  }
}

TEST_CASE("A shape another box is timing is passed over until it ends",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto submitter = OpenStore(c, "submitter");
  FleetQueue submits(*submitter);
  // Two jobs of one shape ("shape 0"), the second also of "shape 1".
  REQUIRE(submits.SubmitJob(Job("first", 1)).ok());
  REQUIRE(submits.SubmitJob(Job("second", 2)).ok());
  auto a = OpenStore(c, "box a");
  auto b = OpenStore(c, "box b");
  FleetQueue qa(*a), qb(*b);
  auto la = qa.ClaimShard(Strix(), kTtl);
  REQUIRE(la.ok());
  REQUIRE(la->has_value());
  CHECK((*la)->shape_key == "shape 0");
  // b skips the second job's "shape 0" for its "shape 1".
  auto lb = qb.ClaimShard(Strix(), kTtl);
  REQUIRE(lb.ok());
  REQUIRE(lb->has_value());
  CHECK((*lb)->shape_key == "shape 1");
  auto none = qb.ClaimShard(Strix(), kTtl);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  // Once a's ends, the second job's "shape 0" is free.
  ShardOutcome outcome;
  outcome.result = "done";
  REQUIRE(qa.CompleteShard(**la, Strix(), outcome).ok());
  auto next = qb.ClaimShard(Strix(), kTtl);
  REQUIRE(next.ok());
  REQUIRE(next->has_value());
  CHECK((*next)->shape_key == "shape 0");
  CHECK((*next)->job_id != (*la)->job_id);
}

TEST_CASE("An expired lease passes to another box and fences the first",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto a_store = OpenStore(c, "box a");
  auto b_store = OpenStore(c, "box b");
  FleetQueue a(*a_store);
  FleetQueue b(*b_store);
  const int64_t id = a.SubmitJob(Job("job", 1))->id;
  Lease first = *a.ClaimShard(Strix(), kTtl).value();
  CHECK_FALSE(b.ClaimShard(Strix(), kTtl)->has_value());  // still held
  REQUIRE(a.RenewLease(first, kTtl).ok());

  Expire(*a_store, first);
  Lease second = *b.ClaimShard(Strix(), kTtl).value();
  CHECK(second.job_id == id);
  CHECK(second.attempt == 2);

  ShardOutcome late;
  late.figures = {Figure(5, 5.0)};
  late.result = "late";
  auto refused = a.CompleteShard(first, Strix(), late);
  REQUIRE(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.message()),
             Catch::Contains("not held by box a"));
  CHECK(a.RenewLease(first, kTtl).code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(a.FailShard(first, "x").status().code() ==
        absl::StatusCode::kFailedPrecondition);
  // Nothing of the refused result was written.
  CHECK_FALSE(
      a_store->GetFigures(Strix(), {Figure(5, 0).key}).value()[0].has_value());

  ShardOutcome done;
  done.result = "on time";
  REQUIRE(b.CompleteShard(second, Strix(), done).ok());
  CHECK(b.GetJob(id)->results == std::vector<std::string>{"on time"});
}

TEST_CASE("A result from another partition is refused", "[fleet][pg]") {
  auto store = OpenStore(FreshStore(), "box a");
  FleetQueue queue(*store);
  REQUIRE(queue.SubmitJob(Job("job", 1)).ok());
  Lease lease = *queue.ClaimShard(Strix(), kTtl).value();
  ShardOutcome outcome;
  outcome.figures = {Figure(1, 1.0)};
  auto refused = queue.CompleteShard(lease, Strix(PowerMode::kTurbo), outcome);
  REQUIRE(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.message()),
             Catch::Contains("runs on npu-strix at performance"));
  CHECK_FALSE(store->GetFigures(Strix(PowerMode::kTurbo), {Figure(1, 0).key})
                  .value()[0]
                  .has_value());
  CHECK(queue.RenewLease(lease, kTtl).ok());  // still held
}

TEST_CASE("A shard that fails on three boxes fails its job, naming why",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto store = OpenStore(c, "box a");
  FleetQueue queue(*store);
  const int64_t id = queue.SubmitJob(Job("job", 2))->id;
  Lease done = *queue.ClaimShard(Strix(), kTtl).value();
  ShardOutcome outcome;
  outcome.result = "partial";
  REQUIRE(queue.CompleteShard(done, Strix(), outcome).ok());

  for (int attempt = 1; attempt <= kMaxShardAttempts; ++attempt) {
    auto box = OpenStore(c, "box " + std::to_string(attempt));
    FleetQueue q(*box);
    Lease lease = *q.ClaimShard(Strix(), kTtl).value();
    CHECK(lease.attempt == attempt);
    auto failed = q.FailShard(lease, "the NPU stopped answering (watchdog)");
    REQUIRE(failed.ok());
    CHECK(*failed == (attempt == kMaxShardAttempts));
  }
  auto view = queue.GetJob(id);
  REQUIRE(view.ok());
  CHECK(view->state == FleetJobState::kFailed);
  CHECK(view->done == 1);
  CHECK(view->failed == 1);
  CHECK(view->results[0] == "partial");
  CHECK_THAT(view->error, Catch::Contains("failed on 3 attempts") &&
                              Catch::Contains("watchdog"));
  CHECK_FALSE(queue.ClaimShard(Strix(), kTtl)->has_value());
}

TEST_CASE("A shard whose leases all expire fails its job", "[fleet][pg]") {
  auto store = OpenStore(FreshStore(), "box a");
  FleetQueue queue(*store);
  const int64_t id = queue.SubmitJob(Job("job", 1))->id;
  for (int attempt = 1; attempt <= kMaxShardAttempts; ++attempt) {
    Lease lease = *queue.ClaimShard(Strix(), kTtl).value();
    Expire(*store, lease);
  }
  CHECK_FALSE(queue.ClaimShard(Strix(), kTtl)->has_value());
  auto view = queue.GetJob(id);
  CHECK(view->state == FleetJobState::kFailed);
  CHECK_THAT(view->error, Catch::Contains("expired"));
}

TEST_CASE("Identical submits attach to one live job", "[fleet][pg]") {
  auto store = OpenStore(FreshStore(), "front");
  FleetQueue queue(*store);
  auto first = queue.SubmitJob(Job("same", 1));
  auto second = queue.SubmitJob(Job("same", 1));
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK_FALSE(first->attached);
  CHECK(second->attached);
  CHECK(second->id == first->id);

  REQUIRE(queue.CancelJob(first->id).value());
  CHECK_FALSE(queue.CancelJob(first->id).value());  // ended already
  CHECK(queue.GetJob(first->id)->state == FleetJobState::kCancelled);
  CHECK_FALSE(queue.ClaimShard(Strix(), kTtl)->has_value());
  auto third = queue.SubmitJob(Job("same", 1));
  REQUIRE(third.ok());
  CHECK_FALSE(third->attached);
  CHECK(third->id != first->id);
  CHECK(queue.CancelJob(9999).status().code() == absl::StatusCode::kNotFound);
  CHECK(queue.SubmitJob(Job("empty", 0)).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Changes to a job are announced on its channel", "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto listener = OpenStore(c, "front a");
  REQUIRE(listener->connection().Listen(kJobsChannel).ok());
  auto store = OpenStore(c, "front b");
  const int64_t id = FleetQueue(*store).SubmitJob(Job("job", 1))->id;
  auto n = listener->connection().WaitForNotification(absl::Seconds(10));
  REQUIRE(n.ok());
  REQUIRE(n->has_value());
  CHECK((*n)->channel == kJobsChannel);
  CHECK((*n)->payload == std::to_string(id));
  auto none =
      listener->connection().WaitForNotification(absl::Milliseconds(50));
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("A store that goes away mid-use answers Unavailable", "[fleet][pg]") {
  testing::PgCluster& cluster = testing::Cluster();
  auto store = OpenStore(FreshStore(), "box a");
  FleetQueue queue(*store);
  REQUIRE(queue.SubmitJob(Job("job", 1)).ok());
  REQUIRE(cluster.Stop());
  auto lost = queue.ClaimShard(Strix(), kTtl);
  const bool started = cluster.Start();
  REQUIRE(started);
  REQUIRE_FALSE(lost.ok());
  INFO(lost.status().ToString());
  CHECK(lost.status().code() == absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace irontune
