#include "daemon/edge/door.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/base/log_safe.h"
#include "daemon/edge/message_size.h"
#include "daemon/edge/peer_properties.h"
#include "spdlog/spdlog.h"

namespace irontune {

Door::Door(std::shared_ptr<const Authenticator> auth,
           std::shared_ptr<RefusalLog> refusals, AdmissionLimits limits,
           StreamLimits streams)
    : auth_(std::move(auth)),
      refusals_(std::move(refusals)),
      limits_(limits),
      streams_(streams) {}

// Whom a stream of `caller` counts against (stream_quota.h): its token's
// name, else the name of the job it submits or watches, `owner`.
std::string StreamName(const Caller& caller, const std::string& owner) {
  return caller.has_token ? caller.name : owner;
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode and grpc::StatusCode share their numbers.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::StatusOr<Caller> Door::Admit(grpc::ServerContext* context, Rpc rpc,
                                   const google::protobuf::Message* request) {
  if (shutting_down_) {
    return absl::UnavailableError("irontuned is shutting down");
  }
  std::optional<absl::string_view> authorization;
  const auto& metadata = context->client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    authorization = absl::string_view(it->second.data(), it->second.size());
  }
  const std::string peer = context->peer();
  if (auth_ == nullptr) {  // fail closed, never everyone admin
    return absl::InternalError(
        "irontuned has no authenticator: every call is refused");
  }
  const std::shared_ptr<const grpc::AuthContext> auth_context =
      context->auth_context();
  const std::optional<LocalPeer> local =
      auth_context != nullptr ? ReadLocalPeer(*auth_context) : std::nullopt;
  absl::StatusOr<Caller> caller =
      local.has_value()
          ? auth_->AuthenticateOn(authorization, true, peer, &*local)
          : auth_->Authenticate(authorization, peer);
  absl::Status s =
      caller.ok() ? Authenticator::Authorize(*caller, rpc) : caller.status();
  if (s.ok() && request != nullptr) {
    s = CheckSmallRequest(rpc, request->ByteSizeLong(), limits_);
  }
  if (!s.ok()) {
    WarnRefusal(refusals_.get(),
                absl::StrCat("refused ", RpcName(rpc), " from ",
                             caller.ok() ? caller->ToString() : peer, ": ",
                             s.message()));
    return s;
  }
  const bool quiet = rpc == Rpc::kGetStatus || rpc == Rpc::kListJobs ||
                     rpc == Rpc::kGetResult || rpc == Rpc::kListImports;
  spdlog::log(quiet ? spdlog::level::debug : spdlog::level::info, "{} by {}",
              RpcName(rpc), LogSafe(caller->ToString()));
  return caller;
}
grpc::Status Door::AdmitOnly(grpc::ServerContext* context, Rpc rpc,
                             const google::protobuf::Message* request) {
  return ToGrpcStatus(Admit(context, rpc, request).status());
}
std::string Door::OwnerOf(const grpc::ServerContext& context,
                          const Caller& caller,
                          const std::string& given) const {
  return caller.named ? caller.name : ClientOf(context, given);
}
absl::Status Door::CheckOwner(const Caller& caller, Rpc rpc,
                              const std::string& job_id,
                              const std::string& owner) {
  absl::Status s = Authenticator::MayTouchJob(caller, rpc, job_id, owner);
  if (!s.ok()) {
    spdlog::warn("refused {} from {}: {}", RpcName(rpc),
                 LogSafe(caller.ToString()),
                 LogSafe(std::string(s.message()), kLogSafeLongBytes));
  }
  return s;
}
std::string Door::ClientOf(const grpc::ServerContext& context,
                           const std::string& given) const {
  if (!given.empty()) return given;
  return context.peer().empty() ? "anonymous" : context.peer();
}
absl::StatusOr<StreamQuota::Slot> Door::BeginStream(Rpc rpc,
                                                    const Caller& caller,
                                                    const std::string& name) {
  absl::StatusOr<StreamQuota::Slot> slot = streams_.Open(name, caller.role);
  if (!slot.ok()) return Refused(rpc, caller, slot.status());
  return slot;
}
absl::Status Door::Refused(Rpc rpc, const Caller& caller, absl::Status status) {
  WarnRefusal(refusals_.get(),
              absl::StrCat("refused ", RpcName(rpc), " from ",
                           caller.ToString(), ": ", status.message()));
  return status;
}

}  // namespace irontune
