#include "client/rpc.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>

#include <chrono>
#include <map>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "irontune/v1/tuner.grpc.pb.h"

namespace irontune {
namespace {

constexpr char kNotConnectedUrl[] = "type.irontune.dev/not-connected";
constexpr char kSetupErrorUrl[] = "type.irontune.dev/client-setup";

class GrpcTunerConnection : public TunerConnection {
 public:
  explicit GrpcTunerConnection(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)), stub_(v1::Tuner::NewStub(channel_)) {}

  absl::Status Autotune(
      const v1::AutotuneRequest& request, double timeout_s,
      const EventCallback<v1::AutotuneEvent>& on_event) override {
    return Stream(&v1::Tuner::Stub::Autotune, request, timeout_s, on_event);
  }

  absl::Status Watch(
      const v1::WatchRequest& request, double timeout_s,
      const EventCallback<v1::AutotuneEvent>& on_event) override {
    return Stream(&v1::Tuner::Stub::Watch, request, timeout_s, on_event);
  }

  absl::Status Measure(
      const v1::MeasureRequest& request, double timeout_s,
      const EventCallback<v1::MeasureEvent>& on_event) override {
    return Stream(&v1::Tuner::Stub::Measure, request, timeout_s, on_event);
  }

  absl::StatusOr<v1::StatusResponse> GetStatus(
      const v1::GetStatusRequest& request, double timeout_s) override {
    return Unary(&v1::Tuner::Stub::GetStatus, request, timeout_s);
  }

  absl::StatusOr<v1::ListJobsResponse> ListJobs(
      const v1::ListJobsRequest& request, double timeout_s) override {
    return Unary(&v1::Tuner::Stub::ListJobs, request, timeout_s);
  }

  absl::StatusOr<v1::CancelResponse> Cancel(const v1::CancelRequest& request,
                                            double timeout_s) override {
    return Unary(&v1::Tuner::Stub::Cancel, request, timeout_s);
  }

  absl::StatusOr<v1::JobResult> GetResult(const v1::GetResultRequest& request,
                                          double timeout_s) override {
    return Unary(&v1::Tuner::Stub::GetResult, request, timeout_s);
  }

  absl::Status ExportCache(double timeout_s,
                           const EventCallback<std::string>& on_line) override {
    return Stream(&v1::Tuner::Stub::ExportCache, v1::ExportCacheRequest(),
                  timeout_s,
                  EventCallback<v1::CacheLine>([&](const v1::CacheLine& l) {
                    return on_line(l.line());
                  }));
  }

  absl::StatusOr<v1::ImportCacheResponse> ImportCache(
      double timeout_s, const std::string& source,
      const std::function<bool(std::string*)>& next) override {
    grpc::ClientContext context;
    Prepare(context, timeout_s);
    v1::ImportCacheResponse response;
    std::unique_ptr<grpc::ClientWriter<v1::CacheLine>> writer =
        stub_->ImportCache(&context, &response);
    v1::CacheLine line;
    line.set_source(source);
    while (next(line.mutable_line())) {
      if (!writer->Write(line)) break;  // the daemon ended the call early
      line.Clear();
    }
    writer->WritesDone();
    absl::Status status = Convert(writer->Finish());
    if (!status.ok()) return status;
    return response;
  }

  absl::StatusOr<v1::ListImportsResponse> ListImports(
      const v1::ListImportsRequest& request, double timeout_s) override {
    return Unary(&v1::Tuner::Stub::ListImports, request, timeout_s);
  }

  // The health proto's generated code is not installed: its two messages
  // are encoded by hand (HealthCheckRequest{1: service},
  // HealthCheckResponse{1: status}).
  absl::StatusOr<int> Health(const std::string& service,
                             double timeout_s) override {
    if (service.size() >= 128) {
      return absl::InvalidArgumentError("--service: name too long");
    }
    std::string request_bytes;
    if (!service.empty()) {
      request_bytes = std::string{'\x0a', static_cast<char>(service.size())};
      request_bytes += service;
    }
    grpc::Slice slice(request_bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                     grpc::internal::RpcMethod::NORMAL_RPC);
    grpc::ClientContext context;
    Prepare(context, timeout_s);
    absl::Status status = Convert(
        grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
            channel_.get(), method, &context, request, &response));
    if (!status.ok()) return status;
    std::vector<grpc::Slice> slices;
    if (!response.Dump(&slices).ok()) return absl::DataLossError("no reply");
    std::string bytes;
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    if (bytes.empty()) return 0;  // UNKNOWN, the default
    if (bytes.size() == 2 && bytes[0] == 0x08) return bytes[1];
    return absl::DataLossError("a health reply that does not parse");
  }

