#include "daemon/edge/service.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/base/log_safe.h"
#include "daemon/edge/event_merge.h"
#include "daemon/edge/message_size.h"
#include "daemon/edge/peer_properties.h"
#include "daemon/scheduler/replies.h"
#include "daemon/scheduler/requests.h"
#include "daemon/store/cache.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

// Ended jobs kept in memory beside the store.
constexpr size_t kKeptJobs = 1000;
// How often a stream looks whether its client is still there.
constexpr absl::Duration kStreamPoll = absl::Milliseconds(100);
// How long a stream lets events gather after one arrives before it writes
// them, merged (event_merge.h): a cached job's few hundred events go out in
// a few bursts of fewer messages rather than one write each beside the
// job. Far below what a person watching progress notices.
constexpr absl::Duration kStreamLinger = absl::Milliseconds(2);
// Why a cache RPC fails on a daemon started without a cache.
constexpr absl::string_view kNoCache = "irontuned runs without a cache";
// The most an ImportCache stream may send.
constexpr size_t kMaxImportBytes = size_t{1} << 30;

// A Measure stream carries the queue, start and log events.
bool ToMeasureEvent(const v1::AutotuneEvent& in, v1::MeasureEvent* out) {
  out->set_job_id(in.job_id());
  switch (in.event_case()) {
    case v1::AutotuneEvent::kQueued:
      *out->mutable_queued() = in.queued();
      return true;
    case v1::AutotuneEvent::kStarted:
      *out->mutable_started() = in.started();
      return true;
    case v1::AutotuneEvent::kLog:
      *out->mutable_log() = in.log();
      return true;
    default:
      return false;
  }
}

// gRPC's synchronous handlers are given their request as a const pointer,
// but it is the call's own object, not const (placement-new'd in the call's
// arena, destroyed as the handler returns): its contents are swapped out,
// so the handler does not hold a second copy while the job waits and runs.
template <typename Request>
Request TakeRequest(const Request* request) {
  Request out;
  out.Swap(const_cast<Request*>(request));
  return out;
}

}  // namespace

TunerService::TunerService(ServiceDeps deps)
    : deps_(std::move(deps)),
      started_(absl::Now()),
      door_(deps_.auth, deps_.refusals, deps_.limits, deps_.streams),
      budget_(QueueBudget::Make(deps_.limits.queue_memory_bytes,
                                deps_.limits.client_queue_bytes)) {}

absl::Status TunerService::Submit(const JobPtr& job) {
  // Remember it first, so a Cancel racing the Queued event finds it.
  {
    absl::MutexLock lock(&mu_);
    jobs_[job->id()] = job;
    order_.push_back(job->id());
    TrimHistory();
  }
  if (deps_.cached != nullptr && deps_.cached->Offer(job)) {
    spdlog::info(
        "job {} queued: client={} kind={} to answer from the cache, else "
        "the device worker; request={} (queued requests {})",
        job->id(), LogSafe(job->client()),
        job->kind() == v1::JOB_KIND_AUTOTUNE ? "autotune" : "measure",
        FormatBytes(job->request_bytes()), FormatBytes(budget_->used()));
    return absl::OkStatus();
  }
  absl::StatusOr<size_t> position = deps_.queue->Push(job);
  if (!position.ok()) {
    absl::MutexLock lock(&mu_);
    jobs_.erase(job->id());
    return position.status();
  }
  spdlog::info(
      "job {} queued: client={} kind={} position={} request={} (queued "
      "requests {}) estimate: memory={} device_time={:.3f}s",
      job->id(), LogSafe(job->client()),
      job->kind() == v1::JOB_KIND_AUTOTUNE ? "autotune" : "measure", *position,
      FormatBytes(job->request_bytes()), FormatBytes(budget_->used()),
      FormatBytes(job->memory_bytes()), job->estimated_device_seconds());
  return absl::OkStatus();
}

void TunerService::TrimHistory() {
  size_t bytes = 0;
  for (const auto& [id, job] : jobs_) bytes += job->RetainedBytes();
  while (!order_.empty() &&
         (order_.size() > kKeptJobs || bytes > deps_.history_bytes)) {
    auto it = jobs_.find(order_.front());
    if (it != jobs_.end() && !IsTerminal(it->second->state())) break;
    if (it != jobs_.end()) {
      bytes -= std::min(bytes, it->second->RetainedBytes());
      jobs_.erase(it);
    }
    order_.pop_front();
  }
}

