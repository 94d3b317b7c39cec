// FrontService: the irontune.v1.Tuner service as a fleet's front serves it
// (`irontuned --role front`, docs/fleet.md): no device and no cache; every
// job lives in the fleet's store (FleetFront, daemon/scheduler/
// fleet_front.h), so a client reaches its job through any front.
//
// Calls pass the same Door as on a box (door.h): TLS, tokens and roles
// alike, and a job belongs to its token's name on every front (the owner
// stored with it), so Watch, GetResult and Cancel check it wherever they
// arrive.
//   - Autotune: a job of the request's platform and power mode (the
//     request must name one: a front has no NPU), answered from the store
//     when an identical job is done; its events stream from the store.
//     A client that goes away cancels nothing (fleet_front.h);
//   - Watch, GetResult, Cancel, ListJobs: the store's jobs ("f-N");
//   - GetStatus: this front, and the fleet's live jobs;
//   - Measure and the cache RPCs: UNIMPLEMENTED, naming where to send
//     them (a box).
// While the store is unreachable a call is answered UNAVAILABLE within
// about a second (FleetPool); an open stream waits for it.
//
// Included only by front_service.cc and daemon.cc: gRPC headers are heavy.
// Threads: gRPC calls the handlers on its own threads, concurrently.
#ifndef IRONTUNE_DAEMON_EDGE_FRONT_SERVICE_H_
#define IRONTUNE_DAEMON_EDGE_FRONT_SERVICE_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "daemon/edge/door.h"
#include "daemon/scheduler/fleet_front.h"
#include "grpcpp/grpcpp.h"
#include "irontune/v1/tuner.grpc.pb.h"

namespace irontune {

struct FrontDeps {
  FleetFront* front = nullptr;  // not owned; REQUIRES: non-null
  std::string version;
  std::string store;  // the store, for GetStatus (never a secret)
  // As ServiceDeps' (service.h).
  AdmissionLimits limits;
  StreamLimits streams;
  std::shared_ptr<const Authenticator> auth;
  std::shared_ptr<RefusalLog> refusals;
};

class FrontService final : public v1::Tuner::Service {
 public:
  explicit FrontService(FrontDeps deps);

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
  // A job Cancel, Watch or GetResult names, found for its caller.
  struct OwnedJob {
    Caller caller;
    JobView view;
  };
  // Admits the caller of `rpc`, finds fleet job `job_id` and checks the
  // caller may touch it. The Status to answer otherwise: Admit's,
  // NotFound for an id that names no fleet job, the store's error, or
  // CheckOwner's PermissionDenied.
  absl::StatusOr<OwnedJob> AdmitJob(grpc::ServerContext* context, Rpc rpc,
                                    const google::protobuf::Message& request,
                                    const std::string& job_id);
  // Streams fleet job `id`'s events to `writer` until it ends or the
  // client goes; the status to answer.
  grpc::Status Stream(grpc::ServerContext* context, int64_t id,
                      grpc::ServerWriter<v1::AutotuneEvent>* writer);
  // What a front answers the RPCs only a box serves.
  grpc::Status BoxOnly(grpc::ServerContext* context, Rpc rpc,
                       const google::protobuf::Message* request);

  const FrontDeps deps_;
  const absl::Time started_;
  Door door_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_FRONT_SERVICE_H_
