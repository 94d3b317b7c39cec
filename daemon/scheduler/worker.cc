#include "daemon/scheduler/worker.h"

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/shape.h"
#include "daemon/base/log_safe.h"
#include "daemon/scheduler/job_end.h"
#include "daemon/scheduler/replies.h"
#include "daemon/scheduler/requests.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

constexpr char kShuttingDown[] = "irontuned is shutting down";
// What a task's writes are exposed under (CacheWrites): no job id is one.
constexpr char kTaskWrites[] = "task";
// A running Autotune's record is saved after a shape at most this often.
constexpr absl::Duration kSaveProgressEvery = absl::Milliseconds(100);

// A Builder that beats `heartbeat` while the worker waits for a build
// (the builds run on the pool's threads: waiting for them is not a hang),
// then forwards to the owned `target`.
class HeartbeatBuilder : public BuilderWrapper {
 public:
  HeartbeatBuilder(std::unique_ptr<Builder> target, Heartbeat* heartbeat)
      : BuilderWrapper(target.get()),
        owned_(std::move(target)),
        heartbeat_(heartbeat) {}
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    return Await(request, [] { return false; });
  }
  absl::StatusOr<BuildOutcome> Await(
      const BuildRequest& request,
      const std::function<bool()>& cancelled) override {
    heartbeat_->Beat();
    absl::StatusOr<BuildOutcome> out = BuilderWrapper::Await(request, [&] {
      heartbeat_->Beat();
      return cancelled();
    });
    heartbeat_->Beat();
    return out;
  }
  // A check that builds (ChecksFit false) is waited for as a build is.
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override {
    if (!ChecksFit()) return Builder::Fit(request);
    heartbeat_->Beat();
    absl::StatusOr<std::string> out = BuilderWrapper::Fit(request);
    heartbeat_->Beat();
    return out;
  }

 private:
  const std::unique_ptr<Builder> owned_;  // the wrapper's target
  Heartbeat* const heartbeat_;
};

}  // namespace

struct DeviceWorker::Running {
  JobPtr job;
  // Held while a Measure runs and while an Autotune is planned; the job
  // itself drops its request when it ends, or once planned (Begin).
  std::shared_ptr<const Job::Request> request;
  std::unique_ptr<JobContext> context;
  std::unique_ptr<AutotuneSteps> steps;  // an Autotune's
  BuildPoolStats builds_start;           // the pool's figures when it started
  absl::Time wall_start;
  absl::Time saved;  // when its record was last saved
};

DeviceWorker::DeviceWorker(WorkerParts parts, JobQueue* queue, JobStore* store)
    : parts_(std::move(parts)), queue_(queue), store_(store) {
  parts_.device =
      std::make_unique<HeartbeatDevice>(std::move(parts_.device), &heartbeat_);
  parts_.builder = std::make_unique<HeartbeatBuilder>(std::move(parts_.builder),
                                                      &heartbeat_);
  if (parts_.runner) {
    runner_ = parts_.runner.get();
  } else {
    default_runner_ = std::make_unique<DeviceJobRunner>();
    runner_ = default_runner_.get();
  }
}

DeviceWorker::~DeviceWorker() { Stop(); }

