// How a unix socket caller's identity travels from the check before the
// message (call_gate.h) to the handler (service.cc): as properties of the
// connection's gRPC auth context, which every call of the connection
// shares. The kernel's word (SO_PEERCRED) is read once per connection by
// irontuned's accept loop (unix_listener.h); the connection is handed to
// gRPC through an acceptor bound to that one uid, whose CallGate stamps
// the uid's LocalPeer on the connection's context at its first call.
//
// Threads: StampLocalPeer REQUIRES the caller to hold one lock for every
// stamp of a given context (PeerSlot's): a context is stamped at most once
// and then only read. ReadLocalPeer runs after the call's check, which
// happens-after the stamp, so it needs no lock.
#ifndef IRONTUNE_DAEMON_EDGE_PEER_PROPERTIES_H_
#define IRONTUNE_DAEMON_EDGE_PEER_PROPERTIES_H_

#include <optional>

#include "daemon/edge/auth.h"
#include "grpcpp/security/auth_context.h"

namespace irontune {

// Adds `peer`'s uid, gid, user and role to `context` unless it has them.
void StampLocalPeer(const LocalPeer& peer, grpc::AuthContext& context);

// The LocalPeer StampLocalPeer left on `context`, or nullopt: a caller
// not of a unix socket path (TCP, abstract sockets).
std::optional<LocalPeer> ReadLocalPeer(const grpc::AuthContext& context);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_PEER_PROPERTIES_H_
