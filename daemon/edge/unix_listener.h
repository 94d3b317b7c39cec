// irontuned's unix socket paths, accepted by irontuned itself so that each
// connection's peer is known (docs/security.md "Who is local"): the
// sockets are bound here (mode 0660, the --socket-group), an accept thread
// reads each connection's SO_PEERCRED (local_peer.h), and hands the
// connection to gRPC through the acceptor of a PeerSlot bound to its uid.
//
// gRPC 1.51's C++ API gives a call neither its connection's descriptor
// nor its peer's credentials (the peer string of every unix caller is
// "unix:"), but it serves connections handed in through external
// connection acceptors, each with credentials of its own, and so with a
// CallGate of its own. A slot is bound to one uid at the uid's first
// connection and keeps it for irontuned's life; its gate stamps that
// uid's LocalPeer on each connection (peer_properties.h). Roles are thus
// worked out at a uid's first connection: restart irontuned to apply
// changed groups or rules. At most kPeerSlots distinct uids are served;
// a connection of one more is closed, with a warning.
//
// Included only by daemon.cc and its tests: gRPC headers are heavy.
// Threads: Bind, Register and Start are called once, in that order, by
// the starting thread; then one accept thread runs until Stop (any
// thread, idempotent; also the destructor). PeerSlot is thread-safe.
#ifndef IRONTUNE_DAEMON_EDGE_UNIX_LISTENER_H_
#define IRONTUNE_DAEMON_EDGE_UNIX_LISTENER_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "daemon/edge/auth.h"
#include "daemon/edge/local_peer.h"
#include "daemon/edge/refusal_log.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace irontune {

inline constexpr size_t kPeerSlots = 64;

// The path of a "unix:PATH" (or "unix://PATH") address.
std::string UnixSocketPath(absl::string_view address);

// One uid's way into gRPC: its acceptor, and the LocalPeer its
// connections are stamped with.
class PeerSlot {
 public:
  // The peer bound, or null while the slot is free. Shared, not copied:
  // every call's check reads it.
  std::shared_ptr<const LocalPeer> peer() const;
  // Binds the slot to `peer`. REQUIRES: free.
  void Bind(LocalPeer peer);
  // StampLocalPeer under the slot's lock.
  void Stamp(grpc::AuthContext& context) const;

 private:
  friend class UnixListeners;
  mutable absl::Mutex mu_;
  std::shared_ptr<const LocalPeer> peer_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
};

class UnixListeners {
 public:
  // The credentials a slot's connections are served with.
  using Credentials = std::function<std::shared_ptr<grpc::ServerCredentials>(
      std::shared_ptr<PeerSlot>)>;

  // Binds and listens on every unix:PATH address of `listen` (others are
  // left to gRPC), each mode 0660 and, when given, of group `gid`.
  // REQUIRES: stale sockets removed (PrepareUnixSocket). Errors name the
  // address and errno.
  static absl::StatusOr<std::unique_ptr<UnixListeners>> Bind(
      const std::vector<std::string>& listen, std::optional<gid_t> gid,
      LocalRoles roles, std::shared_ptr<RefusalLog> log);
  ~UnixListeners();

  bool empty() const { return sockets_.empty(); }

  // Adds kPeerSlots acceptors to `builder`. REQUIRES: before BuildAndStart.
  void Register(grpc::ServerBuilder& builder, const Credentials& credentials);
  // Starts the accept thread. REQUIRES: the server is started.
  void Start();
  // Stops accepting, closes the listening sockets and removes their files.
  void Stop();

 private:
  struct Socket {
    std::string address;
    std::string path;
    int fd = -1;
  };
  UnixListeners(std::vector<Socket> sockets, LocalRoles roles,
                std::shared_ptr<RefusalLog> log);
  void AcceptLoop();
  void Accept(const Socket& socket);
  // The slot of `peer`'s uid, bound now if it has none; null when every
  // slot is another uid's.
  PeerSlot* SlotOf(const LocalPeer& peer);

  std::vector<Socket> sockets_;
  const LocalRoles roles_;
  const std::shared_ptr<RefusalLog> log_;
  std::vector<std::shared_ptr<PeerSlot>> slots_;
  std::map<uid_t, PeerSlot*> by_uid_;  // accept thread only
  int wake_fd_ = -1;                   // an eventfd: Stop wakes the loop
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_UNIX_LISTENER_H_
