#include "daemon/edge/front_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/base/log_safe.h"
#include "daemon/scheduler/jobs.h"
#include "daemon/scheduler/requests.h"
#include "spdlog/spdlog.h"

namespace irontune {

FrontService::FrontService(FrontDeps deps)
    : deps_(std::move(deps)),
      started_(absl::Now()),
      door_(deps_.auth, deps_.refusals, deps_.limits, deps_.streams) {}

absl::StatusOr<FrontService::OwnedJob> FrontService::AdmitJob(
    grpc::ServerContext* context, Rpc rpc,
    const google::protobuf::Message& request, const std::string& job_id) {
  OwnedJob found;
  ASSIGN_OR_RETURN(found.caller, door_.Admit(context, rpc, &request));
  const std::optional<int64_t> id = ParseFleetJobName(job_id);
  if (!id.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("no job ", LogSafe(job_id),
                     " (a fleet's jobs are named f- and a number)"));
  }
  absl::StatusOr<JobView> view = deps_.front->Get(*id);
  if (absl::IsNotFound(view.status())) {
    return absl::NotFoundError(absl::StrCat("no job ", job_id));
  }
  RETURN_IF_ERROR(view.status());
  found.view = *std::move(view);
  RETURN_IF_ERROR(
      door_.CheckOwner(found.caller, rpc, job_id, found.view.owner));
  return found;
}

grpc::Status FrontService::Stream(
    grpc::ServerContext* context, int64_t id,
    grpc::ServerWriter<v1::AutotuneEvent>* writer) {
  const absl::Status s = deps_.front->Follow(
      id, [writer](const v1::AutotuneEvent& e) { return writer->Write(e); },
      [context] { return context->IsCancelled(); });
  if (absl::IsCancelled(s) && context->IsCancelled()) {
    spdlog::info("job {}: its client went away; the job goes on",
                 FleetJobName(id));
  }
  return ToGrpcStatus(s);
}

grpc::Status FrontService::Autotune(
    grpc::ServerContext* context, const v1::AutotuneRequest* request,
    grpc::ServerWriter<v1::AutotuneEvent>* writer) {
  absl::StatusOr<Caller> caller = door_.Admit(context, Rpc::kAutotune);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (absl::Status s = ValidateAutotuneRequest(*request); !s.ok()) {
    return ToGrpcStatus(s);
  }
  absl::StatusOr<FleetTarget> target = deps_.front->TargetOf(*request);
  if (!target.ok()) return ToGrpcStatus(target.status());
  const std::string owner = door_.OwnerOf(*context, *caller, request->client());
  absl::StatusOr<StreamQuota::Slot> slot =
      door_.BeginStream(Rpc::kAutotune, *caller, StreamName(*caller, owner));
  if (!slot.ok()) return ToGrpcStatus(slot.status());
  absl::StatusOr<FrontSubmit> job =
      deps_.front->Submit(*request, owner, *target);
  if (!job.ok()) return ToGrpcStatus(job.status());
  spdlog::info("job {} {} for {} on {} at {}", FleetJobName(job->id),
               job->stored     ? "answered from the store"
               : job->attached ? "joined"
                               : "queued",
               LogSafe(owner), target->platform,
               std::string(PowerModeName(target->power_mode)));
  return Stream(context, job->id, writer);
}

grpc::Status FrontService::Watch(
    grpc::ServerContext* context, const v1::WatchRequest* request,
    grpc::ServerWriter<v1::AutotuneEvent>* writer) {
  absl::StatusOr<OwnedJob> found =
      AdmitJob(context, Rpc::kWatch, *request, request->job_id());
  if (!found.ok()) return ToGrpcStatus(found.status());
  absl::StatusOr<StreamQuota::Slot> slot = door_.BeginStream(
      Rpc::kWatch, found->caller, StreamName(found->caller, found->view.owner));
  if (!slot.ok()) return ToGrpcStatus(slot.status());
  return Stream(context, found->view.id, writer);
}

grpc::Status FrontService::GetResult(grpc::ServerContext* context,
                                     const v1::GetResultRequest* request,
                                     v1::JobResult* response) {
  absl::StatusOr<OwnedJob> found =
      AdmitJob(context, Rpc::kGetResult, *request, request->job_id());
  if (!found.ok()) return ToGrpcStatus(found.status());
  absl::StatusOr<v1::JobResult> result = deps_.front->Result(found->view.id);
  if (!result.ok()) return ToGrpcStatus(result.status());
  if (!IsTerminal(result->summary().state())) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("job ", request->job_id(), " has not ended; Watch it"));
  }
  *response = *std::move(result);
  return grpc::Status::OK;
}

