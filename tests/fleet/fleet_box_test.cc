// irontuned as a fleet box, end to end: real irontuned processes on the
// simulated NPU (virtual clock) with --fleet, against the test cluster;
// this process plays the front, queueing jobs and reading what the boxes
// commit.
#include <signal.h>

#include <chrono>
#include <thread>

#include "catch2/catch.hpp"
#include "common/shape.h"
#include "daemon/fleet/fleet_queue.h"
#include "daemon/scheduler/fleet_jobs.h"
#include "irontune/v1/tuner.pb.h"
#include "tests/fleet/fleet_fixtures.h"
#include "tests/fleet/fleet_processes.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

using testing::AwaitEnd;
using testing::AwaitPositive;
using testing::CountRows;
using testing::FreshUrl;
using testing::OpenStore;
using testing::StartBox;

// A shard's task: the quick Autotune of `calls`' one shape.
NewShard Shard(v1::Calls calls) {
  v1::AutotuneRequest request;
  const std::string key = ShapeKey(calls.operators(0));
  *request.mutable_calls() = std::move(calls);
  request.mutable_timing()->set_rounds(3);
  request.mutable_timing()->set_calls(5);
  request.add_shapes(key);
  return {key, request.SerializeAsString()};
}

NewJob TwoShapes(const std::string& platform) {
  NewJob job;
  job.kind = "autotune";
  job.owner = "ci";
  job.request_digest = "two shapes for " + platform;
  job.platform = platform;
  job.power_mode = PowerMode::kPerformance;
  job.shards = {Shard(testing::AddCalls()),
                Shard(testing::OneCall("silu", {testing::Silu8192({512, 1024})},
                                       {{"s", "t"}}))};
  return job;
}

TEST_CASE("A box times its NPU's shards and commits what it timed",
          "[fleet][pg][e2e]") {
  const std::string url = FreshUrl();
  auto store = OpenStore(*ResolveFleetUrl(url, {}), "test front");
  FleetQueue queue(*store);
  const int64_t strix = queue.SubmitJob(TwoShapes("npu-strix"))->id;
  const int64_t phoenix = queue.SubmitJob(TwoShapes("npu-phoenix"))->id;

  auto box = StartBox(url, "box strix-1");
  REQUIRE(box->Up());
  const JobView view = AwaitEnd(queue, strix, 120);
  INFO(box->Log());
  REQUIRE(view.state == FleetJobState::kDone);
  REQUIRE(view.results.size() == 2);
  for (const std::string& bytes : view.results) {
    v1::JobResult result;
    REQUIRE(result.ParseFromString(bytes));
    CHECK(result.summary().state() == v1::JOB_STATE_SUCCEEDED);
    CHECK(result.has_autotune());
    CHECK(result.autotune().stats().shapes() == 1);
  }
  // Its figures and verdicts went to the store, in its own partition only.
  CHECK(CountRows(*store, "SELECT count(*) FROM irontune.figures") > 0);
  CHECK(CountRows(*store,
                  "SELECT count(*) FROM irontune.figures f JOIN "
                  "irontune.partitions p ON p.id = f.partition WHERE "
                  "p.platform <> 'npu-strix' OR p.power_mode <> "
                  "'performance'") == 0);
  CHECK(CountRows(*store, "SELECT count(*) FROM irontune.verdicts") > 0);
  CHECK(CountRows(*store, "SELECT count(*) FROM irontune.decisions") == 2);
  CHECK(CountRows(*store, "SELECT count(DISTINCT box) FROM irontune.figures") ==
        1);
  // Keyed by the box's toolchain: the simulated NPU's stack (SimDevice::
  // GetStackVersions) and the sim builder's environment; logged at start.
  CHECK(CountRows(*store,
                  "SELECT count(*) FROM irontune.figures WHERE toolchain <> "
                  "'firmware \"sim-1\"; driver \"sim\"; xrt \"sim\"; "
                  "builder \"sim-builder/1\"'") == 0);
  CHECK_THAT(box->Log(),
             Catch::Contains("sim:npu2: firmware sim-1, driver sim, XRT sim"));
  // The Phoenix job waits for a Phoenix box.
  CHECK(queue.GetJob(phoenix)->state == FleetJobState::kQueued);
  CHECK(box->Stop() == 0);
}

