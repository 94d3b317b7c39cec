#include "daemon/scheduler/cached_answers.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "daemon/scheduler/worker.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/testing/process.h"
#include "tests/testing/recording_fixtures.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

void WaitEnded(const JobPtr& job) {
  bool done = false;
  while (!done) job->EventsFrom(1 << 20, absl::Seconds(1), &done);
}

std::vector<v1::AutotuneEvent> Events(const JobPtr& job) {
  bool done = false;
  return job->EventsFrom(0, absl::ZeroDuration(), &done);
}

JobPtr MakeJob(Job::Request request, const std::string& client = "test") {
  return std::make_shared<Job>(NewJobId(), std::move(request), client,
                               v1::PRIORITY_INTERACTIVE, /*detach=*/false);
}

// testing::AddSiluCalls at 3 rounds of 5 calls: tuned in moments.
v1::AutotuneRequest SmallRequest() {
  return testing::SmallAutotune(/*quick=*/true);
}

CachedAnswersOptions OptionsFor(const std::string& path, CacheWrites* writes,
                                int threads) {
  CachedAnswersOptions o;
  o.threads = threads;
  o.waiting = 8;
  o.cache_path = path;
  const Platform platform = testing::PlatformOf("npu2");
  o.cache_platform = platform.name;
  o.platform = [platform] { return platform; };
  o.writes = writes;
  o.builder_environment = SimBuilder().Environment();
  o.checks_fit = SimBuilder().ChecksFit();
  return o;
}

// A cache file on the virtual-clock sim, the device worker over it and
// the cached answers beside it, as irontuned puts them together.
struct Rig {
  Rig() {
    WorkerParts parts;
    parts.device = *MakeSimDevice("sim:npu2");
    const Platform platform = *parts.device->GetPlatform();
    parts.builder = std::make_unique<SimBuilder>();
    parts.cache = *Cache::Open(path, platform.name, platform.power_mode);
    writes = std::make_unique<CacheWrites>(*CacheEpoch::Open(path));
    parts.writes = writes.get();
    worker = std::make_unique<DeviceWorker>(std::move(parts), &queue, nullptr);
    REQUIRE(worker->Start().ok());
    CachedAnswersOptions o = OptionsFor(path, writes.get(), 2);
    DeviceWorker* w = worker.get();
    o.rewrites = [w] { return w->tasks_run(); };
    answers = std::make_unique<CachedAnswers>(
        std::move(o), std::make_unique<DeviceJobRunner>(), &queue, nullptr);
    REQUIRE(answers->Start().ok());
  }
  ~Rig() {
    answers->Stop();
    worker->Stop();
    std::filesystem::remove_all(dir);
  }
  // Offers the job as the service does: queued for the worker if declined.
  JobPtr Submit(Job::Request request) {
    JobPtr job = MakeJob(std::move(request));
    if (!answers->Offer(job)) REQUIRE(queue.Push(job).ok());
    WaitEnded(job);
    return job;
  }

  const std::string dir = e2e::TempDir("cached-answers");
  const std::string path = dir + "/irontune.db";
  JobQueue queue{16};
  std::unique_ptr<CacheWrites> writes;
  std::unique_ptr<DeviceWorker> worker;
  std::unique_ptr<CachedAnswers> answers;
};

// The result with its wall time (which no two runs share) cleared.
v1::AutotuneResult Timeless(v1::AutotuneResult result) {
  result.mutable_stats()->clear_wall_seconds();
  return result;
}

