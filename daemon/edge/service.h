// TunerService: the irontune.v1.Tuner gRPC service. Handlers validate,
// queue jobs and stream their events; they never touch the device (the
// DeviceWorker does). absl::Status becomes grpc::Status only at the
// handlers' return (ToGrpcStatus, door.h).
//
// A client that disconnects, or whose deadline passes, while its Autotune or
// Measure streams cancels the job unless it asked to detach. Watch never
// cancels. Once BeginShutdown is called every new request is refused with
// UNAVAILABLE.
//
// Every RPC first passes the Door (door.h): it authenticates its caller
// and checks the role it needs (daemon/edge/auth.h): UNAUTHENTICATED for a
// missing or unknown token, PERMISSION_DENIED for a role that does not suffice,
// each logged with the peer (rate-limited, refusal_log.h). On most listeners
// the call gate (call_gate.h) has already refused a bad token before the
// message was read; this check names the caller and is the only one on
// plaintext off loopback. A small RPC's request past --max-small-message-bytes
// is RESOURCE_EXHAUSTED. With tokens, a job belongs to its token's name,
// whatever the request's `client` field says.
//
// Memory: an Autotune's or Measure's request is moved out of gRPC's
// message once admitted (the handler holds no second copy while its job
// waits), its unknown fields discarded (Job), and its received size
// charged to the queue budget (queue_budget.h) until the job drops it;
// past --queue-memory or --client-queue-bytes it is RESOURCE_EXHAUSTED
// before it is queued. Streams keep to StreamQuota (stream_quota.h).
//
// Included only by service.cc and daemon.cc: gRPC headers are heavy.
// Threads: gRPC calls the handlers on its own threads, concurrently.
#ifndef IRONTUNE_DAEMON_EDGE_SERVICE_H_
#define IRONTUNE_DAEMON_EDGE_SERVICE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/edge/auth.h"
#include "daemon/edge/door.h"
#include "daemon/edge/refusal_log.h"
#include "daemon/edge/stream_quota.h"
#include "daemon/npu/device.h"
#include "daemon/scheduler/admission.h"
#include "daemon/scheduler/cached_answers.h"
#include "daemon/scheduler/job_queue.h"
#include "daemon/scheduler/jobs.h"
#include "daemon/scheduler/queue_budget.h"
#include "daemon/scheduler/worker.h"
#include "daemon/store/cache.h"
#include "grpcpp/grpcpp.h"
#include "irontune/v1/tuner.grpc.pb.h"

namespace irontune {

struct ServiceDeps {
  JobQueue* queue = nullptr;       // not owned; REQUIRES: non-null
  DeviceWorker* worker = nullptr;  // not owned; REQUIRES: non-null
  // Not owned; null: every job is queued for the worker. Offered each job
  // before it is queued (cached_answers.h).
  CachedAnswers* cached = nullptr;
  JobStore* store = nullptr;  // not owned; may be null
  std::string device_spec;    // as --device gave it
  std::string version;
  // The cache file and the partition it was opened at, for ExportCache's
  // read connection; empty path: no cache.
  std::string cache_path;
  std::string cache_platform;
  PowerMode cache_power_mode = PowerMode::kDefault;
  // What a request must keep to (admission.h), the streams' limits
  // (StreamLimitsOf(limits), resolved at start), and the bytes the ended
  // jobs kept in memory may hold (the store keeps them all).
  AdmissionLimits limits;
  StreamLimits streams;
  // Shapes an Autotune searches at once (--shapes-at-once), for its
  // memory estimate (AdmitAutotune).
  int shapes_at_once = 1;
  size_t history_bytes = size_t{64} << 20;
  // Who may call what. REQUIRES: non-null; without one every call is
  // refused (INTERNAL), never served as admin.
  std::shared_ptr<const Authenticator> auth;
  // Refusals' log lines, rate-limited; null: one line each.
  std::shared_ptr<RefusalLog> refusals;
};

class TunerService final : public v1::Tuner::Service {
 public:
  explicit TunerService(ServiceDeps deps);

  // Refuse every new request from now on (UNAVAILABLE).
  void BeginShutdown() { door_.BeginShutdown(); }

