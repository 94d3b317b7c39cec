#include "daemon/scheduler/job_context.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/scheduler/cache_writes.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "daemon/store/cache.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

// An Autotune job and its context over a sim device.
struct JobRig {
  explicit JobRig(const std::string& id)
      : job(std::make_shared<Job>(id, Job::Request(v1::AutotuneRequest()),
                                  "ann", v1::PRIORITY_INTERACTIVE,
                                  /*detach=*/false)),
        device(*MakeSimDevice("sim:npu2", SimOptions())),
        context(job, *device, builder, nullptr) {}
  std::shared_ptr<Job> job;
  std::unique_ptr<Device> device;
  SimBuilder builder;
  JobContext context;
};

TEST_CASE("progress is coalesced within a shape, every trial is an event") {
  JobRig rig("j1");
  JobContext& context = rig.context;
  const std::shared_ptr<Job>& job = rig.job;
  constexpr int kTrials = 200;
  context.OnShape(0, 2, "GEMM 1");
  for (int i = 0; i < kTrials; ++i) {
    Comparison c;
    c.delta_us = -i;
    c.noise_us = 0.1;
    context.OnTrial(0, c);
  }
  context.OnShape(1, 2, "GEMM 2");
  bool done = false;
  int progress = 0, trials = 0;
  for (const v1::AutotuneEvent& e :
       job->EventsFrom(0, absl::ZeroDuration(), &done)) {
    progress += e.has_progress();
    trials += e.has_trial();
  }
  CHECK(trials == kTrials);
  // One per shape at least; far fewer than one per trial.
  CHECK(progress >= 2);
  CHECK(progress < kTrials / 2);
}

TEST_CASE("a batch of trials is one trial event, in order") {
  JobRig rig("j2");
  JobContext& context = rig.context;
  const std::shared_ptr<Job>& job = rig.job;
  context.OnShape(0, 1, "GEMM 1");
  std::vector<Comparison> batch(3);
  for (int i = 0; i < 3; ++i) batch[i].delta_us = -i;
  batch[2].refused = "does not build";
  context.OnTrials(0, batch);
  context.OnTrials(0, {});  // nothing to say: no event
  bool done = false;
  std::vector<v1::TrialEvent> trials;
  for (const v1::AutotuneEvent& e :
       job->EventsFrom(0, absl::ZeroDuration(), &done)) {
    if (e.has_trial()) trials.push_back(e.trial());
  }
  REQUIRE(trials.size() == 1);
  CHECK(trials[0].shape() == "GEMM 1");
  REQUIRE(trials[0].trials_size() == 3);
  CHECK(trials[0].trials(1).delta_us() == -1);
  CHECK(trials[0].trials(2).refused() == "does not build");
}

TEST_CASE("shapes under way at once name their trials by index") {
  JobRig rig("j4");
  JobContext& context = rig.context;
  const std::shared_ptr<Job>& job = rig.job;
  context.OnShape(0, 2, "GEMM 1");
  context.OnShape(1, 2, "GEMM 2");
  // The first shape's trials after the second began.
  std::vector<Comparison> batch(2);
  context.OnTrials(0, batch);
  context.OnTrials(1, {Comparison()});
  bool done = false;
  std::vector<v1::TrialEvent> trials;
  for (const v1::AutotuneEvent& e :
       job->EventsFrom(0, absl::ZeroDuration(), &done)) {
    if (e.has_trial()) trials.push_back(e.trial());
  }
  REQUIRE(trials.size() == 2);
  CHECK(trials[0].shape() == "GEMM 1");
  CHECK(trials[0].trials_size() == 2);
  CHECK(trials[1].shape() == "GEMM 2");
  // Shapes done follow the estimate, not the shapes begun.
  CHECK(job->Summary().shapes_done() == 0);
  JobEstimate e;
  e.total = 2;
  e.done = 1;
  context.OnEstimate(e);
  CHECK(job->Summary().shapes_done() == 1);
}