absl::StatusOr<std::unique_ptr<CacheReader>> TunerService::ReadCache() const {
  if (deps_.cache_path.empty()) {
    return absl::FailedPreconditionError(kNoCache);
  }
  return CacheReader::Open(deps_.cache_path, deps_.cache_platform,
                           deps_.cache_power_mode);
}

absl::Status TunerService::WriteCache(
    const std::function<absl::Status(Cache&)>& task) {
  return deps_.worker->RunOnWorker([&task](Cache* cache) {
    if (cache == nullptr) return absl::FailedPreconditionError(kNoCache);
    return task(*cache);
  });
}

template <typename WriteFn>
absl::Status TunerService::Follow(grpc::ServerContext* context,
                                  const JobPtr& job, bool cancel_on_disconnect,
                                  WriteFn write) {
  size_t next = 0;
  while (true) {
    bool done = false;
    std::vector<v1::AutotuneEvent> events =
        job->EventsFrom(next, kStreamPoll, &done, kStreamLinger);
    next += events.size();
    events = MergeEvents(std::move(events));
    bool gone = context->IsCancelled();
    for (const v1::AutotuneEvent& e : events) {
      if (gone) break;
      if (!write(e)) gone = true;
    }
    if (gone) {
      const bool deadline =
          context->deadline() <= std::chrono::system_clock::now();
      if (cancel_on_disconnect && !done) {
        CancelJob(job, deadline ? "the client's deadline passed"
                                : "the client went away");
      }
      return deadline ? absl::DeadlineExceededError("deadline passed")
                      : absl::CancelledError("the client went away");
    }
    if (done) return absl::OkStatus();
  }
}

void TunerService::CancelJob(const JobPtr& job, const std::string& reason) {
  job->Cancel(reason);
  if (deps_.queue->Remove(job->id())) {
    deps_.worker->FinishUnrun(job, absl::CancelledError(reason));
  }
}

absl::StatusOr<std::optional<v1::JobResult>> TunerService::Stored(
    const std::string& id) {
  if (deps_.store == nullptr) return std::nullopt;
  return deps_.store->Load(id);
}

JobPtr TunerService::Find(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second;
}

template <typename WriteFn>
absl::StatusOr<JobPtr> TunerService::RunJob(
    grpc::ServerContext* context, Rpc rpc, const Caller& caller,
    Job::Request request, const JobCost& cost, const std::string& owner,
    v1::Priority priority, bool detach, WriteFn write) {
  ASSIGN_OR_RETURN(const StreamQuota::Slot slot,
                   door_.BeginStream(rpc, caller, StreamName(caller, owner)));
  auto job = std::make_shared<Job>(NewJobId(), std::move(request), owner,
                                   priority, detach);
  absl::StatusOr<QueueBudget::Charge> charge =
      budget_->Reserve(owner, job->request_bytes());
  if (!charge.ok()) return door_.Refused(rpc, caller, charge.status());
  job->set_charge(*std::move(charge));
  job->set_cost(cost.memory_bytes, cost.device_seconds);
  Job::Bounds bounds;
  bounds.device_seconds = deps_.limits.job_device_seconds;
  if (!detach &&
      context->deadline() != std::chrono::system_clock::time_point::max()) {
    bounds.deadline = absl::FromChrono(context->deadline());
  }
  job->set_bounds(bounds);
  RETURN_IF_ERROR(Submit(job));
  RETURN_IF_ERROR(Follow(context, job, !detach, write));
  return job;
}

absl::StatusOr<JobCost> TunerService::CostOf(
    const v1::AutotuneRequest& request) const {
  RETURN_IF_ERROR(ValidateAutotuneRequest(request));
  const Platform platform = deps_.worker->Status().platform;
  RETURN_IF_ERROR(
      CheckRunsOn(request.platform(), request.power_mode(), platform));
  return AdmitAutotune(request, platform, deps_.limits, deps_.shapes_at_once);
}

absl::StatusOr<JobCost> TunerService::CostOf(
    const v1::MeasureRequest& request) const {
  RETURN_IF_ERROR(ValidateMeasureRequest(request));
  const Platform platform = deps_.worker->Status().platform;
  RETURN_IF_ERROR(
      CheckRunsOn(request.platform(), request.power_mode(), platform));
  return AdmitMeasure(request, platform, deps_.limits);
}