TEST_CASE("A setting timed on one box is not timed again on the next",
          "[fleet][pg][e2e]") {
  const std::string url = FreshUrl();
  auto store = OpenStore(*ResolveFleetUrl(url, {}), "test front");
  FleetQueue queue(*store);
  {
    auto first = StartBox(url, "box strix-1");
    REQUIRE(first->Up());
    const int64_t id = queue.SubmitJob(TwoShapes("npu-strix"))->id;
    REQUIRE(AwaitEnd(queue, id, 120).state == FleetJobState::kDone);
    CHECK(first->Stop() == 0);
  }
  // The same job again, for a box with an empty cache.
  auto second = StartBox(url, "box strix-2");
  REQUIRE(second->Up());
  const int64_t again = queue.SubmitJob(TwoShapes("npu-strix"))->id;
  const JobView view = AwaitEnd(queue, again, 120);
  INFO(second->Log());
  REQUIRE(view.state == FleetJobState::kDone);
  for (const std::string& bytes : view.results) {
    v1::JobResult result;
    REQUIRE(result.ParseFromString(bytes));
    CHECK(result.autotune().stats().settings_timed() == 0);
    CHECK(result.autotune().stats().cache_hits() > 0);
    // Nor built: the first box's verdicts came with its figures.
    const v1::BuildStats& builds = result.autotune().stats().builds();
    CHECK(builds.built_one_step() + builds.built_many_step() == 0);
  }
  CHECK(CountRows(*store,
                  "SELECT count(*) FROM irontune.figures WHERE box = 'box "
                  "strix-2'") == 0);
}

TEST_CASE("A model cut into one shard a shape is tuned by two boxes",
          "[fleet][pg][e2e]") {
  const std::string url = FreshUrl();
  auto store = OpenStore(*ResolveFleetUrl(url, {}), "test front");
  FleetQueue queue(*store);
  auto a = StartBox(url, "box strix-1");
  auto b = StartBox(url, "box strix-2");
  REQUIRE(a->Up());
  REQUIRE(b->Up());
  v1::AutotuneRequest request = testing::SmallAutotune(/*quick=*/true);
  auto job = FleetJobOf(request, "ci", "npu-strix", PowerMode::kPerformance);
  REQUIRE(job.ok());
  const int64_t id = queue.SubmitJob(*job)->id;
  // The same model sent again while it runs joins the job.
  request.set_client("someone else");
  auto again = FleetJobOf(request, "ci", "npu-strix", PowerMode::kPerformance);
  CHECK(queue.SubmitJob(*again)->id == id);
  const JobView view = AwaitEnd(queue, id, 120);
  INFO(a->Log() + b->Log());
  REQUIRE(view.state == FleetJobState::kDone);
  REQUIRE(view.results.size() == 2);
  std::vector<ShardOutcomeView> shards;
  int entries = 0;
  for (size_t i = 0; i < 2; ++i) {
    v1::JobResult result;
    REQUIRE(result.ParseFromString(view.results[i]));
    CHECK(result.autotune().stats().shapes() == 1);
    // Each shard changed or added only its own shape's entry.
    const int moved = result.autotune().diff().changed_size() +
                      result.autotune().diff().added_size();
    CHECK(moved <= 1);
    entries += moved;
    shards.push_back({job->shards[i].shape_key, result});
  }
  // The job's result, as a front answers the submit.
  const v1::AutotuneResult whole = AssembleResult(request, shards, "");
  CHECK(whole.stats().shapes() == 2);
  CHECK(whole.diff().changed_size() + whole.diff().added_size() == entries);
  CHECK(whole.profile().entries_size() == entries);
  CHECK(CountRows(*store, "SELECT count(*) FROM irontune.decisions") == 2);
}

TEST_CASE("A shard no box can run fails its job after three attempts",
          "[fleet][pg][e2e]") {
  const std::string url = FreshUrl();
  auto store = OpenStore(*ResolveFleetUrl(url, {}), "test front");
  FleetQueue queue(*store);
  NewJob job = TwoShapes("npu-strix");
  job.shards[1].task = "not an AutotuneRequest";
  const int64_t id = queue.SubmitJob(job)->id;
  auto box = StartBox(url, "box strix-1");
  REQUIRE(box->Up());
  const JobView view = AwaitEnd(queue, id, 120);
  INFO(box->Log());
  CHECK(view.state == FleetJobState::kFailed);
  CHECK_THAT(view.error, Catch::Contains("failed on 3 attempts") &&
                             Catch::Contains("does not decode"));
}

