#include "daemon/edge/call_gate.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace irontune {
namespace {

constexpr absl::string_view kHealthPrefix = "/grpc.health.v1.Health/";

std::optional<absl::string_view> Header(
    const grpc::AuthMetadataProcessor::InputMetadata& metadata,
    absl::string_view key) {
  for (const auto& [k, v] : metadata) {
    if (absl::string_view(k.data(), k.size()) == key) {
      return absl::string_view(v.data(), v.size());
    }
  }
  return std::nullopt;
}

std::shared_ptr<grpc::ServerCredentials> TlsCredentials(const TlsConfig& tls) {
  grpc::SslServerCredentialsOptions ssl(
      tls.client_ca_pem.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = tls.client_ca_pem;
  ssl.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

grpc::Status CallGate::Process(const InputMetadata& auth_metadata,
                               grpc::AuthContext* context,
                               OutputMetadata* /*consumed_auth_metadata*/,
                               OutputMetadata* /*response_metadata*/) {
  const absl::string_view path =
      Header(auth_metadata, ":path").value_or(absl::string_view());
  if (absl::StartsWith(path, kHealthPrefix)) return grpc::Status::OK;
  const std::shared_ptr<const LocalPeer> peer =
      slot_ != nullptr ? slot_->peer() : nullptr;
  const absl::StatusOr<Caller> caller = auth_->AuthenticateOn(
      Header(auth_metadata, "authorization"), local_, "", peer.get());
  if (caller.ok()) {
    if (slot_ != nullptr && context != nullptr) slot_->Stamp(*context);
    return grpc::Status::OK;
  }
  const std::string why(caller.status().message());
  WarnRefusal(
      log_.get(),
      absl::StrCat("refused ", path.empty() ? "a call" : path, " on ",
                   listener_, peer ? " from " : "", peer ? peer->Label() : "",
                   " before reading it: ", why));
  return grpc::Status(absl::IsPermissionDenied(caller.status())
                          ? grpc::StatusCode::PERMISSION_DENIED
                          : grpc::StatusCode::UNAUTHENTICATED,
                      why);
}

bool GatedBeforeRead(const std::string& address, bool tls) {
  return tls || TransportOf(address) != Transport::kRemoteTcp;
}

std::shared_ptr<grpc::ServerCredentials> GatedCredentials(
    const std::string& address, const std::optional<TlsConfig>& tls,
    std::shared_ptr<const Authenticator> auth,
    std::shared_ptr<RefusalLog> log) {
  const Transport transport = TransportOf(address);
  const bool unix_socket =
      transport == Transport::kUnix || transport == Transport::kUnixAbstract;
  if (!GatedBeforeRead(address, tls.has_value())) {
    return grpc::InsecureServerCredentials();
  }
  std::shared_ptr<grpc::ServerCredentials> credentials =
      unix_socket       ? grpc::experimental::LocalServerCredentials(UDS)
      : tls.has_value() ? TlsCredentials(*tls)
                        : grpc::experimental::LocalServerCredentials(LOCAL_TCP);
  const bool local =
      transport == Transport::kUnix ||
      (auth->loopback_admin() && transport != Transport::kRemoteTcp);
  credentials->SetAuthMetadataProcessor(std::make_shared<CallGate>(
      std::move(auth), local, address, std::move(log)));
  return credentials;
}

}  // namespace irontune

namespace irontune {

std::shared_ptr<grpc::ServerCredentials> SlotCredentials(
    std::shared_ptr<const PeerSlot> slot,
    std::shared_ptr<const Authenticator> auth,
    std::shared_ptr<RefusalLog> log) {
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::experimental::LocalServerCredentials(UDS);
  credentials->SetAuthMetadataProcessor(std::make_shared<CallGate>(
      std::move(auth), true, "a unix socket", std::move(log), std::move(slot)));
  return credentials;
}

}  // namespace irontune