template <typename Request, typename WriteFn>
absl::StatusOr<JobPtr> TunerService::AdmitAndRun(grpc::ServerContext* context,
                                                 Rpc rpc,
                                                 const Request* request,
                                                 bool detach, WriteFn write) {
  ASSIGN_OR_RETURN(const Caller caller, door_.Admit(context, rpc));
  ASSIGN_OR_RETURN(const JobCost cost, CostOf(*request));
  const std::string owner = door_.OwnerOf(*context, caller, request->client());
  const v1::Priority priority = request->priority();
  return RunJob(context, rpc, caller, TakeRequest(request), cost, owner,
                priority, detach, write);
}

grpc::Status TunerService::Autotune(
    grpc::ServerContext* context, const v1::AutotuneRequest* request,
    grpc::ServerWriter<v1::AutotuneEvent>* writer) {
  absl::StatusOr<JobPtr> job = AdmitAndRun(
      context, Rpc::kAutotune, request, request->detach(),
      [writer](const v1::AutotuneEvent& e) { return writer->Write(e); });
  if (!job.ok()) return ToGrpcStatus(job.status());
  return ToGrpcStatus((*job)->status());
}

grpc::Status TunerService::Measure(
    grpc::ServerContext* context, const v1::MeasureRequest* request,
    grpc::ServerWriter<v1::MeasureEvent>* writer) {
  absl::StatusOr<JobPtr> job =
      AdmitAndRun(context, Rpc::kMeasure, request, /*detach=*/false,
                  [writer](const v1::AutotuneEvent& e) {
                    v1::MeasureEvent out;
                    return !ToMeasureEvent(e, &out) || writer->Write(out);
                  });
  if (!job.ok()) return ToGrpcStatus(job.status());
  if ((*job)->state() != v1::JOB_STATE_SUCCEEDED) {
    return ToGrpcStatus((*job)->status());
  }
  v1::MeasureEvent result;
  result.set_job_id((*job)->id());
  *result.mutable_result() = (*job)->Result().measure();
  writer->Write(result);
  return grpc::Status::OK;
}

grpc::Status TunerService::GetStatus(grpc::ServerContext* context,
                                     const v1::GetStatusRequest* request,
                                     v1::StatusResponse* response) {
  if (grpc::Status s = door_.AdmitOnly(context, Rpc::kGetStatus, request);
      !s.ok())
    return s;
  const WorkerStatus w = deps_.worker->Status();
  response->set_version(deps_.version);
  response->set_device(deps_.device_spec);
  SetPlatform(w.platform, response);
  response->set_device_state(w.running ? "running" : "idle");
  for (const JobPtr& job : deps_.queue->Snapshot()) {
    *response->add_queue() = job->Summary();
  }
  // Then those the cached answers hold (answered in turn, beside the
  // device).
  if (deps_.cached != nullptr) {
    for (const JobPtr& job : deps_.cached->Snapshot()) {
      *response->add_queue() = job->Summary();
    }
  }
  if (w.running) *response->mutable_running() = w.running->Summary();
  if (w.cache) {
    CacheStats stats = *w.cache;
    if (deps_.cached != nullptr) {
      const auto [hits, misses] = deps_.cached->lookups();
      stats.hits += hits;
      stats.misses += misses;
    }
    *response->mutable_cache() = CacheSummaryOf(stats);
  }
  if (w.builds) *response->mutable_builds() = *w.builds;
  response->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
  return grpc::Status::OK;
}

grpc::Status TunerService::ListJobs(grpc::ServerContext* context,
                                    const v1::ListJobsRequest* request,
                                    v1::ListJobsResponse* response) {
  if (grpc::Status s = door_.AdmitOnly(context, Rpc::kListJobs, request);
      !s.ok())
    return s;
  const uint32_t limit = ListJobsLimit(request->limit());
  std::vector<v1::JobSummary> all;
  std::set<std::string> seen;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, job] : jobs_) {
      all.push_back(job->Summary());
      seen.insert(id);
    }
  }
  if (deps_.store) {
    absl::StatusOr<std::vector<v1::JobSummary>> stored =
        deps_.store->List(static_cast<int>(limit));
    if (!stored.ok()) return ToGrpcStatus(stored.status());
    for (v1::JobSummary& s : *stored) {
      if (!seen.count(s.job_id())) all.push_back(std::move(s));
    }
  }
  std::sort(all.begin(), all.end(),
            [](const v1::JobSummary& a, const v1::JobSummary& b) {
              return a.submitted_unix_ms() > b.submitted_unix_ms();
            });
  if (all.size() > limit) all.resize(limit);
  for (v1::JobSummary& s : all) *response->add_jobs() = std::move(s);
  return grpc::Status::OK;
}

