#include "daemon/server/worker.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

const char* KindName(v1::JobKind kind) {
  return kind == v1::JOB_KIND_AUTOTUNE ? "autotune" : "measure";
}

}  // namespace

class DeviceWorker::Context : public JobContext {
 public:
  Context(DeviceWorker* worker, JobPtr job, bool yielded)
      : worker_(worker), job_(std::move(job)), yielded_(yielded) {}

  void Emit(v1::AutotuneEvent event) override { job_->Emit(std::move(event)); }
  bool cancelled() override { return job_->cancelled(); }
  void Sleep(absl::Duration d) override { job_->WaitCancelled(d); }
  void Yield() override {
    // A job run from a yield does not yield in turn.
    if (!yielded_) worker_->RunYielded();
  }
  void SetShapes(uint32_t done, uint32_t total) override {
    job_->SetShapes(done, total);
    shapes_total_ = total;
  }
  uint32_t shapes_total() const { return shapes_total_; }

 private:
  DeviceWorker* worker_;
  JobPtr job_;
  bool yielded_;
  uint32_t shapes_total_ = 0;
};

DeviceWorker::DeviceWorker(WorkerParts parts, JobQueue* queue, JobStore* store)
    : parts_(std::move(parts)), queue_(queue), store_(store) {
  if (parts_.runner) {
    runner_ = parts_.runner.get();
  } else {
    default_runner_ = std::make_unique<DeviceJobRunner>(
        parts_.device.get(), parts_.builder.get(), parts_.cache.get());
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
    job->Cancel("irontuned is shutting down");
    FinishUnrun(job, absl::UnavailableError("irontuned is shutting down"));
  }
  {
    absl::MutexLock lock(&mu_);
    if (running_) running_->Cancel("irontuned is shutting down");
  }
  if (thread_.joinable()) thread_.join();
  // Tasks posted too late are refused.
  absl::MutexLock lock(&mu_);
  for (auto& task : tasks_) {
    task->result = absl::UnavailableError("irontuned is shutting down");
    task->done = true;
  }
  tasks_.clear();
  task_done_.SignalAll();
}

WorkerStatus DeviceWorker::Status() const {
  absl::MutexLock lock(&mu_);
  return WorkerStatus{platform_, running_, cache_stats_};
}

absl::Status DeviceWorker::RunOnWorker(
    std::function<absl::Status(Cache*)> task) {
  auto t = std::make_shared<Task>();
  t->fn = std::move(task);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("irontuned is shutting down");
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
                 job->client(), KindName(job->kind()),
                 job->status().ToString());
    Save(*job);
  }
}

void DeviceWorker::Loop() {
  while (true) {
    RunTasks();
    JobPtr job = queue_->Pop();
    if (job) {
      RunJob(job, /*yielded=*/false);
      if (queue_->size() == 0 && parts_.cache) {
        // Idle: fold the WAL back into the file; failure loses nothing.
        absl::Status s = parts_.cache->Checkpoint();
        if (!s.ok()) spdlog::debug("cache checkpoint: {}", s.ToString());
      }
    } else if (stopping_) {
      break;
    }
  }
  RunTasks();
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
    absl::Status result = task->fn(parts_.cache.get());
    Refresh();
    absl::MutexLock lock(&mu_);
    task->result = std::move(result);
    task->done = true;
    task_done_.SignalAll();
  }
}

void DeviceWorker::RunYielded() {
  RunTasks();
  while (JobPtr job = queue_->TakeMeasure()) RunJob(job, /*yielded=*/true);
}

void DeviceWorker::RunJob(const JobPtr& job, bool yielded) {
  if (job->cancelled()) {
    FinishUnrun(job, absl::CancelledError(job->cancel_reason()));
    return;
  }
  JobPtr outer;
  {
    absl::MutexLock lock(&mu_);
    outer = running_;
    running_ = job;
  }
  // Stop may have closed the queue after Pop handed this job out.
  if (stopping_) job->Cancel("irontuned is shutting down");
  job->MarkStarted();
  spdlog::info("job {} started: client={} kind={} priority={}{}", job->id(),
               job->client(), KindName(job->kind()),
               job->priority() == v1::PRIORITY_BATCH ? "batch" : "interactive",
               yielded ? absl::StrCat(" (yielded to by ", outer->id(), ")")
                       : std::string());
  const double device_start =
      parts_.device_clock_us ? parts_.device_clock_us() : 0;
  const absl::Time wall_start = absl::Now();
  Context context(this, job, yielded);

  absl::Status status;
  uint32_t settings_timed = 0;
  uint32_t settings = 0;
  if (job->kind() == v1::JOB_KIND_AUTOTUNE) {
    absl::StatusOr<v1::AutotuneResult> result = runner_->RunAutotune(
        std::get<v1::AutotuneRequest>(job->request()), context);
    status = result.status();
    if (result.ok()) {
      settings_timed = result->stats().settings_timed();
      settings = settings_timed + result->stats().cache_hits();
    }
    if (!status.ok() && job->cancelled()) {
      status = absl::CancelledError(job->cancel_reason());
    }
    // Status readers see the job's cache lookups once it has ended.
    Refresh();
    job->Finish(status,
                result.ok() ? std::move(*result) : v1::AutotuneResult());
  } else {
    absl::StatusOr<v1::MeasureResult> result = runner_->RunMeasure(
        std::get<v1::MeasureRequest>(job->request()), context);
    status = result.status();
    if (result.ok()) {
      for (const auto& s : result->settings()) {
        ++settings;
        if (s.has_measurement() && !s.cached()) ++settings_timed;
      }
    }
    if (!status.ok() && job->cancelled()) {
      status = absl::CancelledError(job->cancel_reason());
    }
    Refresh();
    if (result.ok()) {
      job->Finish(status, std::move(*result));
    } else {
      job->Finish(status);
    }
  }
  const double device_s = parts_.device_clock_us
                              ? (parts_.device_clock_us() - device_start) / 1e6
                              : 0;
  if (job->kind() == v1::JOB_KIND_MEASURE && status.ok()) {
    v1::AutotuneStats stats;
    stats.set_shapes(1);
    stats.set_settings_timed(settings_timed);
    stats.set_cache_hits(settings - settings_timed);
    stats.set_device_seconds(device_s);
    stats.set_wall_seconds(absl::ToDoubleSeconds(absl::Now() - wall_start));
    job->SetStats(stats);
  }
  Save(*job);
  spdlog::info(
      "job {} ended: client={} kind={} shapes={} settings_timed={}/{} "
      "device_time={:.3f}s wall={:.3f}s outcome={}",
      job->id(), job->client(), KindName(job->kind()), context.shapes_total(),
      settings_timed, settings, device_s,
      absl::ToDoubleSeconds(absl::Now() - wall_start),
      status.ok() ? std::string("OK") : status.ToString());
  {
    absl::MutexLock lock(&mu_);
    running_ = outer;
  }
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

void DeviceWorker::Save(const Job& job) {
  if (store_ == nullptr) return;
  absl::Status s = store_->Save(job.Record());
  if (!s.ok()) {
    spdlog::warn("job {}: not saved in the job store: {}", job.id(),
                 s.ToString());
  }
}

}  // namespace irontune