absl::Status DeviceWorker::Start() {
  absl::StatusOr<Platform> platform = parts_.device->GetPlatform();
  if (!platform.ok()) return platform.status();
  {
    absl::MutexLock lock(&mu_);
    platform_ = *platform;
  }
  Refresh();
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void DeviceWorker::Stop() {
  if (stopping_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  for (const JobPtr& job : queue_->Close()) {
    job->Cancel(kShuttingDown);
    FinishUnrun(job, absl::UnavailableError(kShuttingDown));
  }
  {
    absl::MutexLock lock(&mu_);
    if (running_) running_->Cancel(kShuttingDown);
    if (autotune_job_) autotune_job_->Cancel(kShuttingDown);
  }
  parts_.builder->Stop();  // builds in flight end now, not at their end
  if (thread_.joinable()) thread_.join();
  // Tasks posted too late are refused.
  absl::MutexLock lock(&mu_);
  for (auto& task : tasks_) {
    task->result = absl::UnavailableError(kShuttingDown);
    task->done = true;
  }
  tasks_.clear();
  task_done_.SignalAll();
}

WorkerStatus DeviceWorker::Status() const {
  WorkerStatus out;
  if (parts_.build_stats) {
    out.builds = BuildStatsOf(parts_.build_stats(), parts_.build_jobs);
  }
  absl::MutexLock lock(&mu_);
  out.platform = platform_;
  out.running = running_;
  out.cache = cache_stats_;
  out.reserved_bytes = reserved_bytes_;
  return out;
}

bool DeviceWorker::Fits(const Job& job) const {
  absl::MutexLock lock(&mu_);
  return reserved_bytes_ <= parts_.memory_limit_bytes &&
         job.memory_bytes() <= parts_.memory_limit_bytes - reserved_bytes_;
}

void DeviceWorker::Reserve(const Job& job, bool take) {
  absl::MutexLock lock(&mu_);
  if (take) {
    reserved_bytes_ += job.memory_bytes();
  } else {
    reserved_bytes_ -= std::min(reserved_bytes_, job.memory_bytes());
  }
}

absl::Status DeviceWorker::RunOnWorker(
    std::function<absl::Status(Cache*)> task) {
  auto t = std::make_shared<Task>();
  t->fn = std::move(task);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError(kShuttingDown);
    tasks_.push_back(t);
  }
  queue_->Wake();
  absl::MutexLock lock(&mu_);
  while (!t->done) task_done_.Wait(&mu_);
  return t->result;
}

void DeviceWorker::FinishUnrun(const JobPtr& job, absl::Status status) {
  if (job->Finish(std::move(status))) {
    spdlog::info("job {} client={} kind={} ended before it ran: {}", job->id(),
                 LogSafe(job->client()), KindName(job->kind()),
                 LogSafe(job->status().ToString(), kLogSafeLongBytes));
    Save(*job).IgnoreError();
  }
}

void DeviceWorker::Loop() {
  while (true) {
    heartbeat_.Beat();
    RunTasks();
    if (autotune_ != nullptr) {
      // A Measure whose memory does not fit beside the Autotune waits.
      if (JobPtr measure = queue_->TakeMeasure(
              [this](const Job& job) { return Fits(job); })) {
        RunMeasure(measure);
      } else {
        Advance();
      }
    } else if (JobPtr job = PopWaiting()) {
      Begin(job);
    } else if (stopping_) {
      break;
    }
    if (autotune_ == nullptr && queue_->size() == 0 && parts_.cache) {
      // Idle: fold the WAL back into the file; failure loses nothing.
      absl::Status s = parts_.cache->Checkpoint();
      if (!s.ok()) spdlog::debug("cache checkpoint: {}", s.ToString());
      ReturnFreedMemory();
    }
  }
  RunTasks();
  heartbeat_.Exited();
}

#if defined(__GLIBC__)
namespace {

// The process's resident bytes (/proc/self/statm); 0 where unreadable.
size_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long pages_total = 0, pages_resident = 0;
  const int read = std::fscanf(f, "%lu %lu", &pages_total, &pages_resident);
  std::fclose(f);
  if (read != 2) return 0;
  return pages_resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace
#endif

void DeviceWorker::ReturnFreedMemory() {
#if defined(__GLIBC__)
  // An ended job's request and result are freed into the allocator's
  // per-thread arenas, which keep the pages; give them back to the system.
  // Trimming (or even counting the free memory) walks every arena under its
  // lock, which stalls the threads still streaming the job's last events:
  // only worth it once the process has grown by much since the last trim.
  const size_t resident = ResidentBytes();
  if (resident < resident_after_trim_ + kTrimGrowthBytes) return;
  malloc_trim(0);
  resident_after_trim_ = ResidentBytes();
#endif
}

JobPtr DeviceWorker::PopWaiting() {
  heartbeat_.Waiting();
  JobPtr job = queue_->Pop();
  heartbeat_.Beat();
  return job;
}

void DeviceWorker::RunTasks() {
  while (true) {
    std::shared_ptr<Task> task;
    {
      absl::MutexLock lock(&mu_);
      if (tasks_.empty()) return;
      task = tasks_.front();
      tasks_.pop_front();
    }
    heartbeat_.Beat();
    // A task may replace or remove any stored row.
    if (parts_.writes) parts_.writes->ExposeAll(kTaskWrites);
    absl::Status result = task->fn(parts_.cache.get());
    if (parts_.writes) parts_.writes->Release(kTaskWrites);
    tasks_run_.fetch_add(1);
    Refresh();
    absl::MutexLock lock(&mu_);
    task->result = std::move(result);
    task->done = true;
    task_done_.SignalAll();
  }
}

void DeviceWorker::Begin(const JobPtr& job) {
  if (job->kind() != v1::JOB_KIND_AUTOTUNE) {
    RunMeasure(job);
    return;
  }
  if (job->cancelled()) {
    FinishUnrun(job, job->cancel_status());
    return;
  }
  std::unique_ptr<Running> run = Open(job);
  if (run == nullptr) return;
  absl::StatusOr<std::unique_ptr<AutotuneSteps>> steps = runner_->StartAutotune(
      std::get<v1::AutotuneRequest>(*run->request), *run->context);
  if (!steps.ok()) {
    End(*run, steps.status(), v1::AutotuneResult());
    return;
  }
  run->steps = *std::move(steps);
  // Planned: the steps keep what they need (runner.h), so the request and
  // its charge to the queue budget go now, not when the job ends.
  run->request.reset();
  job->DropRequest();
  autotune_ = std::move(run);
  {
    absl::MutexLock lock(&mu_);
    autotune_job_ = job;
  }
  Advance();  // the first shape before anything else
}

void DeviceWorker::RunMeasure(const JobPtr& job) {
  if (job->cancelled()) {
    FinishUnrun(job, job->cancel_status());
    return;
  }
  std::unique_ptr<Running> run = Open(job);
  if (run == nullptr) return;
  const auto& request = std::get<v1::MeasureRequest>(*run->request);
  if (parts_.writes) {
    parts_.writes->Expose(job->id(), ShapeKey(request.operator_()));
  }
  absl::StatusOr<v1::MeasureResult> result =
      runner_->RunMeasure(request, *run->context);
  if (result.ok()) {
    End(*run, absl::OkStatus(), *std::move(result));
  } else {
    End(*run, result.status(), std::monostate());
  }
}

void DeviceWorker::Advance() {
  SetRunning(autotune_->job);
  absl::Status status = absl::OkStatus();
  if (!autotune_->steps->done()) status = autotune_->steps->Next();
  if (status.ok() && !autotune_->steps->done()) {
    // Its progress, for `jobs` after a crash, at most every
    // kSaveProgressEvery (shapes answered from the cache take far less);
    // a full disk ends it.
    const absl::Time now = absl::Now();
    if (now - autotune_->saved < kSaveProgressEvery) return;
    autotune_->saved = now;
    status = Save(*autotune_->job);
    if (status.ok() || !absl::IsResourceExhausted(status)) return;
  }
  std::unique_ptr<Running> run = std::move(autotune_);
  {
    absl::MutexLock lock(&mu_);
    autotune_job_ = nullptr;
  }
  if (status.ok()) {
    End(*run, status, run->steps->Finish());
  } else {
    End(*run, status, v1::AutotuneResult());
  }
}

std::unique_ptr<DeviceWorker::Running> DeviceWorker::Open(const JobPtr& job) {
  auto run = std::make_unique<Running>();
  run->job = job;
  run->request = job->request();
  if (run->request == nullptr) return nullptr;  // ended meanwhile
  const JobPtr outer = autotune_ != nullptr ? autotune_->job : nullptr;
  SetRunning(job);
  // Stop may have closed the queue after Pop handed this job out.
  if (stopping_) job->Cancel(kShuttingDown);
  job->MarkStarted();
  Reserve(*job, true);
  // On record before it runs, so a crash leaves it INTERRUPTED, not absent.
  // Without room to record it, it does not run.
  if (absl::Status saved = Save(*job); absl::IsResourceExhausted(saved)) {
    job->Cancel(std::string(saved.message()),
                absl::StatusCode::kResourceExhausted);
  }
  spdlog::info("job {} started: client={} kind={} priority={}{}", job->id(),
               LogSafe(job->client()), KindName(job->kind()),
               job->priority() == v1::PRIORITY_BATCH ? "batch" : "interactive",
               outer ? absl::StrCat(" (yielded to by ", outer->id(), ")")
                     : std::string());
  if (parts_.build_stats) run->builds_start = parts_.build_stats();
  run->wall_start = absl::Now();
  run->saved = run->wall_start;
  run->context = std::make_unique<JobContext>(
      job, *parts_.device, *parts_.builder, parts_.cache.get(),
      JobContext::Events::kLive, parts_.writes);
  run->context->set_costs(&costs_);
  return run;
}

void DeviceWorker::End(Running& run, absl::Status status,
                       JobResultVariant result) {
  // Status readers see the job's cache lookups once it has ended.
  Refresh();
  const std::optional<v1::BuildStats> builds = JobBuilds(run);
  // Its writes are all committed.
  if (parts_.writes) parts_.writes->Release(run.job->id());
  EndJob(run.job, std::move(status), std::move(result), *run.context, builds,
         run.wall_start, store_, "");
  Reserve(*run.job, false);
  if (builds) {
    LogBuilds(*run.job, *builds, run.context->device_seconds(),
              absl::ToDoubleSeconds(absl::Now() - run.wall_start));
  }
  SetRunning(autotune_ != nullptr ? autotune_->job : nullptr);
}

std::optional<v1::BuildStats> DeviceWorker::JobBuilds(
    const Running& run) const {
  if (!parts_.build_stats) return std::nullopt;
  return BuildStatsOf(StatsSince(parts_.build_stats(), run.builds_start),
                      parts_.build_jobs);
}

void DeviceWorker::LogBuilds(const Job& job, const v1::BuildStats& b,
                             double device_s, double wall_s) {
  const double builds_s = b.jobs() > 0 ? b.build_seconds() / b.jobs() : 0;
  spdlog::info(
      "job {} builds: asked={}+{} (1-step+many-step) needed={} "
      "built={}+{} (spare {}) build_time={:.1f}s over {} jobs ({:.1f}s each) "
      "fit_checks={} waited={:.1f}s (unqueued {:.1f}s, queued {:.1f}s) "
      "device_time={:.1f}s wall={:.1f}s utilisation_bound={:.3f}",
      job.id(), b.asked_one_step(), b.asked_many_step(), b.needed(),
      b.built_one_step(), b.built_many_step(), b.spare(), b.build_seconds(),
      b.jobs(), builds_s, b.fit_checks(), b.waited_seconds(),
      b.waited_unqueued_seconds(), b.waited_queued_seconds(), device_s, wall_s,
      UtilisationBound(device_s, b));
}

void DeviceWorker::SetRunning(JobPtr job) {
  absl::MutexLock lock(&mu_);
  running_ = std::move(job);
}

void DeviceWorker::Refresh() {
  absl::StatusOr<Platform> platform = parts_.device->GetPlatform();
  std::optional<CacheStats> stats;
  if (parts_.cache) {
    absl::StatusOr<CacheStats> s = parts_.cache->Stats();
    if (s.ok()) stats = *s;
  }
  absl::MutexLock lock(&mu_);
  if (platform.ok()) platform_ = *platform;
  if (stats) cache_stats_ = stats;
}

absl::Status DeviceWorker::Save(const Job& job) { return SaveJob(store_, job); }

}  // namespace irontune
