#include "daemon/scheduler/jobs.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/store/sqlite.h"
#include "tests/testing/raw_grpc.h"

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

TEST_CASE("job: the events summary names each event by its kind") {
  JobPtr job = MeasureJob("j2");
  v1::AutotuneEvent progress;
  progress.mutable_progress();
  v1::AutotuneEvent trial;
  trial.mutable_trial();
  v1::AutotuneEvent result;
  result.mutable_result();
  for (const v1::AutotuneEvent& e :
       {progress, trial, progress, v1::AutotuneEvent(), result}) {
    job->Emit(e);
  }
  CHECK(job->EventsSummary() ==
        "5 events: progress 2, trial 1, other 1, result 1");
}

TEST_CASE("job: a stream that lingers takes what follows the first event") {
  JobPtr job = MeasureJob("j1");
  job->Emit(LogEvent("one"));
  bool done = true;
  // Without a linger, what is there now.
  CHECK(job->EventsFrom(0, absl::Seconds(30), &done).size() == 1);
  CHECK(!done);
  // With one, the events that follow until the job ends, in one batch.
  std::thread runner([job] {
    absl::SleepFor(absl::Milliseconds(20));
    job->Emit(LogEvent("two"));
    job->Emit(LogEvent("three"));
    job->Finish(absl::OkStatus(), v1::MeasureResult());
  });
  auto events = job->EventsFrom(0, absl::Seconds(30), &done,
                                /*linger=*/absl::Seconds(30));
  runner.join();
  REQUIRE(events.size() == 3);
  CHECK(events[2].log().text() == "three");
  CHECK(done);
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

namespace irontune {
namespace {

// An Autotune whose profile holds `bytes` of entries.
v1::AutotuneRequest WithProfileOf(size_t bytes) {
  v1::AutotuneRequest request;
  v1::ProfileEntry* e = request.mutable_profile()->add_entries();
  e->set_operator_class("GEMM");
  v1::Field* f = e->add_dims();
  f->set_name("blob");
  f->mutable_value()->set_string_value(std::string(bytes, 'x'));
  return request;
}

TEST_CASE("job: an ended job no longer holds its request") {
  auto job = std::make_shared<Job>("j-big", WithProfileOf(10 << 20), "ann",
                                   v1::PRIORITY_UNSPECIFIED, false);
  CHECK(job->RetainedBytes() > (10u << 20));
  // The worker's own pointer keeps the request for as long as it runs.
  std::shared_ptr<const Job::Request> running = job->request();
  REQUIRE(running != nullptr);
  job->MarkStarted();
  job->Finish(absl::OkStatus(), v1::AutotuneResult());
  CHECK(job->request() == nullptr);
  CHECK(std::get<v1::AutotuneRequest>(*running).profile().entries_size() == 1);
  running.reset();
  // What is left: the summary, a small result and two events.
  CHECK(job->RetainedBytes() < 64 * 1024);
  CHECK(job->Summary().state() == v1::JOB_STATE_SUCCEEDED);
}

// `request` with an unknown field of `padding` bytes after it, parsed
// back: as irontuned receives a padded request.
v1::AutotuneRequest Padded(const v1::AutotuneRequest& request, size_t padding) {
  v1::AutotuneRequest out;
  REQUIRE(out.ParseFromString(request.SerializeAsString() +
                              testing::PaddingBytes(padding)));
  return out;
}

TEST_CASE(
    "job: a request is counted as received, its unknown fields "
    "discarded") {
  const v1::AutotuneRequest plain = WithProfileOf(4096);
  const v1::AutotuneRequest padded = Padded(plain, 3 << 20);
  REQUIRE(padded.ByteSizeLong() > (3u << 20));
  Job job("j-pad", padded, "ann", v1::PRIORITY_UNSPECIFIED, false);
  // Counted whole, unknown fields included...
  CHECK(job.request_bytes() == padded.ByteSizeLong());
  // ...but not held: what is kept is the request without them.
  std::shared_ptr<const Job::Request> kept = job.request();
  REQUIRE(kept != nullptr);
  const auto& request = std::get<v1::AutotuneRequest>(*kept);
  CHECK(request.ByteSizeLong() == plain.ByteSizeLong());
  CHECK(request.profile().entries_size() == 1);
}

TEST_CASE("job: its charge to the queue budget goes with its request") {
  auto budget = QueueBudget::Make(uint64_t{1} << 30, uint64_t{1} << 30);
  auto planned = std::make_shared<Job>("j-plan", WithProfileOf(1 << 20), "ann",
                                       v1::PRIORITY_UNSPECIFIED, false);
  auto ended = std::make_shared<Job>("j-end", WithProfileOf(1 << 20), "bob",
                                     v1::PRIORITY_UNSPECIFIED, false);
  for (const JobPtr& job : {planned, ended}) {
    auto charge = budget->Reserve(job->client(), job->request_bytes());
    REQUIRE(charge.ok());
    job->set_charge(*std::move(charge));
  }
  CHECK(budget->used("ann") == planned->request_bytes());
  CHECK(budget->used() == planned->request_bytes() + ended->request_bytes());

  // Dropped as planned: the worker's pointer still reads it, the budget
  // has it back.
  std::shared_ptr<const Job::Request> running = planned->request();
  planned->MarkStarted();
  planned->DropRequest();
  CHECK(planned->request() == nullptr);
  CHECK(planned->request_bytes() == 0);
  CHECK(budget->used("ann") == 0);
  CHECK(std::get<v1::AutotuneRequest>(*running).profile().entries_size() == 1);
  CHECK(planned->RetainedBytes() < 64 * 1024);
  // A job ending before it ran gives its bytes back too.
  ended->Finish(absl::CancelledError("cancelled by request"));
  CHECK(budget->used() == 0);
}

TEST_CASE("job: how a stopped job ends depends on why it was stopped") {
  JobPtr deadline = MeasureJob("j-d");
  deadline->MarkStarted();
  deadline->Cancel("the client's deadline passed",
                   absl::StatusCode::kDeadlineExceeded);
  deadline->Finish(deadline->cancel_status());
  CHECK(deadline->state() == v1::JOB_STATE_CANCELLED);
  CHECK(absl::IsDeadlineExceeded(deadline->status()));

  JobPtr limit = MeasureJob("j-l");
  limit->MarkStarted();
  limit->Cancel("over its device time", absl::StatusCode::kResourceExhausted);
  limit->Finish(limit->cancel_status());
  CHECK(limit->state() == v1::JOB_STATE_FAILED);
  CHECK(absl::IsResourceExhausted(limit->status()));
  CHECK(limit->Summary().error().find("over its device time") !=
        std::string::npos);
}

TEST_CASE("job store: a job running at a crash reads INTERRUPTED after") {
  const std::string path = TempDir("interrupted") + "/jobs.db";
  auto job = std::make_shared<Job>("j-run", v1::AutotuneRequest(), "ci",
                                   v1::PRIORITY_BATCH, false);
  job->MarkStarted();
  job->SetShapes(3, 10);
  {
    auto store = JobStore::Open(path);
    REQUIRE(store.ok());
    REQUIRE((*store)->Save(job->Record()).ok());
  }  // no end saved: the daemon died
  auto store = JobStore::Open(path);
  REQUIRE(store.ok());
  auto lost = (*store)->MarkInterrupted();
  REQUIRE(lost.ok());
  REQUIRE(*lost == std::vector<std::string>{"j-run"});
  auto loaded = (*store)->Load("j-run");
  REQUIRE(loaded.ok());
  REQUIRE(loaded->has_value());
  const v1::JobSummary& s = (*loaded)->summary();
  CHECK(s.state() == v1::JOB_STATE_INTERRUPTED);
  CHECK(s.shapes_done() == 3);
  CHECK(s.shapes_total() == 10);
  CHECK(s.error().find("after 3 of 10 shapes") != std::string::npos);
  CHECK(s.error().find("submit it again") != std::string::npos);
  // Only once.
  CHECK((*store)->MarkInterrupted()->empty());
}

JobRecord Ended(const std::string& id, size_t bytes, int64_t ended_ms) {
  v1::JobResult result;
  v1::JobSummary* s = result.mutable_summary();
  s->set_job_id(id);
  s->set_state(v1::JOB_STATE_SUCCEEDED);
  s->set_submitted_unix_ms(ended_ms);
  s->set_ended_unix_ms(ended_ms);
  s->set_error(std::string(bytes, 'e'));
  return JobRecord{id, "ann", result, ""};
}

TEST_CASE("job store: old jobs, and the oldest past the size, are pruned") {
  const std::string path = TempDir("prune") + "/jobs.db";
  JobStoreLimits limits;
  limits.max_age = absl::Hours(24);
  limits.max_bytes = 100 * 1024;
  auto store = JobStore::Open(path, limits);
  REQUIRE(store.ok());
  const int64_t now = absl::ToUnixMillis(absl::Now());
  REQUIRE((*store)->Save(Ended("j-old", 10, now - 48 * 3600 * 1000)).ok());
  CHECK(!(*store)->Load("j-old")->has_value());
  for (int i = 0; i < 5; ++i) {
    REQUIRE(
        (*store)->Save(Ended(absl::StrCat("j-", i), 40 * 1024, now + i)).ok());
  }
  // 40 KiB each within 100 KiB: the newest two stay.
  auto list = (*store)->List(100);
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  CHECK((*list)[0].job_id() == "j-4");
  CHECK((*list)[1].job_id() == "j-3");
}

TEST_CASE("job store: a full disk is ResourceExhausted naming the dir") {
  const std::string dir = TempDir("full");
  { REQUIRE(JobStore::Open(dir + "/jobs.db").ok()); }
  sqlite::SetMaxPageCountForTesting(1);  // no page more than it has
  auto store = JobStore::Open(dir + "/jobs.db");
  sqlite::SetMaxPageCountForTesting(0);
  REQUIRE(store.ok());
  const absl::Status s = (*store)->Save(Ended("j-big", 64 * 1024, 1));
  CHECK(absl::IsResourceExhausted(s));
  CHECK(s.message().find("no space left in " + dir) == 0);
}

}  // namespace
}  // namespace irontune