TEST_CASE("A box killed mid-shard: another resumes after its lease",
          "[fleet][pg][e2e]") {
  const std::string url = FreshUrl();
  auto store = OpenStore(*ResolveFleetUrl(url, {}), "test front");
  FleetQueue queue(*store);
  NewJob job = TwoShapes("npu-strix");
  job.shards.resize(1);
  const int64_t id = queue.SubmitJob(job)->id;
  auto first = StartBox(url, "box strix-1", /*slow=*/true);
  REQUIRE(first->Up());
  REQUIRE(AwaitPositive(*store,
                        "SELECT count(*) FROM irontune.shards WHERE "
                        "lease_owner = 'box strix-1'",
                        60));
  first->process().Signal(SIGKILL);
  REQUIRE(first->process().Wait(10));
  const int64_t kept =
      CountRows(*store, "SELECT count(*) FROM irontune.figures");

  auto second = StartBox(url, "box strix-2");
  REQUIRE(second->Up());
  const JobView view = AwaitEnd(queue, id, 120);
  INFO(second->Log());
  REQUIRE(view.state == FleetJobState::kDone);
  CHECK(CountRows(*store,
                  "SELECT attempts FROM irontune.shards WHERE shard = 0") == 2);
  // Every figure the first box committed is still there.
  CHECK(CountRows(*store,
                  "SELECT count(*) FROM irontune.figures WHERE box = 'box "
                  "strix-1'") == kept);
  v1::JobResult result;
  REQUIRE(result.ParseFromString(view.results[0]));
  CHECK(result.summary().state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("An NPU that hangs: its box gives the shard up and claims no more",
          "[fleet][pg][e2e]") {
  const std::string url = FreshUrl();
  auto store = OpenStore(*ResolveFleetUrl(url, {}), "test front");
  FleetQueue queue(*store);
  NewJob job = TwoShapes("npu-strix");
  const int64_t id = queue.SubmitJob(job)->id;
  auto hung = StartBox(url, "box strix-1", /*slow=*/false,
                       {"--sim-hang-after-runs", "3", "--stall-limit", "1"});
  REQUIRE(hung->Up());
  REQUIRE(AwaitPositive(*store,
                        "SELECT count(*) FROM irontune.shards WHERE "
                        "last_error LIKE '%the NPU hung%'",
                        60));
  INFO(hung->Log());
  // Its health says so (HealthWatch looks every second), and it holds no
  // lease.
  bool not_serving = false;
  for (int i = 0; i < 50 && !not_serving; ++i) {
    not_serving = hung->Client({"--timeout", "5", "health"}, 10).code == 1;
    if (!not_serving)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(not_serving);
  CHECK(CountRows(*store,
                  "SELECT count(*) FROM irontune.shards WHERE "
                  "lease_owner = 'box strix-1'") == 0);
  auto healthy = StartBox(url, "box strix-2");
  REQUIRE(healthy->Up());
  const JobView view = AwaitEnd(queue, id, 120);
  INFO(healthy->Log());
  CHECK(view.state == FleetJobState::kDone);
  CHECK(view.completed_by ==
        std::vector<std::string>{"box strix-2", "box strix-2"});
  hung->process().Signal(SIGKILL);
  REQUIRE(hung->process().Wait(10));
}

TEST_CASE(
    "The store down mid-shard: the box finishes and commits when it "
    "returns",
    "[fleet][pg][e2e]") {
  testing::PgCluster& cluster = testing::Cluster();
  const std::string url = FreshUrl();
  int64_t id = 0;
  {
    auto store = OpenStore(*ResolveFleetUrl(url, {}), "test front");
    NewJob job = TwoShapes("npu-strix");
    job.shards.resize(1);
    id = FleetQueue(*store).SubmitJob(job)->id;
  }
  auto box = StartBox(url, "box strix-1", /*slow=*/true);
  REQUIRE(box->Up());
  {
    auto store = OpenStore(*ResolveFleetUrl(url, {}), "test front");
    REQUIRE(AwaitPositive(*store,
                          "SELECT count(*) FROM irontune.shards WHERE "
                          "lease_owner IS NOT NULL",
                          60));
  }
  REQUIRE(cluster.Stop());
  REQUIRE(!box->process()
               .WaitForStderrLine("the store cannot be reached", 60)
               .empty());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  REQUIRE(cluster.Start());
  auto store = OpenStore(*ResolveFleetUrl(url, {}), "test front");
  FleetQueue queue(*store);
  const JobView view = AwaitEnd(queue, id, 120);
  INFO(box->Log());
  CHECK(view.state == FleetJobState::kDone);
  CHECK(CountRows(*store, "SELECT count(*) FROM irontune.figures") > 0);
  CHECK_THAT(box->Log(), Catch::Contains("answers again"));
  CHECK(box->Stop() == 0);
}

TEST_CASE("A fleet URL or store the box cannot use stops its start",
          "[fleet][pg][e2e]") {
  SECTION("a password in the URL") {
    auto box = StartBox("postgresql://box:hunter2@db.lab/x", "box");
    REQUIRE(box->process().Wait(30));
    CHECK(box->process().exit_code() == 1);
    CHECK_THAT(box->Log(), Catch::Contains("holds a password"));
  }
  SECTION("a store of a newer schema") {
    const std::string url = FreshUrl();
    auto store = OpenStore(*ResolveFleetUrl(url, {}), "newer irontuned");
    REQUIRE(store->connection()
                .ExecScript("INSERT INTO irontune.schema_versions(version, "
                            "description, applied_by) VALUES (42, 'x', 'y')")
                .ok());
    auto box = StartBox(url, "box");
    REQUIRE(box->process().Wait(30));
    CHECK(box->process().exit_code() == 1);
    CHECK_THAT(box->Log(), Catch::Contains("schema version is 42"));
  }
}

}  // namespace
}  // namespace irontune
