// The client's only door to irontuned. TunerConnection is a plain interface
// over the irontune.v1.Tuner service so that no command includes gRPC
// headers; rpc.cc owns the channel and the stub.
//
// Every method takes a timeout in seconds: > 0 sets the call's deadline,
// <= 0 sets none. Calls fail fast (no wait-for-ready) when the daemon cannot
// be reached: the status is then UNAVAILABLE and IsNotConnected(status) is
// true. Other failures carry the daemon's code and message unchanged.
// A TunerConnection is used by one thread at a time; callbacks run on the
// calling thread, in stream order.
#ifndef IRONTUNE_CLIENT_RPC_H_
#define IRONTUNE_CLIENT_RPC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// A streaming callback: returns false to stop reading, which cancels the
// call; the method then returns OK.
template <typename Event>
using EventCallback = std::function<bool(const Event&)>;

class TunerConnection {
 public:
  virtual ~TunerConnection() = default;

  virtual absl::Status Autotune(
      const v1::AutotuneRequest& request, double timeout_s,
      const EventCallback<v1::AutotuneEvent>& on_event) = 0;
  virtual absl::Status Watch(
      const v1::WatchRequest& request, double timeout_s,
      const EventCallback<v1::AutotuneEvent>& on_event) = 0;
  virtual absl::Status Measure(
      const v1::MeasureRequest& request, double timeout_s,
      const EventCallback<v1::MeasureEvent>& on_event) = 0;
  virtual absl::StatusOr<v1::StatusResponse> GetStatus(
      const v1::GetStatusRequest& request, double timeout_s) = 0;
  virtual absl::StatusOr<v1::ListJobsResponse> ListJobs(
      const v1::ListJobsRequest& request, double timeout_s) = 0;
  virtual absl::StatusOr<v1::CancelResponse> Cancel(
      const v1::CancelRequest& request, double timeout_s) = 0;
  virtual absl::StatusOr<v1::JobResult> GetResult(
      const v1::GetResultRequest& request, double timeout_s) = 0;
  // Calls on_line for each line of the cache's export.
  virtual absl::Status ExportCache(
      double timeout_s, const EventCallback<std::string>& on_line) = 0;
  // Sends lines while next(&line) returns true, naming the file `source`;
  // returns how many the daemon imported.
  virtual absl::StatusOr<v1::ImportCacheResponse> ImportCache(
      double timeout_s, const std::string& source,
      const std::function<bool(std::string*)>& next) = 0;

  // grpc.health.v1.Health/Check of `service` ("" for the whole server):
  // its ServingStatus (1 SERVING, 2 NOT_SERVING, 3 SERVICE_UNKNOWN).
  // Needs no token. InvalidArgument for a name of 128 bytes or more.
  virtual absl::StatusOr<int> Health(const std::string& service,
                                     double timeout_s) = 0;
  // Lists the imports the cache keeps, and drops one's rows.
  virtual absl::StatusOr<v1::ListImportsResponse> ListImports(
      const v1::ListImportsRequest& request, double timeout_s) = 0;
  virtual absl::StatusOr<v1::DropImportResponse> DropImport(
      const v1::DropImportRequest& request, double timeout_s) = 0;
  // Empties the daemon's cache (admin role): what went, by kind.
  virtual absl::StatusOr<v1::ClearCacheResponse> ClearCache(
      const v1::ClearCacheRequest& request, double timeout_s) = 0;
};

// How to reach the daemon securely (docs/security.md, docs/client.md).
struct ConnectOptions {
  // Sent as "authorization: Bearer TOKEN" on every call; empty: none. It
  // goes as the channel's call credentials, which gRPC sends over TLS or,
  // without TLS, over gRPC's local credentials: those fail the connection
  // (UNAVAILABLE, before any metadata is sent) for a peer that is neither a
  // unix socket nor a loopback address. So a token is never sent in clear
  // off the box, whatever `target` resolves to.
  std::string token;
  // TLS instead of plaintext; the PEM texts, empty where not given.
  bool tls = false;
  std::string tls_ca_pem;    // the CA to trust; empty: the system's roots
  std::string tls_cert_pem;  // a client certificate and its key
  std::string tls_key_pem;
  std::string tls_server_name;  // the name to check the certificate for
};

// A connection to `target` ("unix:/path" or "host:port"), as `options`
// say. The channel connects lazily, on the first call. Never fails; a bad
// target shows as the first call's UNAVAILABLE.
std::unique_ptr<TunerConnection> ConnectTuner(
    const std::string& target, const ConnectOptions& options = {});

// A connection whose every call fails with `status`, for a setup error (an
// unreadable token file) found before any call; IsSetupError(status) is
// then true.
std::unique_ptr<TunerConnection> FailingConnection(absl::Status status);
bool IsSetupError(const absl::Status& status);

// Whether `status` says the daemon could not be reached at all (nothing
// listening, connection refused), as opposed to the daemon answering
// UNAVAILABLE itself.
bool IsNotConnected(const absl::Status& status);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_RPC_H_
