#include "daemon/scheduler/worker.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"

namespace irontune {
namespace {

// Records what ran; its Autotune has two "shapes", the first waiting for
// `proceed`.
class FakeRunner : public JobRunner {
 public:
  class Steps : public AutotuneSteps {
   public:
    Steps(FakeRunner& runner, JobContext& context)
        : runner_(runner), context_(context) {}
    bool done() const override { return shape_ == 2; }
    absl::Status Next() override {
      runner_.order.push_back(absl::StrCat("autotune shape ", shape_));
      if (shape_++ == 0) {
        runner_.started.Notify();
        runner_.proceed.WaitForNotification();
      } else if (context_.cancelled()) {
        return absl::CancelledError("cancelled");
      }
      return absl::OkStatus();
    }
    v1::AutotuneResult Finish() override { return v1::AutotuneResult(); }

   private:
    FakeRunner& runner_;
    JobContext& context_;
    int shape_ = 0;
  };

  absl::StatusOr<std::unique_ptr<AutotuneSteps>> StartAutotune(
      const v1::AutotuneRequest&, JobContext& context) override {
    return std::make_unique<Steps>(*this, context);
  }
  absl::StatusOr<v1::MeasureResult> RunMeasure(
      const v1::MeasureRequest& request, JobContext& context) override {
    order.push_back(request.client().empty()
                        ? std::string("measure")
                        : absl::StrCat("measure ", request.client()));
    context.Log("measured");
    return v1::MeasureResult();
  }
  std::vector<std::string> order;  // written on the worker thread only
  absl::Notification started;
  absl::Notification proceed;
};

void WaitEnded(const JobPtr& job) {
  bool done = false;
  while (!done) job->EventsFrom(1 << 20, absl::Seconds(1), &done);
}

WorkerParts Parts(std::unique_ptr<JobRunner> runner) {
  WorkerParts parts;
  parts.device = *MakeSimDevice("sim:npu2");
  parts.builder = std::make_unique<SimBuilder>();
  parts.runner = std::move(runner);
  return parts;
}

TEST_CASE("worker: a long Autotune yields to queued Measure jobs") {
  auto runner = std::make_unique<FakeRunner>();
  FakeRunner* fake = runner.get();
  JobQueue queue(10);
  DeviceWorker worker(Parts(std::move(runner)), &queue, nullptr);
  REQUIRE(worker.Start().ok());

  auto tune = std::make_shared<Job>("t", v1::AutotuneRequest(), "ci",
                                    v1::PRIORITY_BATCH, false);
  REQUIRE(queue.Push(tune).ok());
  fake->started.WaitForNotification();
  auto measure = std::make_shared<Job>("m", v1::MeasureRequest(), "ann",
                                       v1::PRIORITY_INTERACTIVE, false);
  REQUIRE(queue.Push(measure).ok());
  CHECK(worker.Status().running == tune);
  fake->proceed.Notify();

  bool done = false;
  while (!done) tune->EventsFrom(1 << 20, absl::Seconds(1), &done);
  CHECK(tune->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(measure->state() == v1::JOB_STATE_SUCCEEDED);
  worker.Stop();
  CHECK(fake->order == std::vector<std::string>{"autotune shape 0", "measure",
                                                "autotune shape 1"});
}

TEST_CASE("worker: an Autotune planned drops its request and its charge") {
  auto runner = std::make_unique<FakeRunner>();
  FakeRunner* fake = runner.get();
  JobQueue queue(10);
  DeviceWorker worker(Parts(std::move(runner)), &queue, nullptr);
  REQUIRE(worker.Start().ok());
  auto budget = QueueBudget::Make(uint64_t{1} << 30, uint64_t{1} << 30);
  // A job of about 1 MiB, its bytes charged.
  auto charged = [&](const std::string& id, bool autotune) {
    Job::Request request = v1::AutotuneRequest();
    if (autotune) {
      std::get<v1::AutotuneRequest>(request)
          .mutable_profile()
          ->add_entries()
          ->set_operator_class(std::string(1 << 20, 'x'));
    } else {
      v1::MeasureRequest measure;
      measure.mutable_operator_()->set_class_name(std::string(1 << 20, 'x'));
      request = measure;
    }
    auto job = std::make_shared<Job>(id, request, "ci",
                                     v1::PRIORITY_INTERACTIVE, false);
    auto charge = budget->Reserve(job->client(), job->request_bytes());
    REQUIRE(charge.ok());
    job->set_charge(*std::move(charge));
    return job;
  };
  JobPtr tune = charged("t", true);
  REQUIRE(tune->request_bytes() > (1u << 20));
  REQUIRE(queue.Push(tune).ok());
  // Its first shape runs: it was planned, so it holds no request.
  fake->started.WaitForNotification();
  CHECK(tune->state() == v1::JOB_STATE_RUNNING);
  CHECK(tune->request() == nullptr);
  CHECK(budget->used() == 0);
  // One queued behind it keeps its own (a Measure keeps it until it ends).
  JobPtr queued = charged("m", false);
  REQUIRE(queue.Push(queued).ok());
  CHECK(budget->used("ci") == queued->request_bytes());
  CHECK(queued->request_bytes() > (1u << 20));
  CHECK(queued->request() != nullptr);
  fake->proceed.Notify();
  WaitEnded(queued);
  CHECK(queued->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(budget->used() == 0);
  worker.Stop();
}

TEST_CASE("worker: Stop cancels the running job and ends the queued ones") {
  auto runner = std::make_unique<FakeRunner>();
  FakeRunner* fake = runner.get();
  JobQueue queue(10);
  DeviceWorker worker(Parts(std::move(runner)), &queue, nullptr);
  REQUIRE(worker.Start().ok());
  auto tune = std::make_shared<Job>("t", v1::AutotuneRequest(), "ci",
                                    v1::PRIORITY_INTERACTIVE, false);
  auto later = std::make_shared<Job>("t2", v1::AutotuneRequest(), "ci",
                                     v1::PRIORITY_INTERACTIVE, false);
  REQUIRE(queue.Push(tune).ok());
  fake->started.WaitForNotification();
  REQUIRE(queue.Push(later).ok());
  std::thread stopper([&worker] { worker.Stop(); });
  // Stop closes the queue first, then cancels the running job.
  while (!tune->WaitCancelled(absl::Seconds(1))) {
  }
  fake->proceed.Notify();
  stopper.join();
  CHECK(tune->state() == v1::JOB_STATE_CANCELLED);
  CHECK(later->state() == v1::JOB_STATE_CANCELLED);
  CHECK(absl::IsUnavailable(later->status()));
  CHECK(later->status().message() == "irontuned is shutting down");
}

TEST_CASE("worker: tasks run on the worker between jobs") {
  JobQueue queue(10);
  DeviceWorker worker(Parts(std::make_unique<FakeRunner>()), &queue, nullptr);
  REQUIRE(worker.Start().ok());
  bool ran = false;
  CHECK(worker
            .RunOnWorker([&ran](Cache* cache) {
              ran = cache == nullptr;
              return absl::OkStatus();
            })
            .ok());
  CHECK(ran);
  worker.Stop();
  CHECK(absl::IsUnavailable(
      worker.RunOnWorker([](Cache*) { return absl::OkStatus(); })));
}

// A job of `kind` whose memory estimate is `gib` GiB.
JobPtr Costing(const std::string& id, double gib, bool autotune) {
  Job::Request request = v1::AutotuneRequest();
  if (!autotune) {
    v1::MeasureRequest m;
    m.set_client(id);
    request = m;
  }
  auto job = std::make_shared<Job>(id, request, "ann", v1::PRIORITY_INTERACTIVE,
                                   false);
  job->set_cost(static_cast<uint64_t>(gib * (1ull << 30)), 0);
  return job;
}

TEST_CASE("worker: a Measure that does not fit beside an Autotune waits") {
  auto runner = std::make_unique<FakeRunner>();
  FakeRunner* fake = runner.get();
  JobQueue queue(10);
  WorkerParts parts = Parts(std::move(runner));
  parts.memory_limit_bytes = 10ull << 30;
  DeviceWorker worker(std::move(parts), &queue, nullptr);
  REQUIRE(worker.Start().ok());
  JobPtr tune = Costing("t", 6, true);
  REQUIRE(queue.Push(tune).ok());
  fake->started.WaitForNotification();
  CHECK(worker.Status().reserved_bytes == 6ull << 30);
  JobPtr big = Costing("big", 6, false);
  JobPtr small = Costing("small", 1, false);
  REQUIRE(queue.Push(big).ok());
  REQUIRE(queue.Push(small).ok());
  fake->proceed.Notify();
  for (const JobPtr& job : {tune, big, small}) WaitEnded(job);
  worker.Stop();
  // 6 + 6 GiB would pass the 10 GiB budget: the big one ran after.
  CHECK(fake->order ==
        std::vector<std::string>{"autotune shape 0", "measure small",
                                 "autotune shape 1", "measure big"});
  CHECK(worker.Status().reserved_bytes == 0);
}

TEST_CASE("worker: a job past its deadline stops at its next round") {
  auto runner = std::make_unique<FakeRunner>();
  FakeRunner* fake = runner.get();
  JobQueue queue(10);
  DeviceWorker worker(Parts(std::move(runner)), &queue, nullptr);
  REQUIRE(worker.Start().ok());
  JobPtr tune = Costing("t", 0, true);
  Job::Bounds bounds;
  bounds.deadline = absl::Now() - absl::Seconds(1);
  tune->set_bounds(bounds);
  fake->proceed.Notify();
  REQUIRE(queue.Push(tune).ok());
  WaitEnded(tune);
  worker.Stop();
  CHECK(tune->state() == v1::JOB_STATE_CANCELLED);
  CHECK(absl::IsDeadlineExceeded(tune->status()));
  CHECK(tune->status().message() == "the client's deadline passed");
  CHECK(fake->order ==
        std::vector<std::string>{"autotune shape 0", "autotune shape 1"});
}

}  // namespace
}  // namespace irontune
