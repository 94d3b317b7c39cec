#include "daemon/server/jobs.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>

namespace irontune {
namespace {

JobPtr MeasureJob(const std::string& id) {
  return std::make_shared<Job>(id, v1::MeasureRequest(), "ann",
                               v1::PRIORITY_UNSPECIFIED, /*detach=*/false);
}

v1::AutotuneEvent LogEvent(const std::string& text) {
  v1::AutotuneEvent e;
  e.mutable_log()->set_text(text);
  return e;
}

std::string TempDir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / "irontune-jobs-test" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST_CASE("job: events are kept and replayed, the end is signalled") {
  JobPtr job = MeasureJob("j1");
  CHECK(job->kind() == v1::JOB_KIND_MEASURE);
  CHECK(job->priority() == v1::PRIORITY_INTERACTIVE);
  CHECK(job->state() == v1::JOB_STATE_QUEUED);
  job->Emit(LogEvent("one"));
  job->MarkStarted();
  CHECK(job->state() == v1::JOB_STATE_RUNNING);

  bool done = true;
  auto events = job->EventsFrom(0, absl::ZeroDuration(), &done);
  REQUIRE(events.size() == 2);
  CHECK(!done);
  CHECK(events[0].job_id() == "j1");
  CHECK(events[0].log().text() == "one");
  CHECK(events[1].has_started());

  // A watcher waiting for more is woken by the end.
  std::thread finisher([job] {
    absl::SleepFor(absl::Milliseconds(20));
    v1::MeasureResult r;
    r.add_settings()->set_cached(true);
    job->Finish(absl::OkStatus(), r);
  });
  events = job->EventsFrom(2, absl::Seconds(30), &done);
  finisher.join();
  CHECK(events.empty());
  CHECK(done);
  CHECK(job->state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(job->Result().measure().settings_size() == 1);
  // Events after the end are dropped; a second Finish is ignored.
  job->Emit(LogEvent("late"));
  CHECK(!job->Finish(absl::InternalError("late")));
  CHECK(job->EventsFrom(0, absl::ZeroDuration(), &done).size() == 2);
  CHECK(job->EventsSummary() == "2 events: log 1, started 1");
}

TEST_CASE("job: cancellation is seen by the runner and ends it CANCELLED") {
  JobPtr job = MeasureJob("j2");
  job->MarkStarted();
  CHECK(!job->cancelled());
  CHECK(!job->WaitCancelled(absl::Milliseconds(1)));
  std::thread canceller([job] { job->Cancel("the client went away"); });
  CHECK(job->WaitCancelled(absl::Seconds(30)));
  canceller.join();
  CHECK(job->cancelled());
  CHECK(job->cancel_reason() == "the client went away");
  job->Finish(absl::CancelledError(job->cancel_reason()));
  CHECK(job->state() == v1::JOB_STATE_CANCELLED);
  CHECK(job->Summary().error().find("the client went away") !=
        std::string::npos);
}

TEST_CASE("job: a failure keeps its error") {
  JobPtr job = MeasureJob("j3");
  job->Finish(absl::FailedPreconditionError("the default does not build"));
  CHECK(job->state() == v1::JOB_STATE_FAILED);
  CHECK(absl::IsFailedPrecondition(job->status()));
}

TEST_CASE("job store: finished jobs survive a reopen") {
  const std::string dir = TempDir("reopen");
  const std::string path = dir + "/jobs.db";
  JobPtr a = MeasureJob("j-a");
  a->MarkStarted();
  v1::MeasureResult r;
  r.add_settings()->set_delta_us(1.5);
  a->Finish(absl::OkStatus(), r);
  JobPtr b = std::make_shared<Job>("j-b", v1::AutotuneRequest(), "ci",
                                   v1::PRIORITY_BATCH, /*detach=*/true);
  b->Finish(absl::UnimplementedError("not yet"));
  {
    auto store = JobStore::Open(path);
    REQUIRE(store.ok());
    REQUIRE((*store)->Save(a->Record()).ok());
    REQUIRE((*store)->Save(b->Record()).ok());
  }
  auto store = JobStore::Open(path);
  REQUIRE(store.ok());
  auto loaded = (*store)->Load("j-a");
  REQUIRE(loaded.ok());
  REQUIRE(loaded->has_value());
  CHECK((*loaded)->summary().state() == v1::JOB_STATE_SUCCEEDED);
  CHECK((*loaded)->measure().settings(0).delta_us() == 1.5);
  auto failed = (*store)->Load("j-b");
  REQUIRE(failed.ok());
  REQUIRE(failed->has_value());
  CHECK((*failed)->summary().state() == v1::JOB_STATE_FAILED);
  CHECK((*failed)->summary().detached());
  CHECK((*failed)->summary().kind() == v1::JOB_KIND_AUTOTUNE);
  auto missing = (*store)->Load("j-none");
  REQUIRE(missing.ok());
  CHECK(!missing->has_value());
  auto list = (*store)->List(10);
  REQUIRE(list.ok());
  CHECK(list->size() == 2);
}

}  // namespace
}  // namespace irontune
