#include "daemon/scheduler/job_queue.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace irontune {
namespace {

JobPtr MakeJob(const std::string& id, const std::string& client,
               v1::Priority priority = v1::PRIORITY_INTERACTIVE,
               v1::JobKind kind = v1::JOB_KIND_AUTOTUNE) {
  Job::Request request;
  if (kind == v1::JOB_KIND_MEASURE) request = v1::MeasureRequest();
  return std::make_shared<Job>(id, request, client, priority,
                               /*detach=*/false);
}

std::vector<std::string> Drain(JobQueue& queue) {
  std::vector<std::string> ids;
  while (JobPtr job = queue.TryPop()) ids.push_back(job->id());
  return ids;
}

TEST_CASE("queue: interactive jobs run before batch jobs") {
  JobQueue queue(10);
  REQUIRE(queue.Push(MakeJob("b1", "ci", v1::PRIORITY_BATCH)).ok());
  REQUIRE(queue.Push(MakeJob("i1", "ann", v1::PRIORITY_UNSPECIFIED)).ok());
  REQUIRE(queue.Push(MakeJob("b2", "ci", v1::PRIORITY_BATCH)).ok());
  REQUIRE(queue.Push(MakeJob("i2", "ann", v1::PRIORITY_INTERACTIVE)).ok());
  CHECK(Drain(queue) == std::vector<std::string>{"i1", "i2", "b1", "b2"});
}

TEST_CASE("queue: FIFO within a client, round robin across clients") {
  JobQueue queue(10);
  for (const char* id : {"a1", "a2", "a3"}) {
    REQUIRE(queue.Push(MakeJob(id, "ann")).ok());
  }
  REQUIRE(queue.Push(MakeJob("b1", "bob")).ok());
  REQUIRE(queue.Push(MakeJob("b2", "bob")).ok());
  REQUIRE(queue.Push(MakeJob("c1", "cat")).ok());
  // Positions reflect the order the jobs will run in.
  CHECK(queue.Position("b1") == 1u);
  CHECK(queue.Position("c1") == 2u);
  CHECK(queue.Position("a3") == 5u);
  CHECK(Drain(queue) ==
        std::vector<std::string>{"a1", "b1", "c1", "a2", "b2", "a3"});
}

TEST_CASE("queue: Push reports the position") {
  JobQueue queue(10);
  CHECK(*queue.Push(MakeJob("a1", "ann")) == 0u);
  CHECK(*queue.Push(MakeJob("a2", "ann")) == 1u);
  // Bob's first job goes ahead of Ann's second.
  CHECK(*queue.Push(MakeJob("b1", "bob")) == 1u);
  JobPtr batch = MakeJob("i1", "ci", v1::PRIORITY_BATCH);
  CHECK(*queue.Push(batch) == 3u);
  // The job's first event says so.
  bool done = false;
  auto events = batch->EventsFrom(0, absl::ZeroDuration(), &done);
  REQUIRE(events.size() == 1);
  CHECK(events[0].queued().position() == 3u);
}

TEST_CASE("queue: bounded, RESOURCE_EXHAUSTED when full") {
  JobQueue queue(2);
  REQUIRE(queue.Push(MakeJob("a1", "ann")).ok());
  REQUIRE(queue.Push(MakeJob("a2", "ann")).ok());
  absl::StatusOr<size_t> full = queue.Push(MakeJob("a3", "ann"));
  CHECK(absl::IsResourceExhausted(full.status()));
  REQUIRE(queue.TryPop() != nullptr);
  CHECK(queue.Push(MakeJob("a3", "ann")).ok());
}

TEST_CASE("queue: TakeMeasure takes the first Measure job in run order") {
  JobQueue queue(10);
  REQUIRE(queue.Push(MakeJob("t1", "ann")).ok());
  REQUIRE(
      queue.Push(MakeJob("m1", "ci", v1::PRIORITY_BATCH, v1::JOB_KIND_MEASURE))
          .ok());
  REQUIRE(queue
              .Push(MakeJob("m2", "bob", v1::PRIORITY_INTERACTIVE,
                            v1::JOB_KIND_MEASURE))
              .ok());
  CHECK(queue.TakeMeasure()->id() == "m2");
  CHECK(queue.TakeMeasure()->id() == "m1");
  CHECK(queue.TakeMeasure() == nullptr);
  CHECK(Drain(queue) == std::vector<std::string>{"t1"});
}

TEST_CASE("queue: Remove, Wake and Close") {
  JobQueue queue(10);
  REQUIRE(queue.Push(MakeJob("a1", "ann")).ok());
  REQUIRE(queue.Push(MakeJob("b1", "bob")).ok());
  REQUIRE(queue.Push(MakeJob("a2", "ann")).ok());
  CHECK(queue.Remove("b1")->id() == "b1");
  CHECK(queue.Remove("b1") == nullptr);
  CHECK(queue.size() == 2);
  queue.Wake();
  CHECK(queue.Pop() == nullptr);  // woken, the jobs stay
  CHECK(queue.size() == 2);
  std::vector<JobPtr> left = queue.Close();
  REQUIRE(left.size() == 2);
  CHECK(left[0]->id() == "a1");
  CHECK(left[1]->id() == "a2");
  CHECK(queue.Pop() == nullptr);
  CHECK(absl::IsUnavailable(queue.Push(MakeJob("a3", "ann")).status()));
}

TEST_CASE("queue: a client past its quota is refused, others are not") {
  JobQueue queue(10, /*client_quota=*/2);
  REQUIRE(queue.Push(MakeJob("a1", "ann")).ok());
  REQUIRE(queue.Push(MakeJob("a2", "ann", v1::PRIORITY_BATCH)).ok());
  const auto third = queue.Push(MakeJob("a3", "ann"));
  CHECK(absl::IsResourceExhausted(third.status()));
  CHECK(third.status().message().find(
            "client \"ann\" has 2 jobs waiting, its quota "
            "(--client-queue-quota 2)") == 0);
  CHECK(queue.Push(MakeJob("b1", "bob")).ok());
  CHECK(queue.TryPop()->id() == "a1");
  CHECK(queue.Push(MakeJob("a3", "ann")).ok());
}

TEST_CASE("queue: TakeMeasure skips the Measure jobs not eligible") {
  JobQueue queue(10);
  REQUIRE(queue
              .Push(MakeJob("m1", "ann", v1::PRIORITY_INTERACTIVE,
                            v1::JOB_KIND_MEASURE))
              .ok());
  REQUIRE(queue
              .Push(MakeJob("m2", "bob", v1::PRIORITY_INTERACTIVE,
                            v1::JOB_KIND_MEASURE))
              .ok());
  JobPtr taken =
      queue.TakeMeasure([](const Job& job) { return job.id() == "m2"; });
  REQUIRE(taken != nullptr);
  CHECK(taken->id() == "m2");
  CHECK(queue.TakeMeasure([](const Job&) { return false; }) == nullptr);
  CHECK(queue.size() == 1);
}

}  // namespace
}  // namespace irontune
