#include "daemon/scheduler/cached_answers.h"

#include <sched.h>

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "common/shape.h"
#include "common/status_macros.h"
#include "daemon/base/log_safe.h"
#include "daemon/base/thread_roles.h"
#include "daemon/builder/build_pool.h"
#include "daemon/scheduler/admission.h"
#include "daemon/scheduler/cache_only.h"
#include "daemon/scheduler/job_end.h"
#include "daemon/scheduler/read_only_cache.h"
#include "daemon/scheduler/replies.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

constexpr char kShuttingDown[] = "irontuned is shutting down";

// Runs `request` through `runner` to its end on `context`.
absl::StatusOr<JobResultVariant> RunToEnd(JobRunner& runner,
                                          const Job::Request& request,
                                          JobContext& context) {
  if (const auto* a = std::get_if<v1::AutotuneRequest>(&request)) {
    ASSIGN_OR_RETURN(std::unique_ptr<AutotuneSteps> steps,
                     runner.StartAutotune(*a, context));
    while (!steps->done()) RETURN_IF_ERROR(steps->Next());
    return steps->Finish();
  }
  ASSIGN_OR_RETURN(
      v1::MeasureResult measured,
      runner.RunMeasure(std::get<v1::MeasureRequest>(request), context));
  return measured;
}

// Keeps the calling thread off the timing CPUs (thread_roles.h) where
// other CPUs remain, at its own priority: an answer is short and someone
// waits for it, but the device's timing thread wakes there.
void KeepOffTimingCpus() {
  const std::vector<int> timing = TimingCpus();
  if (timing.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  int left = 0;
  for (int cpu : ThreadCpus()) {
    if (std::find(timing.begin(), timing.end(), cpu) != timing.end()) continue;
    CPU_SET(cpu, &set);
    ++left;
  }
  if (left > 0) sched_setaffinity(0, sizeof(set), &set);
}

}  // namespace

// One attempt's parts, which outlive the run: the context refers to them.
struct CachedAnswers::Attempt {
  Attempt(const JobPtr& job, const CachedAnswersOptions& options, Cache* cache)
      : device(options.platform(), options.stack, &needs),
        builder(options.builder_environment, options.checks_fit, &needs),
        context(job, device, builder, cache, *options.writes, needs),
        start(absl::Now()) {
    context.set_costs(options.costs);
  }
  NeedsDevice needs;
  CacheOnlyDevice device;
  CacheOnlyBuilder builder;
  CacheOnlyContext context;
  absl::Time start;
  JobResultVariant result;
};

CachedAnswers::CachedAnswers(CachedAnswersOptions options,
                             std::unique_ptr<JobRunner> runner, JobQueue* queue,
                             JobStore* store)
    : options_(std::move(options)),
      runner_(std::move(runner)),
      queue_(queue),
      store_(store) {}

CachedAnswers::~CachedAnswers() { Stop(); }

absl::StatusOr<std::unique_ptr<Cache>> CachedAnswers::OpenCache() const {
  return OpenReadOnlyCache(options_.cache_path, options_.cache_platform,
                           options_.cache_power_mode);
}

absl::Status CachedAnswers::Start() {
  std::vector<Reader> readers;
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    Reader reader;
    reader.rewrites = options_.rewrites ? options_.rewrites() : 0;
    ASSIGN_OR_RETURN(reader.cache, OpenCache());
    readers.push_back(std::move(reader));
  }
  for (size_t i = 0; i < readers.size(); ++i) {
    readers[i].thread = static_cast<int>(i);
    threads_.emplace_back(
        [this, r = std::move(readers[i])]() mutable { Loop(std::move(r)); });
  }
  absl::MutexLock lock(&mu_);
  started_ = true;
  return absl::OkStatus();
}