absl::StatusOr<TunerService::OwnedJob> TunerService::AdmitJob(
    grpc::ServerContext* context, Rpc rpc,
    const google::protobuf::Message& request, const std::string& job_id) {
  OwnedJob found;
  ASSIGN_OR_RETURN(found.caller, door_.Admit(context, rpc, &request));
  RETURN_IF_ERROR(ValidateJobId(job_id));
  std::string owner;
  if ((found.live = Find(job_id)) != nullptr) {
    owner = found.live->client();
  } else {
    ASSIGN_OR_RETURN(found.stored, Stored(job_id));
    if (!found.stored.has_value()) {
      return absl::NotFoundError(absl::StrCat("no job ", job_id));
    }
    owner = found.stored->summary().client();
  }
  RETURN_IF_ERROR(door_.CheckOwner(found.caller, rpc, job_id, owner));
  return found;
}

grpc::Status TunerService::Cancel(grpc::ServerContext* context,
                                  const v1::CancelRequest* request,
                                  v1::CancelResponse* response) {
  absl::StatusOr<OwnedJob> found =
      AdmitJob(context, Rpc::kCancel, *request, request->job_id());
  if (!found.ok()) return ToGrpcStatus(found.status());
  if (found->live == nullptr) {  // ended in an earlier run
    response->set_state(found->stored->summary().state());
    return grpc::Status::OK;
  }
  spdlog::info("job {} cancelled by {}", found->live->id(),
               LogSafe(found->caller.ToString()));
  CancelJob(found->live, "cancelled by request");
  response->set_state(found->live->state());
  return grpc::Status::OK;
}

grpc::Status TunerService::Watch(
    grpc::ServerContext* context, const v1::WatchRequest* request,
    grpc::ServerWriter<v1::AutotuneEvent>* writer) {
  absl::StatusOr<OwnedJob> found =
      AdmitJob(context, Rpc::kWatch, *request, request->job_id());
  if (!found.ok()) return ToGrpcStatus(found.status());
  if (const JobPtr& job = found->live) {
    const absl::StatusOr<StreamQuota::Slot> slot = door_.BeginStream(
        Rpc::kWatch, found->caller, StreamName(found->caller, job->client()));
    if (!slot.ok()) return ToGrpcStatus(slot.status());
    absl::Status followed = Follow(
        context, job, /*cancel_on_disconnect=*/false,
        [writer](const v1::AutotuneEvent& e) { return writer->Write(e); });
    if (!followed.ok()) return ToGrpcStatus(followed);
    return ToGrpcStatus(job->status());
  }
  // A job of an earlier run: only its result was kept.
  const v1::JobResult& r = *found->stored;
  if (r.has_autotune()) {
    v1::AutotuneEvent e;
    e.set_job_id(request->job_id());
    *e.mutable_result() = r.autotune();
    writer->Write(e);
  }
  if (!r.summary().error().empty()) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, r.summary().error());
  }
  return grpc::Status::OK;
}

grpc::Status TunerService::GetResult(grpc::ServerContext* context,
                                     const v1::GetResultRequest* request,
                                     v1::JobResult* response) {
  absl::StatusOr<OwnedJob> found =
      AdmitJob(context, Rpc::kGetResult, *request, request->job_id());
  if (!found.ok()) return ToGrpcStatus(found.status());
  if (found->live == nullptr) {
    *response = std::move(*found->stored);
    return grpc::Status::OK;
  }
  if (!IsTerminal(found->live->state())) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("job ", found->live->id(), " has not ended; Watch it"));
  }
  *response = found->live->Result();
  return grpc::Status::OK;
}

grpc::Status TunerService::ExportCache(
    grpc::ServerContext* context, const v1::ExportCacheRequest* request,
    grpc::ServerWriter<v1::CacheLine>* writer) {
  if (grpc::Status s = door_.AdmitOnly(context, Rpc::kExportCache, request);
      !s.ok())
    return s;
  absl::StatusOr<std::unique_ptr<CacheReader>> reader = ReadCache();
  if (!reader.ok()) return ToGrpcStatus(reader.status());
  std::ostringstream out;
  if (absl::Status s = (*reader)->Export(out); !s.ok()) return ToGrpcStatus(s);
  std::istringstream in(out.str());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    }
    v1::CacheLine cl;
    cl.set_line(std::move(line));
    if (!writer->Write(cl)) break;
  }
  return grpc::Status::OK;
}