  absl::StatusOr<v1::DropImportResponse> DropImport(
      const v1::DropImportRequest& request, double timeout_s) override {
    return Unary(&v1::Tuner::Stub::DropImport, request, timeout_s);
  }

  absl::StatusOr<v1::ClearCacheResponse> ClearCache(
      const v1::ClearCacheRequest& request, double timeout_s) override {
    return Unary(&v1::Tuner::Stub::ClearCache, request, timeout_s);
  }

 private:
  // The call's deadline (timeout_s > 0). The token is the channel's call
  // credentials (CredentialsOf), not the call's metadata.
  void Prepare(grpc::ClientContext& context, double timeout_s) const {
    if (timeout_s <= 0) return;
    context.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6)));
  }

  // A server-streaming method of the stub.
  template <typename Request, typename Event>
  using StreamMethod = std::unique_ptr<grpc::ClientReader<Event>> (
      v1::Tuner::Stub::*)(grpc::ClientContext* context, const Request& request);

  // A unary method of the stub.
  template <typename Request, typename Response>
  using UnaryMethod = grpc::Status (v1::Tuner::Stub::*)(
      grpc::ClientContext* context, const Request& request, Response* response);

  // Calls `method` and passes each event to `on_event` until the stream
  // ends or `on_event` returns false (then cancels the call and returns OK).
  template <typename Request, typename Event>
  absl::Status Stream(StreamMethod<Request, Event> method,
                      const Request& request, double timeout_s,
                      const EventCallback<Event>& on_event) {
    grpc::ClientContext context;
    Prepare(context, timeout_s);
    std::unique_ptr<grpc::ClientReader<Event>> reader =
        (stub_.get()->*method)(&context, request);
    Event event;
    while (reader->Read(&event)) {
      if (!on_event(event)) {
        context.TryCancel();
        reader->Finish();  // CANCELLED, as we asked
        return absl::OkStatus();
      }
    }
    return Convert(reader->Finish());
  }

  template <typename Request, typename Response>
  absl::StatusOr<Response> Unary(UnaryMethod<Request, Response> method,
                                 const Request& request, double timeout_s) {
    grpc::ClientContext context;
    Prepare(context, timeout_s);
    Response response;
    absl::Status status =
        Convert((stub_.get()->*method)(&context, request, &response));
    if (!status.ok()) return status;
    return response;
  }

  // The one place a grpc::Status becomes an absl::Status. The codes share
  // their numbering.
  absl::Status Convert(const grpc::Status& s) {
    if (s.ok()) return absl::OkStatus();
    absl::Status out(static_cast<absl::StatusCode>(s.error_code()),
                     s.error_message());
    // A daemon answering UNAVAILABLE leaves the channel READY; a socket
    // nobody listens on leaves it failing or still connecting.
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE &&
        channel_->GetState(false) != GRPC_CHANNEL_READY) {
      out.SetPayload(kNotConnectedUrl, absl::Cord("1"));
    }
    return out;
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Tuner::Stub> stub_;
};

// Every call fails with one status.
class FailingTunerConnection : public TunerConnection {
 public:
  explicit FailingTunerConnection(absl::Status status)
      : status_(std::move(status)) {
    status_.SetPayload(kSetupErrorUrl, absl::Cord("1"));
  }
  absl::Status Autotune(const v1::AutotuneRequest&, double,
                        const EventCallback<v1::AutotuneEvent>&) override {
    return status_;
  }
  absl::Status Watch(const v1::WatchRequest&, double,
                     const EventCallback<v1::AutotuneEvent>&) override {
    return status_;
  }
  absl::Status Measure(const v1::MeasureRequest&, double,
                       const EventCallback<v1::MeasureEvent>&) override {
    return status_;
  }
  absl::StatusOr<v1::StatusResponse> GetStatus(const v1::GetStatusRequest&,
                                               double) override {
    return status_;
  }
  absl::StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListJobsRequest&,
                                                double) override {
    return status_;
  }
  absl::StatusOr<v1::CancelResponse> Cancel(const v1::CancelRequest&,
                                            double) override {
    return status_;
  }
  absl::StatusOr<v1::JobResult> GetResult(const v1::GetResultRequest&,
                                          double) override {
    return status_;
  }
  absl::Status ExportCache(double, const EventCallback<std::string>&) override {
    return status_;
  }
  absl::StatusOr<v1::ImportCacheResponse> ImportCache(
      double, const std::string&,
      const std::function<bool(std::string*)>&) override {
    return status_;
  }
  absl::StatusOr<v1::ListImportsResponse> ListImports(
      const v1::ListImportsRequest&, double) override {
    return status_;
  }
  absl::StatusOr<int> Health(const std::string&, double) override {
    return status_;
  }
  absl::StatusOr<v1::DropImportResponse> DropImport(
      const v1::DropImportRequest&, double) override {
    return status_;
  }
  absl::StatusOr<v1::ClearCacheResponse> ClearCache(
      const v1::ClearCacheRequest&, double) override {
    return status_;
  }

 private:
  absl::Status status_;
};

