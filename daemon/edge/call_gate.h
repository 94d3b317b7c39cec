// The door of every listener: a call's token is checked from its headers
// before gRPC reads its message, so a caller without a valid token costs
// irontuned its headers only (docs/security.md "Before the message").
//
// gRPC 1.51 runs an AuthMetadataProcessor in the server's auth filter on a
// call's initial metadata; a call it refuses is ended there, UNAUTHENTICATED,
// and its message is never asked for. A server interceptor would not do:
// the synchronous server has the request message read with the call
// (POST_RECV_INITIAL_METADATA and POST_RECV_MESSAGE arrive together), before
// any interceptor runs. Processors run only on secure credentials, so each
// listener gets one that carries a processor:
//
//   TCP, TLS configured    SslServerCredentials
//   unix:PATH              LocalServerCredentials(UDS) on the connections
//                          irontuned accepts itself (unix_listener.h), a
//                          gate for each uid: plaintext on the wire
//   unix-abstract          LocalServerCredentials(UDS), gRPC's listener
//   loopback TCP, no TLS   LocalServerCredentials(LOCAL_TCP): the same
//   off loopback, no TLS   (--insecure) InsecureServerCredentials: no
//                          processor is possible; the handler checks the
//                          token after the message is read (logged at start)
//
// The health service (grpc.health.v1.Health) passes without a token, as
// probes need; everything else, reflection included, needs what the
// Authenticator asks for. The handler authenticates again for the caller's
// name and role; what a unix socket path's gate knows of the peer reaches
// it through the connection's auth context (peer_properties.h).
//
// Included only by daemon.cc and its tests: gRPC headers are heavy.
// Threads: a CallGate is immutable; gRPC calls Process on its own threads.
#ifndef IRONTUNE_DAEMON_EDGE_CALL_GATE_H_
#define IRONTUNE_DAEMON_EDGE_CALL_GATE_H_

#include <memory>
#include <optional>
#include <string>

#include "daemon/edge/auth.h"
#include "daemon/edge/refusal_log.h"
#include "daemon/edge/tls.h"
#include "daemon/edge/unix_listener.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/security/server_credentials.h"

namespace irontune {

class CallGate final : public grpc::AuthMetadataProcessor {
 public:
  // Calls through `listener` (its --listen address, for logs), whose
  // callers are local when `local`, checked by `auth` (REQUIRES: non-null);
  // refusals logged through `log` (may be null: every one logged).
  // `slot` (may be null): the connections are a unix socket path's, of
  // the uid the slot is bound to (unix_listener.h); each is stamped with
  // its LocalPeer at its first admitted call.
  CallGate(std::shared_ptr<const Authenticator> auth, bool local,
           std::string listener, std::shared_ptr<RefusalLog> log,
           std::shared_ptr<const PeerSlot> slot = nullptr)
      : auth_(std::move(auth)),
        local_(local),
        listener_(std::move(listener)),
        log_(std::move(log)),
        slot_(std::move(slot)) {}

  // A SHA-256 and a table scan: cheap enough for gRPC's own thread.
  bool IsBlocking() const override { return false; }

  // OK for a health call, or when Authenticator::AuthenticateOn admits
  // the call's `authorization` header; its UNAUTHENTICATED otherwise
  // (logged, rate-limited).
  grpc::Status Process(const InputMetadata& auth_metadata,
                       grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  const std::shared_ptr<const Authenticator> auth_;
  const bool local_;
  const std::string listener_;
  const std::shared_ptr<RefusalLog> log_;
  const std::shared_ptr<const PeerSlot> slot_;
};

// Whether the calls of `address` are checked before their message is read:
// all but plaintext off loopback.
bool GatedBeforeRead(const std::string& address, bool tls);

// The credentials `address` is served with, as the table above says, with
// a CallGate when GatedBeforeRead. REQUIRES: `auth` non-null.
std::shared_ptr<grpc::ServerCredentials> GatedCredentials(
    const std::string& address, const std::optional<TlsConfig>& tls,
    std::shared_ptr<const Authenticator> auth, std::shared_ptr<RefusalLog> log);

// The credentials of a unix socket path's connections handed in through
// `slot`: gRPC's local credentials (UDS) with a CallGate of the slot.
std::shared_ptr<grpc::ServerCredentials> SlotCredentials(
    std::shared_ptr<const PeerSlot> slot,
    std::shared_ptr<const Authenticator> auth, std::shared_ptr<RefusalLog> log);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_CALL_GATE_H_