grpc::Status FrontService::Cancel(grpc::ServerContext* context,
                                  const v1::CancelRequest* request,
                                  v1::CancelResponse* response) {
  absl::StatusOr<OwnedJob> found =
      AdmitJob(context, Rpc::kCancel, *request, request->job_id());
  if (!found.ok()) return ToGrpcStatus(found.status());
  absl::StatusOr<bool> cancelled = deps_.front->Cancel(found->view.id);
  if (!cancelled.ok()) return ToGrpcStatus(cancelled.status());
  if (*cancelled) {
    spdlog::info("job {} cancelled by {}", request->job_id(),
                 LogSafe(found->caller.ToString()));
  }
  absl::StatusOr<JobView> now = deps_.front->Get(found->view.id);
  if (!now.ok()) return ToGrpcStatus(now.status());
  response->set_state(WireStateOf(now->state));
  return grpc::Status::OK;
}

grpc::Status FrontService::ListJobs(grpc::ServerContext* context,
                                    const v1::ListJobsRequest* request,
                                    v1::ListJobsResponse* response) {
  if (grpc::Status s = door_.AdmitOnly(context, Rpc::kListJobs, request);
      !s.ok()) {
    return s;
  }
  const uint32_t limit = ListJobsLimit(request->limit());
  absl::StatusOr<std::vector<v1::JobSummary>> jobs =
      deps_.front->List("", static_cast<int>(limit));
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (v1::JobSummary& s : *jobs) *response->add_jobs() = std::move(s);
  return grpc::Status::OK;
}

grpc::Status FrontService::GetStatus(grpc::ServerContext* context,
                                     const v1::GetStatusRequest* request,
                                     v1::StatusResponse* response) {
  if (grpc::Status s = door_.AdmitOnly(context, Rpc::kGetStatus, request);
      !s.ok()) {
    return s;
  }
  response->set_version(deps_.version);
  response->set_device(absl::StrCat("front of the fleet at ", deps_.store));
  response->set_device_state("front");
  response->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
  absl::StatusOr<std::vector<v1::JobSummary>> jobs =
      deps_.front->List("", static_cast<int>(kMaxListJobs));
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (v1::JobSummary& s : *jobs) {
    if (!IsTerminal(s.state())) *response->add_queue() = std::move(s);
  }
  return grpc::Status::OK;
}

grpc::Status FrontService::BoxOnly(grpc::ServerContext* context, Rpc rpc,
                                   const google::protobuf::Message* request) {
  if (grpc::Status s = door_.AdmitOnly(context, rpc, request); !s.ok()) {
    return s;
  }
  return grpc::Status(
      grpc::StatusCode::UNIMPLEMENTED,
      absl::StrCat(RpcName(rpc),
                   " is served by a fleet's boxes, not its fronts: a front "
                   "has no NPU and no cache (the fleet's figures are in its "
                   "store); call a box (irontuned --device) directly"));
}

grpc::Status FrontService::Measure(grpc::ServerContext* context,
                                   const v1::MeasureRequest*,
                                   grpc::ServerWriter<v1::MeasureEvent>*) {
  return BoxOnly(context, Rpc::kMeasure, nullptr);
}

grpc::Status FrontService::ExportCache(grpc::ServerContext* context,
                                       const v1::ExportCacheRequest* request,
                                       grpc::ServerWriter<v1::CacheLine>*) {
  return BoxOnly(context, Rpc::kExportCache, request);
}

grpc::Status FrontService::ImportCache(grpc::ServerContext* context,
                                       grpc::ServerReader<v1::CacheLine>*,
                                       v1::ImportCacheResponse*) {
  return BoxOnly(context, Rpc::kImportCache, nullptr);
}

grpc::Status FrontService::ListImports(grpc::ServerContext* context,
                                       const v1::ListImportsRequest* request,
                                       v1::ListImportsResponse*) {
  return BoxOnly(context, Rpc::kListImports, request);
}

grpc::Status FrontService::DropImport(grpc::ServerContext* context,
                                      const v1::DropImportRequest* request,
                                      v1::DropImportResponse*) {
  return BoxOnly(context, Rpc::kDropImport, request);
}

grpc::Status FrontService::ClearCache(grpc::ServerContext* context,
                                      const v1::ClearCacheRequest* request,
                                      v1::ClearCacheResponse*) {
  return BoxOnly(context, Rpc::kClearCache, request);
}

}  // namespace irontune
