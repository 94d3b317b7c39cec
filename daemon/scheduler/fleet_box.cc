#include "daemon/scheduler/fleet_box.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/base/log_safe.h"
#include "daemon/scheduler/fleet_jobs.h"
#include "daemon/scheduler/requests.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

// How often a job is looked at while it runs.
constexpr absl::Duration kFollowTick = absl::Milliseconds(100);
// How far before the last figure pulled the next pull starts.
constexpr absl::Duration kPullOverlap = absl::Minutes(1);

bool IsStoreDown(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable;
}

}  // namespace

FleetBox::FleetBox(FleetBoxOptions options, std::unique_ptr<FleetStore> store,
                   std::unique_ptr<CacheOutbox> outbox, DeviceWorker* worker,
                   JobQueue* queue)
    : options_(std::move(options)),
      store_(std::move(store)),
      queue_db_(std::make_unique<FleetQueue>(*store_)),
      outbox_(std::move(outbox)),
      worker_(worker),
      queue_(queue) {
  absl::MutexLock lock(&mu_);
  stats_.store_reachable = true;
}

FleetBox::~FleetBox() { Stop(); }

void FleetBox::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void FleetBox::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

FleetBoxStats FleetBox::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

bool FleetBox::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool FleetBox::Pause(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  const absl::Time until = absl::Now() + d;
  while (!stopping_ && absl::Now() < until) {
    wake_.WaitWithDeadline(&mu_, until);
  }
  return !stopping_;
}

void FleetBox::Noted(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  const bool reachable = !IsStoreDown(status);
  if (reachable != stats_.store_reachable) {
    if (reachable) {
      spdlog::info("fleet: the store ({}) answers again", store_->display());
    } else {
      spdlog::warn(
          "fleet: the store cannot be reached; timing goes on into "
          "the outbox: {}",
          std::string(status.message()));
    }
  }
  stats_.store_reachable = reachable;
}

FleetPartition FleetBox::Partition() const {
  const Platform platform = worker_->Status().platform;
  return {PlatformSlug(platform.name), platform.power_mode, options_.toolchain};
}

bool FleetBox::ReadyToClaim() const {
  return queue_->size() == 0 && worker_->Status().running == nullptr &&
         worker_->heartbeat().Alive(options_.stall_limit);
}

bool FleetBox::AwaitWork(absl::Duration d) {
  const absl::Time until = absl::Now() + d;
  if (!listening_) listening_ = store_->connection().Listen(kJobsChannel).ok();
  while (listening_ && !stopping() && absl::Now() < until) {
    absl::StatusOr<std::optional<pg::Notification>> notice =
        store_->connection().WaitForNotification(
            std::min(until - absl::Now(), kFollowTick));
    if (!notice.ok()) listening_ = false;
    if (!notice.ok() || notice->has_value()) return !stopping();
  }
  return Pause(std::max(until - absl::Now(), absl::ZeroDuration()));
}

absl::Status FleetBox::Reconnect() {
  if (store_->connection().healthy()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::unique_ptr<FleetStore> fresh,
                   FleetStore::Open(options_.connection, options_.name));
  store_ = std::move(fresh);
  listening_ = false;
  queue_db_ = std::make_unique<FleetQueue>(*store_);
  return absl::OkStatus();
}

absl::Status FleetBox::Publish() {
  const FleetPartition partition = Partition();
  while (true) {
    ASSIGN_OR_RETURN(Outbox batch, outbox_->Pending(options_.publish_batch));
    if (batch.empty()) return absl::OkStatus();
    absl::StatusOr<MergeCounts> figures =
        store_->MergeFigures(partition, batch.figures);
    RETURN_IF_ERROR(figures.status());
    RETURN_IF_ERROR(
        store_->MergeVerdicts(partition.platform, batch.verdicts).status());
    // Refused rows are logged by the store and not sent again.
    RETURN_IF_ERROR(outbox_->Published(batch));
    absl::MutexLock lock(&mu_);
    stats_.published_figures += static_cast<int64_t>(batch.figures.size());
    stats_.published_verdicts += static_cast<int64_t>(batch.verdicts.size());
  }
}

std::string FleetBox::RecentKey(const CacheEntry& entry) {
  return absl::StrCat(entry.key, "@", entry.timing.rounds, "x",
                      entry.timing.calls);
}