TEST_CASE("progress carries the job's device-time estimate and its end") {
  JobRig rig("j3");
  JobContext& context = rig.context;
  const std::shared_ptr<Job>& job = rig.job;
  JobEstimate e;
  e.total = 2;
  e.planned_seconds = 30;
  e.remaining_seconds = 30;
  e.current_seconds = 10;
  context.OnEstimate(e);
  context.OnShape(0, 2, "GEMM 1");
  e.done = 1;
  e.used_seconds = 12;
  e.remaining_seconds = 24;
  e.current_seconds = 0;
  context.OnEstimate(e);
  context.OnShape(1, 2, "GEMM 2");
  e.done = 2;
  e.remaining_seconds = 0;
  context.OnEstimate(e);
  bool done = false;
  std::vector<v1::ShapeProgress> progress;
  for (const v1::AutotuneEvent& ev :
       job->EventsFrom(0, absl::ZeroDuration(), &done)) {
    if (ev.has_progress()) progress.push_back(ev.progress());
  }
  // One per shape, and one more once every shape is done.
  REQUIRE(progress.size() == 3);
  for (const v1::ShapeProgress& p : progress) {
    CHECK(p.planned_device_seconds() == 30);
    CHECK(p.total() == 2);
  }
  CHECK(progress[0].remaining_device_seconds() == 30);
  CHECK(progress[0].done() == 0);
  CHECK(progress[1].remaining_device_seconds() == 24);
  CHECK(progress[1].done() == 1);
  CHECK(progress[1].eta_seconds() > 0);
  CHECK(progress[2].remaining_device_seconds() == 0);
  CHECK(progress[2].eta_seconds() == 0);
  CHECK(progress[2].done() == 2);
  CHECK(job->Summary().shapes_done() == 2);
}

TEST_CASE("held events and shape counts reach the job only at Release") {
  auto job =
      std::make_shared<Job>("j-held", Job::Request(v1::AutotuneRequest()),
                            "ann", v1::PRIORITY_INTERACTIVE,
                            /*detach=*/false);
  auto device = *MakeSimDevice("sim:npu2", SimOptions());
  SimBuilder builder;
  JobContext context(job, *device, builder, nullptr, JobContext::Events::kHeld);
  context.Log("first");
  context.OnShape(0, 1, "GEMM 1");
  context.SetShapes(1, 1);
  bool done = false;
  CHECK(job->EventsFrom(0, absl::ZeroDuration(), &done).empty());
  CHECK(job->Summary().shapes_total() == 0);
  context.Release();
  const std::vector<v1::AutotuneEvent> events =
      job->EventsFrom(0, absl::ZeroDuration(), &done);
  REQUIRE(events.size() == 2);
  CHECK(events[0].log().text() == "first");
  CHECK(events[1].progress().shape() == "GEMM 1");
  CHECK(job->Summary().shapes_done() == 1);
  CHECK(job->Summary().shapes_total() == 1);
  // From now on they go straight through.
  context.Log("second");
  CHECK(job->EventsFrom(2, absl::ZeroDuration(), &done).size() == 1);
}

TEST_CASE("the worker's context exposes each shape it begins, for the job") {
  const std::string dir = e2e::TempDir("job-context-writes");
  const std::string path = dir + "/irontune.db";
  auto cache = *Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  CacheWrites writes(*CacheEpoch::Open(path));
  {
    JobRig rig("j-writes");
    JobContext context(rig.job, *rig.device, rig.builder, cache.get(),
                       JobContext::Events::kLive, &writes);
    CHECK(!writes.exposed("GEMM 1"));
    context.OnShape(0, 2, "GEMM 1");
    CHECK(writes.exposed("GEMM 1"));
    CHECK(!writes.exposed("GEMM 2"));
    // Released by whoever ends the job, by its id.
    writes.Release("j-writes");
    CHECK(!writes.exposed("GEMM 1"));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace irontune