// "authorization: Bearer TOKEN" as call credentials. gRPC attaches them
// only on a channel whose security level is privacy and integrity: TLS, or
// local credentials on a unix socket or loopback TCP peer; never on an
// insecure channel (CompositeChannelCredentials refuses one).
class BearerToken : public grpc::MetadataCredentialsPlugin {
 public:
  explicit BearerToken(const std::string& token) : value_("Bearer " + token) {}

  // The token is at hand: gRPC may call GetMetadata inline.
  bool IsBlocking() const override { return false; }
  const char* GetType() const override { return "irontune-bearer"; }

  grpc::Status GetMetadata(
      grpc::string_ref /*service_url*/, grpc::string_ref /*method_name*/,
      const grpc::AuthContext& /*channel_auth_context*/,
      std::multimap<grpc::string, grpc::string>* metadata) override {
    metadata->emplace("authorization", value_);
    return grpc::Status::OK;
  }

 private:
  const std::string value_;
};

bool IsUnixTarget(const std::string& target) {
  return absl::StartsWith(target, "unix:") ||
         absl::StartsWith(target, "unix-abstract:");
}

// TLS as `options` say; else, with a token, gRPC's local credentials, whose
// handshake fails for any peer but a unix socket (UDS) or a loopback address
// (LOCAL_TCP), so the token never leaves the box in clear; else none.
std::shared_ptr<grpc::ChannelCredentials> CredentialsOf(
    const std::string& target, const ConnectOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> channel;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_ca_pem;
    ssl.pem_cert_chain = options.tls_cert_pem;
    ssl.pem_private_key = options.tls_key_pem;
    channel = grpc::SslCredentials(ssl);
  } else if (!options.token.empty()) {
    channel = grpc::experimental::LocalCredentials(
        IsUnixTarget(target) ? UDS : LOCAL_TCP);
  } else {
    return grpc::InsecureChannelCredentials();
  }
  if (options.token.empty()) return channel;
  return grpc::CompositeChannelCredentials(
      channel, grpc::MetadataCredentialsFromPlugin(
                   std::make_unique<BearerToken>(options.token)));
}

// round_robin over every address the target resolves to, each address
// used only while grpc.health.v1 says the Tuner service is SERVING there.
constexpr char kChannelServiceConfig[] = R"({
  "loadBalancingConfig": [{"round_robin": {}}],
  "healthCheckConfig": {"serviceName": "irontune.v1.Tuner"}
})";

}  // namespace

std::unique_ptr<TunerConnection> ConnectTuner(const std::string& target,
                                              const ConnectOptions& options) {
  grpc::ChannelArguments args;
  // Results and cache exports may be large.
  args.SetMaxReceiveMessageSize(-1);
  // A name that resolves to several daemons (dns:///fleet.example:50051, a
  // headless Service) spreads calls over all of them, and a daemon whose
  // Tuner service is not SERVING (stopping, or its NPU hung) gets none.
  args.SetServiceConfigJSON(kChannelServiceConfig);
  if (options.tls && !options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  return std::make_unique<GrpcTunerConnection>(
      grpc::CreateCustomChannel(target, CredentialsOf(target, options), args));
}

std::unique_ptr<TunerConnection> FailingConnection(absl::Status status) {
  return std::make_unique<FailingTunerConnection>(std::move(status));
}

bool IsSetupError(const absl::Status& status) {
  return status.GetPayload(kSetupErrorUrl).has_value();
}

bool IsNotConnected(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable &&
         status.GetPayload(kNotConnectedUrl).has_value();
}

}  // namespace irontune