absl::Status FleetBox::Pull() {
  const FleetPartition partition = Partition();
  FigureCursor after{pulled_.written - kPullOverlap, ""};
  while (true) {
    ASSIGN_OR_RETURN(
        std::vector<StoredFigure> rows,
        store_->FiguresAfter(partition, after, options_.publish_batch));
    if (rows.empty()) return PullVerdicts();
    after = {rows.back().written, rows.back().entry.key};
    std::vector<CacheEntry> fresh;
    for (StoredFigure& row : rows) {
      if (recent_.emplace(RecentKey(row.entry), row.written).second) {
        fresh.push_back(std::move(row.entry));
      }
    }
    if (absl::Status merged = MergePulled(fresh, {}); !merged.ok()) {
      for (const CacheEntry& e : fresh) recent_.erase(RecentKey(e));
      return merged;
    }
    if (after.written > pulled_.written) pulled_ = after;
    absl::erase_if(recent_, [&](const auto& kv) {
      return kv.second < pulled_.written - kPullOverlap;
    });
  }
}

absl::Status FleetBox::PullVerdicts() {
  const std::string platform = Partition().platform;
  VerdictCursor after{pulled_verdicts_.written - kPullOverlap, "", ""};
  while (true) {
    ASSIGN_OR_RETURN(
        std::vector<StoredVerdict> rows,
        store_->VerdictsAfter(platform, after, options_.publish_batch));
    if (rows.empty()) return absl::OkStatus();
    const VerdictKey& last = rows.back().row.first;
    after = {rows.back().written, last.recipe_hash, last.environment};
    std::vector<VerdictRow> fresh;
    for (StoredVerdict& v : rows) {
      const std::string key =
          absl::StrCat(v.row.first.recipe_hash, "\n", v.row.first.environment);
      if (recent_verdicts_.emplace(key, v.written).second) {
        fresh.push_back(std::move(v.row));
      }
    }
    RETURN_IF_ERROR(MergePulled({}, fresh));
    if (after.written > pulled_verdicts_.written) pulled_verdicts_ = after;
    absl::erase_if(recent_verdicts_, [&](const auto& kv) {
      return kv.second < pulled_verdicts_.written - kPullOverlap;
    });
  }
}

absl::Status FleetBox::MergePulled(const std::vector<CacheEntry>& figures,
                                   const std::vector<VerdictRow>& verdicts) {
  if (figures.empty() && verdicts.empty()) return absl::OkStatus();
  ImportOrigin origin;
  origin.imported_by = "fleet";
  origin.peer = store_->display();
  origin.source = "the fleet store";
  int64_t added = 0;
  RETURN_IF_ERROR(worker_->RunOnWorker([&](Cache* cache) -> absl::Status {
    if (cache == nullptr) return absl::OkStatus();
    ASSIGN_OR_RETURN(added, cache->MergeFromFleet(figures, origin, verdicts));
    return absl::OkStatus();
  }));
  absl::MutexLock lock(&mu_);
  stats_.pulled_rows += added;
  return absl::OkStatus();
}

void FleetBox::Loop() {
  spdlog::info("fleet: {} claims shards of {} from {}", options_.name,
               options_.toolchain, store_->display());
  while (!stopping()) {
    absl::Status status = Reconnect();
    if (status.ok()) status = Publish();
    Noted(status);
    if (!status.ok()) {
      if (!IsStoreDown(status))
        spdlog::warn("fleet: {}", std::string(status.message()));
      Pause(options_.idle_poll);
      continue;
    }
    if (!ReadyToClaim()) {  // in-process checks: cheap to repeat
      Pause(kFollowTick);
      continue;
    }
    if (!ClaimAndRun()) AwaitWork(options_.idle_poll);
  }
}

bool FleetBox::ClaimAndRun() {
  absl::StatusOr<std::optional<Lease>> lease =
      queue_db_->ClaimShard(Partition(), options_.lease);
  Noted(lease.status());
  if (!lease.ok()) {
    if (!IsStoreDown(lease.status())) {
      spdlog::warn("fleet: claiming a shard: {}",
                   std::string(lease.status().message()));
    }
    return false;
  }
  if (!lease->has_value()) return false;
  {
    absl::MutexLock lock(&mu_);
    ++stats_.claimed;
  }
  // Once the shard is this box's, not before: a box timing its shape in
  // another job may have committed until the claim.
  Noted(Pull());
  RunShard(**lease);
  return true;
}

absl::StatusOr<JobPtr> FleetBox::StartJob(const Lease& lease) {
  v1::AutotuneRequest request;
  if (!request.ParseFromString(lease.task)) {
    return absl::InvalidArgumentError("the shard's task does not decode");
  }
  RETURN_IF_ERROR(ValidateAutotuneRequest(request));
  const Platform platform = worker_->Status().platform;
  RETURN_IF_ERROR(
      CheckRunsOn(request.platform(), request.power_mode(), platform));
  ASSIGN_OR_RETURN(const JobCost cost,
                   AdmitAutotune(request, platform, options_.limits,
                                 options_.shapes_at_once));
  const v1::Priority priority =
      lease.priority > 0 ? v1::PRIORITY_INTERACTIVE : v1::PRIORITY_BATCH;
  auto job = std::make_shared<Job>(
      NewJobId(), std::move(request),
      absl::StrCat("fleet job ", lease.job_id, " shard ", lease.shard),
      priority, /*detach=*/true);
  job->set_cost(cost.memory_bytes, cost.device_seconds);
  Job::Bounds bounds;
  bounds.device_seconds = options_.limits.job_device_seconds;
  job->set_bounds(bounds);
  RETURN_IF_ERROR(queue_->Push(job).status());
  spdlog::info("fleet: job {} shard {} ({}) attempt {} runs as {}",
               lease.job_id, lease.shard, LogSafe(lease.shape_key),
               lease.attempt, job->id());
  return job;
}