void CachedAnswers::Stop() {
  std::deque<JobPtr> waiting;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    waiting.swap(waiting_);
    for (auto& [thread, busy] : busy_) busy.first->Cancel(kShuttingDown);
    changed_.SignalAll();
  }
  for (const JobPtr& job : waiting) {
    job->Cancel(kShuttingDown);
    EndUnrun(job, absl::UnavailableError(kShuttingDown));
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

bool CachedAnswers::Eligible(const Job& job) {
  const std::shared_ptr<const Job::Request> request = job.request();
  if (request == nullptr) return false;
  return std::visit([](const auto& r) { return !r.remeasure(); }, *request);
}

bool CachedAnswers::Offer(const JobPtr& job) {
  if (!Eligible(*job)) return false;
  absl::MutexLock lock(&mu_);
  if (!started_ || stopping_ || waiting_.size() >= options_.waiting) {
    return false;
  }
  waiting_.push_back(job);
  changed_.Signal();
  return true;
}

std::vector<JobPtr> CachedAnswers::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<JobPtr> out;
  for (const auto& [thread, busy] : busy_) {
    if (!IsTerminal(busy.first->state())) out.push_back(busy.first);
  }
  out.insert(out.end(), waiting_.begin(), waiting_.end());
  return out;
}

bool CachedAnswers::Alive(absl::Duration stall) const {
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  for (const auto& [thread, busy] : busy_) {
    if (now - busy.second > stall) return false;
  }
  return true;
}

CachedAnswers::Counts CachedAnswers::counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

JobPtr CachedAnswers::Next(int thread) {
  absl::MutexLock lock(&mu_);
  while (waiting_.empty() && !stopping_) changed_.Wait(&mu_);
  if (stopping_) return nullptr;
  JobPtr job = std::move(waiting_.front());
  waiting_.pop_front();
  busy_[thread] = {job, absl::Now()};
  return job;
}

void CachedAnswers::Done(int thread) {
  absl::MutexLock lock(&mu_);
  busy_.erase(thread);
}

void CachedAnswers::Loop(Reader reader) {
  KeepOffTimingCpus();
  while (JobPtr job = Next(reader.thread)) {
    Answer(reader, job);
    Done(reader.thread);
  }
}

std::pair<int64_t, int64_t> CachedAnswers::lookups() const {
  absl::MutexLock lock(&mu_);
  int64_t hits = 0, misses = 0;
  for (const auto& [thread, l] : lookups_) {
    hits += l.hits + l.closed_hits;
    misses += l.misses + l.closed_misses;
  }
  return {hits, misses};
}

void CachedAnswers::CountLookups(Reader& reader, bool closing) {
  const absl::Time now = absl::Now();
  if (!closing && now - reader.counted < kCountLookupsEvery) return;
  reader.counted = now;
  absl::StatusOr<CacheStats> stats = reader.cache->Stats();
  if (!stats.ok()) return;
  absl::MutexLock lock(&mu_);
  Lookups& l = lookups_[reader.thread];
  l.hits = stats->hits;
  l.misses = stats->misses;
  if (!closing) return;
  l.closed_hits += l.hits;
  l.closed_misses += l.misses;
  l.hits = l.misses = 0;
}

void CachedAnswers::Answer(Reader& reader, const JobPtr& job) {
  if (job->cancelled()) {
    EndUnrun(job, job->cancel_status());
    return;
  }
  const std::shared_ptr<const Job::Request> request = job->request();
  if (request == nullptr) return;  // ended meanwhile
  std::string why;
  for (int tries = 0; tries < kCachedTries; ++tries) {
    switch (Try(reader, job, *request, why)) {
      case Outcome::kAnswered:
      case Outcome::kEnded:
        return;
      case Outcome::kChanged: {
        absl::MutexLock lock(&mu_);
        ++counts_.retried;
      }
        continue;
      case Outcome::kWorker:
        HandOver(job, why);
        return;
    }
  }
  HandOver(job, why);
}

void CachedAnswers::Refresh(Reader& reader) {
  if (!options_.rewrites) return;
  const uint64_t now = options_.rewrites();
  if (now == reader.rewrites) return;
  absl::StatusOr<std::unique_ptr<Cache>> fresh = OpenCache();
  if (fresh.ok()) CountLookups(reader, /*closing=*/true);
  if (!fresh.ok()) {
    spdlog::warn("cached answers: cannot reopen the cache: {}",
                 fresh.status().ToString());
    return;  // tried again at the next job
  }
  reader.cache = *std::move(fresh);
  reader.rewrites = now;
}