TEST_CASE("cached answers: a cached job is answered as the worker answers it") {
  Rig rig;
  const JobPtr first = rig.Submit(SmallRequest());
  REQUIRE(first->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(first->Result().autotune().stats().settings_timed() > 0);
  CHECK(rig.answers->counts().handed_over == 1);

  const JobPtr cached = rig.Submit(SmallRequest());
  REQUIRE(cached->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(rig.answers->counts().answered == 1);
  const v1::AutotuneResult answer = cached->Result().autotune();
  CHECK(answer.stats().settings_timed() == 0);
  CHECK(answer.stats().cache_hits() > 0);
  const std::vector<v1::AutotuneEvent> events = Events(cached);
  REQUIRE(events.size() > 3);
  CHECK(events[0].has_queued());
  CHECK(events[0].queued().position() == 0);
  CHECK(events[1].has_started());
  CHECK(events.back().has_result());

  // The same request through the worker, as before: the same answer, and
  // the same log lines and trials in the same order.
  const JobPtr worked = MakeJob(SmallRequest());
  REQUIRE(rig.queue.Push(worked).ok());
  WaitEnded(worked);
  REQUIRE(worked->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(
      Timeless(answer), Timeless(worked->Result().autotune())));
  auto told = [](const std::vector<v1::AutotuneEvent>& events) {
    std::vector<std::string> out;
    for (v1::AutotuneEvent e : events) {
      if (!e.has_log() && !e.has_trial()) continue;
      e.clear_job_id();
      out.push_back(e.SerializeAsString());
    }
    return out;
  };
  CHECK(told(events) == told(Events(worked)));
  CHECK(rig.answers->counts().answered == 1);  // that one was not offered
}

TEST_CASE("cached answers: a cached job is answered while the worker is held") {
  Rig rig;
  REQUIRE(rig.Submit(SmallRequest())->state() == v1::JOB_STATE_SUCCEEDED);
  absl::Notification held, release;
  std::atomic<bool> task_returned{false};
  std::thread task([&] {
    (void)rig.worker->RunOnWorker([&](Cache*) {
      held.Notify();
      release.WaitForNotification();
      return absl::OkStatus();
    });
    task_returned = true;
  });
  held.WaitForNotification();
  // The worker is in the task (which exposes every shape) until released.
  const JobPtr cached = rig.Submit(SmallRequest());
  CHECK(cached->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(!task_returned);
  CHECK(rig.answers->counts().answered == 1);
  release.Notify();
  task.join();
}

TEST_CASE("cached answers: a job that asks to remeasure is declined") {
  Rig rig;
  v1::AutotuneRequest autotune = SmallRequest();
  autotune.set_remeasure(true);
  CHECK(!rig.answers->Offer(MakeJob(autotune)));
  v1::MeasureRequest measure;
  measure.set_remeasure(true);
  CHECK(!rig.answers->Offer(MakeJob(measure)));
}

TEST_CASE("cached answers: a job the cache cannot answer goes to the worker") {
  Rig rig;
  const JobPtr job = rig.Submit(SmallRequest());
  REQUIRE(job->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(rig.answers->counts().handed_over == 1);
  CHECK(rig.answers->counts().answered == 0);
  // Its stream shows the worker's run only: Queued (by the queue), Started
  // once, then the rest.
  const std::vector<v1::AutotuneEvent> events = Events(job);
  REQUIRE(events.size() > 2);
  CHECK(events[0].has_queued());
  int started = 0, queued = 0;
  for (const v1::AutotuneEvent& e : events) {
    started += e.has_started();
    queued += e.has_queued();
  }
  CHECK(started == 1);
  CHECK(queued == 1);
}

// A runner whose Measure runs as the test says, by the request's client:
// "block" waits for `proceed`; "device" asks for a device load; "write"
// writes a verdict to the cache; "change" exposes its shape to a writer
// once, so its first attempt reads across a change; anything else answers
// at once.
class FakeRunner : public JobRunner {
 public:
  explicit FakeRunner(CacheWrites* writes) : writes_(writes) {}
  absl::StatusOr<std::unique_ptr<AutotuneSteps>> StartAutotune(
      const v1::AutotuneRequest&, JobContext&) override {
    return absl::UnimplementedError("no Autotune here");
  }
  absl::StatusOr<v1::MeasureResult> RunMeasure(
      const v1::MeasureRequest& request, JobContext& context) override {
    ++calls;
    context.OnShape(0, 1, "shape");
    if (request.client() == "block") {
      entered.Notify();
      proceed.WaitForNotification();
      if (context.cancelled()) return absl::CancelledError("cancelled");
    } else if (request.client() == "device") {
      return context.device().Load(Artifact()).status();
    } else if (request.client() == "write") {
      RETURN_IF_ERROR(context.cache()->PutVerdict({"r", "e"}, ""));
    } else if (request.client() == "change" && !changed_) {
      changed_ = true;
      writes_->Expose("a worker job", "shape");
      writes_->Release("a worker job");
    }
    context.Log("measured");
    return v1::MeasureResult();
  }
  std::atomic<int> calls{0};
  absl::Notification entered, proceed;

 private:
  CacheWrites* const writes_;
  bool changed_ = false;
};

// The cached answers with a FakeRunner, one thread, and no worker: what
// is handed over stays in the queue.
struct FakeRig {
  FakeRig() {
    cache = *Cache::Open(path, "NPU Strix", PowerMode::kDefault);
    writes = std::make_unique<CacheWrites>(*CacheEpoch::Open(path));
    auto owned = std::make_unique<FakeRunner>(writes.get());
    runner = owned.get();
    answers = std::make_unique<CachedAnswers>(
        OptionsFor(path, writes.get(), 1), std::move(owned), &queue, nullptr);
    REQUIRE(answers->Start().ok());
  }
  ~FakeRig() {
    if (!runner->proceed.HasBeenNotified()) runner->proceed.Notify();
    answers->Stop();
    std::filesystem::remove_all(dir);
  }
  JobPtr Offer(const std::string& client) {
    v1::MeasureRequest request;
    request.set_client(client);
    JobPtr job = MakeJob(request, client);
    REQUIRE(answers->Offer(job));
    return job;
  }

  const std::string dir = e2e::TempDir("cached-answers-fake");
  const std::string path = dir + "/irontune.db";
  std::unique_ptr<Cache> cache;  // makes the file
  JobQueue queue{16};
  std::unique_ptr<CacheWrites> writes;
  FakeRunner* runner = nullptr;
  std::unique_ptr<CachedAnswers> answers;
};

TEST_CASE("cached answers: jobs wait their turn and a cancelled one ends") {
  FakeRig rig;
  const JobPtr first = rig.Offer("block");
  rig.runner->entered.WaitForNotification();
  const JobPtr second = rig.Offer("second");
  const std::vector<JobPtr> held = rig.answers->Snapshot();
  REQUIRE(held.size() == 2);
  CHECK(held[0] == first);
  CHECK(held[1] == second);
  CHECK(first->state() == v1::JOB_STATE_QUEUED);  // started once answered
  absl::SleepFor(absl::Milliseconds(2));
  CHECK(!rig.answers->Alive(absl::ZeroDuration()));
  CHECK(rig.answers->Alive(absl::Hours(1)));
  second->Cancel("cancelled by request");
  rig.runner->proceed.Notify();
  WaitEnded(first);
  WaitEnded(second);
  CHECK(first->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(second->state() == v1::JOB_STATE_CANCELLED);
  CHECK(rig.runner->calls == 1);  // the cancelled one never ran
  CHECK(rig.answers->Snapshot().empty());
  // Alive again once the thread is done with it.
  const absl::Time end = absl::Now() + absl::Seconds(60);
  while (!rig.answers->Alive(absl::ZeroDuration()) && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  CHECK(rig.answers->Alive(absl::ZeroDuration()));
}

TEST_CASE(
    "cached answers: a run that needs the device is queued for the "
    "worker with none of its events") {
  FakeRig rig;
  const JobPtr job = rig.Offer("device");
  const auto end = absl::Now() + absl::Seconds(60);
  while (rig.queue.size() == 0 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  REQUIRE(rig.queue.Snapshot().size() == 1);
  CHECK(rig.queue.Snapshot()[0] == job);
  CHECK(job->state() == v1::JOB_STATE_QUEUED);
  const std::vector<v1::AutotuneEvent> events = Events(job);
  REQUIRE(events.size() == 1);
  CHECK(events[0].has_queued());
  CHECK(rig.answers->counts().handed_over == 1);
}

TEST_CASE("cached answers: a run that would write goes to the worker") {
  FakeRig rig;
  const JobPtr job = rig.Offer("write");
  const auto end = absl::Now() + absl::Seconds(60);
  while (rig.queue.size() == 0 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  REQUIRE(rig.queue.Snapshot().size() == 1);
  CHECK(rig.queue.Snapshot()[0] == job);
  CHECK(rig.answers->counts().handed_over == 1);
  // Its write was refused: the file has no such verdict.
  auto verdict = rig.cache->GetVerdict({"r", "e"});
  REQUIRE(verdict.ok());
  CHECK(!verdict->has_value());
}

TEST_CASE(
    "cached answers: a run that read a shape across a change is tried "
    "again") {
  FakeRig rig;
  const JobPtr job = rig.Offer("change");
  WaitEnded(job);
  CHECK(job->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(rig.runner->calls == 2);
  CHECK(rig.answers->counts().retried == 1);
  CHECK(rig.answers->counts().answered == 1);
  // One attempt's events only.
  int logs = 0;
  for (const v1::AutotuneEvent& e : Events(job)) logs += e.has_log();
  CHECK(logs == 1);
}

TEST_CASE("cached answers: Stop ends the waiting jobs UNAVAILABLE") {
  FakeRig rig;
  const JobPtr first = rig.Offer("block");
  rig.runner->entered.WaitForNotification();
  const JobPtr second = rig.Offer("second");
  std::thread stop([&] { rig.answers->Stop(); });
  WaitEnded(second);
  // As the worker ends its queued jobs: cancelled, UNAVAILABLE.
  CHECK(second->state() == v1::JOB_STATE_CANCELLED);
  CHECK(absl::IsUnavailable(second->status()));
  CHECK(!rig.answers->Offer(MakeJob(v1::MeasureRequest())));
  rig.runner->proceed.Notify();
  stop.join();
  WaitEnded(first);
  CHECK(first->state() == v1::JOB_STATE_CANCELLED);
}

}  // namespace
}  // namespace irontune