  grpc::Status Autotune(grpc::ServerContext* context,
                        const v1::AutotuneRequest* request,
                        grpc::ServerWriter<v1::AutotuneEvent>* writer) override;
  grpc::Status Measure(grpc::ServerContext* context,
                       const v1::MeasureRequest* request,
                       grpc::ServerWriter<v1::MeasureEvent>* writer) override;
  grpc::Status GetStatus(grpc::ServerContext* context,
                         const v1::GetStatusRequest* request,
                         v1::StatusResponse* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context,
                        const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status Cancel(grpc::ServerContext* context,
                      const v1::CancelRequest* request,
                      v1::CancelResponse* response) override;
  // Streams a job's events so far, then the rest. A Measure job's result is
  // not an AutotuneEvent: fetch it with GetResult once the stream ends.
  grpc::Status Watch(grpc::ServerContext* context,
                     const v1::WatchRequest* request,
                     grpc::ServerWriter<v1::AutotuneEvent>* writer) override;
  grpc::Status GetResult(grpc::ServerContext* context,
                         const v1::GetResultRequest* request,
                         v1::JobResult* response) override;
  grpc::Status ExportCache(grpc::ServerContext* context,
                           const v1::ExportCacheRequest* request,
                           grpc::ServerWriter<v1::CacheLine>* writer) override;
  grpc::Status ImportCache(grpc::ServerContext* context,
                           grpc::ServerReader<v1::CacheLine>* reader,
                           v1::ImportCacheResponse* response) override;
  grpc::Status ListImports(grpc::ServerContext* context,
                           const v1::ListImportsRequest* request,
                           v1::ListImportsResponse* response) override;
  grpc::Status DropImport(grpc::ServerContext* context,
                          const v1::DropImportRequest* request,
                          v1::DropImportResponse* response) override;
  grpc::Status ClearCache(grpc::ServerContext* context,
                          const v1::ClearCacheRequest* request,
                          v1::ClearCacheResponse* response) override;

 private:
  // The stored result of job `id` (nullopt when none, or no store).
  absl::StatusOr<std::optional<v1::JobResult>> Stored(const std::string& id);
  // Remembers `job`, and hands it to the cached answers where they take it,
  // else queues it (the queue emits its Queued event).
  absl::Status Submit(const JobPtr& job);
  // Makes `request` a job of `owner` (OwnerOf `caller`), charges its
  // bytes to the queue budget, submits it and follows it through `write`
  // (cancelling it on disconnect unless `detach`). The job gets `cost` and
  // its bounds: the client's deadline unless it detaches, and the per-job
  // device time limit. ResourceExhausted before anything is queued past
  // the stream quota or the queue budget (logged, rate-limited).
  template <typename WriteFn>
  absl::StatusOr<JobPtr> RunJob(grpc::ServerContext* context, Rpc rpc,
                                const Caller& caller, Job::Request request,
                                const JobCost& cost, const std::string& owner,
                                v1::Priority priority, bool detach,
                                WriteFn write);
  // Admits the caller of `rpc` (Admit), validates and costs `request`
  // (CostOf), and runs it as a job of OwnerOf the caller and the request's
  // client, at its priority (RunJob). The Status to answer otherwise.
  template <typename Request, typename WriteFn>
  absl::StatusOr<JobPtr> AdmitAndRun(grpc::ServerContext* context, Rpc rpc,
                                     const Request* request, bool detach,
                                     WriteFn write);
  // A valid request's cost (AdmitAutotune, AdmitMeasure on the worker's
  // platform); InvalidArgument naming the field, FailedPrecondition for a
  // job meant for another NPU or power mode (CheckRunsOn), or the
  // admission's refusal.
  absl::StatusOr<JobCost> CostOf(const v1::AutotuneRequest& request) const;
  absl::StatusOr<JobCost> CostOf(const v1::MeasureRequest& request) const;
  // A read connection to the cache (ExportCache, ListImports);
  // FailedPrecondition when irontuned runs without one.
  absl::StatusOr<std::unique_ptr<CacheReader>> ReadCache() const;
  // Runs `task` on the cache on the worker thread, the cache's only writer,
  // between jobs (ImportCache, DropImport, ClearCache); its Status, or
  // FailedPrecondition when irontuned runs without a cache.
  absl::Status WriteCache(const std::function<absl::Status(Cache&)>& task);
  // Drops the oldest ended jobs past kKeptJobs or history_bytes.
  void TrimHistory() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Streams `job`'s events from the start through `write` until it ends.
  // Cancels it when the client goes away and `cancel_on_disconnect`.
  template <typename WriteFn>
  absl::Status Follow(grpc::ServerContext* context, const JobPtr& job,
                      bool cancel_on_disconnect, WriteFn write);
  // Cancels a queued or running job.
  void CancelJob(const JobPtr& job, const std::string& reason);
  JobPtr Find(const std::string& id);
  // A job Cancel, Watch or GetResult names, found for its caller.
  struct OwnedJob {
    Caller caller;
    JobPtr live;                          // this run's job, or null
    std::optional<v1::JobResult> stored;  // else its stored result
  };
  // Admits the caller of `rpc`, checks `job_id`, finds the job (this run's,
  // else its stored result) and checks the caller may touch it. The
  // Status to answer otherwise: Admit's, InvalidArgument, NotFound "no job
  // ID", or CheckOwner's PermissionDenied.
  absl::StatusOr<OwnedJob> AdmitJob(grpc::ServerContext* context, Rpc rpc,
                                    const google::protobuf::Message& request,
                                    const std::string& job_id);

  const ServiceDeps deps_;
  const absl::Time started_;
  Door door_;
  // The queued requests' bytes (queue_budget.h).
  const std::shared_ptr<QueueBudget> budget_;

  absl::Mutex mu_;
  // This process's jobs, for Watch, Cancel and status; the oldest ended
  // ones are dropped past kKeptJobs or history_bytes (the store keeps
  // them).
  std::map<std::string, JobPtr> jobs_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_SERVICE_H_