CachedAnswers::Outcome CachedAnswers::Try(Reader& reader, const JobPtr& job,
                                          const Job::Request& request,
                                          std::string& why) {
  Refresh(reader);
  const uint64_t generation = reader.cache->generation();
  Attempt attempt(job, options_, reader.cache.get());
  if (const auto* m = std::get_if<v1::MeasureRequest>(&request)) {
    attempt.context.Watch(ShapeKey(m->operator_()));
  }
  absl::StatusOr<JobResultVariant> result =
      RunToEnd(*runner_, request, attempt.context);
  if (attempt.context.inputs_made() > 0) {
    spdlog::debug("job {}: {} of seeded inputs made trying it from the cache",
                  job->id(), FormatBytes(attempt.context.inputs_made()));
  }
  if (attempt.needs.asked()) {
    why = attempt.needs.first();
    return Outcome::kWorker;
  }
  if (reader.cache->generation() != generation) {
    // It asked to write (and could not: read_only_cache.h); the worker,
    // the one writer, does it over.
    why = "a write to the cache";
    return Outcome::kWorker;
  }
  if (!result.ok() && job->cancelled()) {
    EndUnrun(job, job->cancel_status());
    return Outcome::kEnded;
  }
  if (!result.ok()) {
    why = result.status().ToString();
    return Outcome::kWorker;
  }
  if (!attempt.context.Unchanged()) {
    why = "the cache changed while it was read";
    return Outcome::kChanged;
  }
  attempt.result = *std::move(result);
  Commit(reader, job, attempt);
  return Outcome::kAnswered;
}

void CachedAnswers::Commit(Reader& reader, const JobPtr& job,
                           Attempt& attempt) {
  // Status readers see its lookups once it has ended, as the worker's.
  CountLookups(reader, /*closing=*/false);
  v1::AutotuneEvent queued;
  queued.mutable_queued()->set_position(0);
  job->Emit(std::move(queued));
  job->MarkStarted();
  spdlog::info("job {} started: client={} kind={} priority={} (from the cache)",
               job->id(), LogSafe(job->client()), KindName(job->kind()),
               job->priority() == v1::PRIORITY_BATCH ? "batch" : "interactive");
  attempt.context.Release();
  std::optional<v1::BuildStats> builds;
  if (options_.build_jobs) {
    builds = BuildStatsOf(BuildPoolStats(), *options_.build_jobs);
  }
  {
    absl::MutexLock lock(&mu_);
    ++counts_.answered;
  }
  EndJob(job, absl::OkStatus(), std::move(attempt.result), attempt.context,
         builds, attempt.start, store_, " (from the cache)");
}

void CachedAnswers::HandOver(const JobPtr& job, const std::string& why) {
  spdlog::debug("job {}: not answered from the cache ({} was needed); queued",
                job->id(), LogSafe(why));
  {
    absl::MutexLock lock(&mu_);
    ++counts_.handed_over;
  }
  absl::StatusOr<size_t> position = queue_->Push(job);
  if (!position.ok()) {
    EndUnrun(job, position.status());
    return;
  }
  // Cancelled while it was tried: the service's Cancel found it in no
  // queue, so it is taken out here rather than left for the worker.
  if (job->cancelled() && queue_->Remove(job->id()) != nullptr) {
    EndUnrun(job, job->cancel_status());
  }
}

void CachedAnswers::EndUnrun(const JobPtr& job, absl::Status status) {
  if (!job->Finish(std::move(status))) return;
  spdlog::info("job {} client={} kind={} ended before it ran: {}", job->id(),
               LogSafe(job->client()), KindName(job->kind()),
               LogSafe(job->status().ToString(), kLogSafeLongBytes));
  SaveJob(store_, *job).IgnoreError();
}

}  // namespace irontune
