// Door: who may call what on the Tuner service, one rule for every server
// that serves it (a box's TunerService, a fleet front's FrontService).
//
// Admit authenticates a call's caller (daemon/edge/auth.h; the call gate,
// call_gate.h, has already refused a bad token on most listeners before the
// message was read), checks the role the RPC needs and a small RPC's
// size, and logs a refusal with the peer, rate-limited (refusal_log.h).
// With tokens a job belongs to its token's name, whatever the request's
// `client` says (OwnerOf), on every server alike. Streams keep to
// StreamQuota (stream_quota.h).
//
// Included only by the services' and the daemon's .cc files: gRPC headers
// are heavy. Threads: every method from any thread.
#ifndef IRONTUNE_DAEMON_EDGE_DOOR_H_
#define IRONTUNE_DAEMON_EDGE_DOOR_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/edge/auth.h"
#include "daemon/edge/refusal_log.h"
#include "daemon/edge/stream_quota.h"
#include "daemon/scheduler/admission.h"
#include "grpcpp/grpcpp.h"

namespace irontune {

// absl::Status as the wire's status: the one place they are converted.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Whom a stream of `caller` counts against (stream_quota.h): its token's
// name, else the name of the job it submits or watches, `owner`.
std::string StreamName(const Caller& caller, const std::string& owner);

// ListJobs' limit: `asked`, 0 meaning 50, at most kMaxListJobs.
inline constexpr uint32_t kMaxListJobs = 1000;
inline uint32_t ListJobsLimit(uint32_t asked) {
  return asked == 0 ? 50 : std::min(asked, kMaxListJobs);
}

class Door {
 public:
  // `auth` REQUIRES: non-null; without one every call is refused
  // (INTERNAL), never served as admin. `refusals` may be null (one line
  // each).
  Door(std::shared_ptr<const Authenticator> auth,
       std::shared_ptr<RefusalLog> refusals, AdmissionLimits limits,
       StreamLimits streams);

  // Refuse every new call from now on (UNAVAILABLE).
  void BeginShutdown() { shutting_down_ = true; }

  // The caller of `context` if it may call `rpc` (logged); else
  // UNAVAILABLE once shutting down, or UNAUTHENTICATED or
  // PERMISSION_DENIED, or RESOURCE_EXHAUSTED for a small RPC's `request`
  // (null for the big ones) past --max-small-message-bytes
  // (CheckSmallRequest), each logged with the peer, rate-limited.
  absl::StatusOr<Caller> Admit(
      grpc::ServerContext* context, Rpc rpc,
      const google::protobuf::Message* request = nullptr);
  // Admit for an RPC that needs nothing more of its caller: OK when
  // admitted, else Admit's refusal as the status to answer.
  grpc::Status AdmitOnly(grpc::ServerContext* context, Rpc rpc,
                         const google::protobuf::Message* request);
  // The client a job of `caller` is owned by: the token's name, else the
  // request's `given` name, else the peer.
  std::string OwnerOf(const grpc::ServerContext& context, const Caller& caller,
                      const std::string& given) const;
  // OK when `caller` may touch the job of `owner` (MayTouchJob, logged).
  absl::Status CheckOwner(const Caller& caller, Rpc rpc,
                          const std::string& job_id, const std::string& owner);
  // A stream slot for `caller` of `rpc`, named `name` (StreamQuota::Open);
  // a refusal is logged, rate-limited.
  absl::StatusOr<StreamQuota::Slot> BeginStream(Rpc rpc, const Caller& caller,
                                                const std::string& name);
  // Logs a refusal of `caller`'s `rpc`, rate-limited, and returns it.
  absl::Status Refused(Rpc rpc, const Caller& caller, absl::Status status);

 private:
  std::string ClientOf(const grpc::ServerContext& context,
                       const std::string& given) const;

  const std::shared_ptr<const Authenticator> auth_;
  const std::shared_ptr<RefusalLog> refusals_;
  const AdmissionLimits limits_;
  std::atomic<bool> shutting_down_{false};
  StreamQuota streams_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_DOOR_H_