grpc::Status TunerService::ImportCache(
    grpc::ServerContext* context, grpc::ServerReader<v1::CacheLine>* reader,
    v1::ImportCacheResponse* response) {
  absl::StatusOr<Caller> caller = door_.Admit(context, Rpc::kImportCache);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  std::string text;
  v1::CacheLine line;
  ImportOrigin origin{door_.OwnerOf(*context, *caller, ""), caller->peer, ""};
  for (bool first = true; reader->Read(&line); first = false) {
    if (first) origin.source = line.source();
    if (text.size() + line.line().size() + 1 > kMaxImportBytes) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "the import exceeds 1 GiB");
    }
    absl::StrAppend(&text, line.line(), "\n");
  }
  int64_t imported = 0;
  int64_t import_id = 0;
  std::vector<std::string> skipped;
  // The import runs between jobs (or when a long job yields).
  absl::Status s = WriteCache([&](Cache& cache) -> absl::Status {
    std::istringstream in(text);
    absl::StatusOr<ImportCounts> counts = cache.Import(in, origin);
    if (!counts.ok()) return counts.status();
    imported = counts->imported;
    import_id = counts->import_id;
    skipped = std::move(counts->skipped);
    return absl::OkStatus();
  });
  if (!s.ok()) return ToGrpcStatus(s);
  response->set_imported(static_cast<uint64_t>(imported));
  response->set_import_id(static_cast<uint64_t>(import_id));
  for (std::string& why : skipped) response->add_skipped(std::move(why));
  spdlog::info("cache: import {} of {} lines from \"{}\" by {}", import_id,
               imported, LogSafe(origin.source), LogSafe(caller->ToString()));
  return grpc::Status::OK;
}

grpc::Status TunerService::ListImports(grpc::ServerContext* context,
                                       const v1::ListImportsRequest* request,
                                       v1::ListImportsResponse* response) {
  if (grpc::Status s = door_.AdmitOnly(context, Rpc::kListImports, request);
      !s.ok())
    return s;
  absl::StatusOr<std::unique_ptr<CacheReader>> reader = ReadCache();
  if (!reader.ok()) return ToGrpcStatus(reader.status());
  absl::StatusOr<std::vector<v1::ImportRecord>> records =
      (*reader)->ListImports();
  if (!records.ok()) return ToGrpcStatus(records.status());
  for (v1::ImportRecord& r : *records) *response->add_imports() = std::move(r);
  return grpc::Status::OK;
}

grpc::Status TunerService::DropImport(grpc::ServerContext* context,
                                      const v1::DropImportRequest* request,
                                      v1::DropImportResponse* response) {
  absl::StatusOr<Caller> caller =
      door_.Admit(context, Rpc::kDropImport, request);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (request->id() == 0 || request->id() > static_cast<uint64_t>(INT64_MAX)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("id: no import ", request->id()));
  }
  int64_t rows = 0;
  absl::Status s = WriteCache([&](Cache& cache) -> absl::Status {
    absl::StatusOr<int64_t> dropped =
        cache.DropImport(static_cast<int64_t>(request->id()));
    if (!dropped.ok()) return dropped.status();
    rows = *dropped;
    return absl::OkStatus();
  });
  if (!s.ok()) return ToGrpcStatus(s);
  spdlog::info("cache: import {} dropped by {} ({} rows)", request->id(),
               LogSafe(caller->ToString()), rows);
  response->set_rows(static_cast<uint64_t>(rows));
  return grpc::Status::OK;
}

grpc::Status TunerService::ClearCache(grpc::ServerContext* context,
                                      const v1::ClearCacheRequest* request,
                                      v1::ClearCacheResponse* response) {
  absl::StatusOr<Caller> caller =
      door_.Admit(context, Rpc::kClearCache, request);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  ClearCounts cleared;
  // Between jobs, so no job sees half a cache.
  absl::Status s = WriteCache([&](Cache& cache) -> absl::Status {
    ASSIGN_OR_RETURN(cleared, cache.Clear());
    return absl::OkStatus();
  });
  if (!s.ok()) return ToGrpcStatus(s);
  spdlog::warn(
      "cache: cleared by {}: {} measurements, {} IRON figures, {} verdicts",
      LogSafe(caller->ToString()), cleared.measurements, cleared.iron_costs,
      cleared.verdicts);
  *response = ClearCacheResponseOf(cleared);
  return grpc::Status::OK;
}

}  // namespace irontune