void FleetBox::RunShard(const Lease& lease) {
  absl::StatusOr<JobPtr> job = StartJob(lease);
  if (!job.ok()) {
    absl::StatusOr<bool> failed =
        queue_db_->FailShard(lease, job.status().ToString());
    Noted(failed.status());
    absl::MutexLock lock(&mu_);
    ++stats_.failed;
    return;
  }
  if (Follow(*job, lease)) Finish(*job, lease);
}

bool FleetBox::Follow(const JobPtr& job, const Lease& lease) {
  absl::Time renew_at = absl::Now() + options_.lease / 3;
  while (!IsTerminal(job->state())) {
    if (!Pause(kFollowTick)) {
      job->Cancel("irontuned is shutting down", absl::StatusCode::kUnavailable);
      if (Reconnect().ok()) Noted(queue_db_->ReleaseShard(lease));
      return false;
    }
    if (absl::Now() < renew_at) continue;
    renew_at = absl::Now() + options_.lease / 3;
    if (!worker_->heartbeat().Alive(options_.stall_limit)) {
      GiveUpHung(job, lease);
      return false;
    }
    absl::Status renewed = Reconnect();
    if (renewed.ok()) renewed = queue_db_->RenewLease(lease, options_.lease);
    Noted(renewed);
    if (renewed.code() == absl::StatusCode::kFailedPrecondition) {
      job->Cancel("its fleet lease was lost");
      absl::MutexLock lock(&mu_);
      ++stats_.lost;
      return false;
    }
    if (renewed.ok()) Noted(Publish());
  }
  return true;
}

void FleetBox::GiveUpHung(const JobPtr& job, const Lease& lease) {
  const std::string why = absl::StrCat(
      "the NPU hung: the device worker has not come back for ",
      absl::FormatDuration(worker_->heartbeat().SinceBeat()),
      " (--stall-limit ", absl::FormatDuration(options_.stall_limit), ")");
  spdlog::error("fleet: shard {}/{} given up: {}", lease.job_id, lease.shard,
                why);
  job->Cancel(why);
  absl::Status reached = Reconnect();
  if (reached.ok()) reached = queue_db_->FailShard(lease, why).status();
  Noted(reached);
  absl::MutexLock lock(&mu_);
  ++stats_.failed;
}

void FleetBox::Finish(const JobPtr& job, const Lease& lease) {
  const v1::JobResult result = job->Result();
  if (job->state() != v1::JOB_STATE_SUCCEEDED) {
    absl::StatusOr<bool> failed =
        queue_db_->FailShard(lease, job->status().ToString());
    Noted(failed.status());
    absl::MutexLock lock(&mu_);
    ++stats_.failed;
    return;
  }
  ShardOutcome outcome;
  outcome.result = result.SerializeAsString();
  v1::AutotuneRequest task;
  if (task.ParseFromString(lease.task)) {
    outcome.decision = ShardDecision(task, result.autotune());
  }
  // While the store is down the result waits here, the figures in the
  // outbox; the lease is still this box's unless another box took it.
  absl::Status committed;
  do {
    absl::Status connected = Reconnect();
    // What is left in the outbox goes in the shard's own transaction.
    absl::StatusOr<Outbox> rest = outbox_->Pending(options_.publish_batch);
    outcome.figures = rest.ok() ? rest->figures : std::vector<CacheEntry>();
    outcome.verdicts = rest.ok() ? rest->verdicts : std::vector<VerdictRow>();
    committed = connected.ok()
                    ? queue_db_->CompleteShard(lease, Partition(), outcome)
                    : connected;
    Noted(committed);
    if (committed.ok() && rest.ok()) outbox_->Published(*rest).IgnoreError();
  } while (IsStoreDown(committed) && Pause(options_.idle_poll));
  absl::MutexLock lock(&mu_);
  if (committed.ok()) {
    ++stats_.completed;
  } else if (committed.code() == absl::StatusCode::kFailedPrecondition) {
    ++stats_.lost;
  } else {
    spdlog::warn("fleet: committing job {} shard {}: {}", lease.job_id,
                 lease.shard, std::string(committed.message()));
  }
}

}  // namespace irontune
