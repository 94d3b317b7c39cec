#include "daemon/server/worker.h"

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
  absl::StatusOr<v1::MeasureResult> RunMeasure(const v1::MeasureRequest&,
                                               JobContext& context) override {
    order.push_back("measure");
    context.Log("measured");
    return v1::MeasureResult();
  }
  std::vector<std::string> order;  // written on the worker thread only
  absl::Notification started;
  absl::Notification proceed;
};

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

}  // namespace
}  // namespace irontune
