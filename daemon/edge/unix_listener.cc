#include "daemon/edge/unix_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "daemon/base/log_safe.h"
#include "daemon/edge/peer_properties.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// A socket of `path`, bound (born 0660 at most: umask 0117), made 0660 and
// of group `gid` explicitly, listening.
absl::StatusOr<int> BindPath(const std::string& address,
                             const std::string& path,
                             std::optional<gid_t> gid) {
  sockaddr_un addr = {};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen ", address, ": a unix socket path has 1 to ",
                     sizeof(addr.sun_path) - 1, " bytes"));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd =
      ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Errno(absl::StrCat("--listen ", address, ": socket"));
  const mode_t umask = ::umask(0117);
  const int bound =
      ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  ::umask(umask);
  absl::Status s;
  if (bound != 0) {
    s = Errno(absl::StrCat("cannot listen on ", address));
  } else if (::chmod(path.c_str(), 0660) != 0) {
    s = Errno(absl::StrCat("cannot chmod 0660 ", path));
  } else if (gid.has_value() && ::chown(path.c_str(), -1, *gid) != 0) {
    s = Errno(absl::StrCat("cannot give ", path, " to group ", *gid));
  } else if (::listen(fd, SOMAXCONN) != 0) {
    s = Errno(absl::StrCat("cannot listen on ", address));
  }
  if (s.ok()) return fd;
  ::close(fd);
  return s;
}

}  // namespace

std::string UnixSocketPath(absl::string_view address) {
  absl::ConsumePrefix(&address, "unix:");
  absl::ConsumePrefix(&address, "//");
  return std::string(address);
}

std::shared_ptr<const LocalPeer> PeerSlot::peer() const {
  absl::MutexLock lock(&mu_);
  return peer_;
}

void PeerSlot::Bind(LocalPeer peer) {
  absl::MutexLock lock(&mu_);
  peer_ = std::make_shared<const LocalPeer>(std::move(peer));
}

void PeerSlot::Stamp(grpc::AuthContext& context) const {
  absl::MutexLock lock(&mu_);
  if (peer_ != nullptr) StampLocalPeer(*peer_, context);
}

absl::StatusOr<std::unique_ptr<UnixListeners>> UnixListeners::Bind(
    const std::vector<std::string>& listen, std::optional<gid_t> gid,
    LocalRoles roles, std::shared_ptr<RefusalLog> log) {
  std::vector<Socket> sockets;
  auto close_all = [&sockets] {
    for (Socket& s : sockets) {
      ::close(s.fd);
      ::unlink(s.path.c_str());
    }
  };
  for (const std::string& address : listen) {
    if (!absl::StartsWith(address, "unix:")) continue;
    Socket socket{address, UnixSocketPath(address), -1};
    absl::StatusOr<int> fd = BindPath(address, socket.path, gid);
    if (!fd.ok()) {
      close_all();
      return fd.status();
    }
    socket.fd = *fd;
    sockets.push_back(std::move(socket));
  }
  return std::unique_ptr<UnixListeners>(
      new UnixListeners(std::move(sockets), std::move(roles), std::move(log)));
}

UnixListeners::UnixListeners(std::vector<Socket> sockets, LocalRoles roles,
                             std::shared_ptr<RefusalLog> log)
    : sockets_(std::move(sockets)),
      roles_(std::move(roles)),
      log_(std::move(log)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

UnixListeners::~UnixListeners() {
  Stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void UnixListeners::Register(grpc::ServerBuilder& builder,
                             const Credentials& credentials) {
  if (sockets_.empty()) return;
  for (size_t i = 0; i < kPeerSlots; ++i) {
    auto slot = std::make_shared<PeerSlot>();
    slot->acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
        grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
        credentials(slot));
    slots_.push_back(std::move(slot));
  }
}

void UnixListeners::Start() {
  if (sockets_.empty() || thread_.joinable()) return;
  thread_ = std::thread([this] { AcceptLoop(); });
}

void UnixListeners::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  for (Socket& s : sockets_) {
    struct stat st = {};
    if (::lstat(s.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      ::unlink(s.path.c_str());
    }
    ::close(s.fd);
    s.fd = -1;
  }
}

void UnixListeners::AcceptLoop() {
  std::vector<pollfd> fds;
  for (const Socket& s : sockets_) fds.push_back({s.fd, POLLIN, 0});
  fds.push_back({wake_fd_, POLLIN, 0});
  while (true) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("unix sockets: poll: {}", std::strerror(errno));
      return;
    }
    if (fds.back().revents != 0) return;
    for (size_t i = 0; i < sockets_.size(); ++i) {
      if (fds[i].revents != 0) Accept(sockets_[i]);
    }
  }
}

void UnixListeners::Accept(const Socket& socket) {
  const int fd =
      ::accept4(socket.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      WarnRefusal(log_.get(), absl::StrCat("cannot accept on ", socket.address,
                                           ": ", std::strerror(errno)));
    }
    return;
  }
  absl::StatusOr<LocalPeer> peer = IdentifyPeer(fd, roles_);
  PeerSlot* slot = peer.ok() ? SlotOf(*peer) : nullptr;
  if (slot == nullptr) {
    WarnRefusal(
        log_.get(),
        absl::StrCat(
            "closed a connection to ", socket.address, ": ",
            peer.ok()
                ? absl::StrCat(peer->Label(), " is one more than the ",
                               kPeerSlots, " local users served since start")
                : peer.status().ToString()));
    ::close(fd);
    return;
  }
  spdlog::debug("connection to {} from {} (pid {})", socket.address,
                LogSafe(peer->Label()), peer->pid);
  grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
  p.listener_fd = -1;
  p.fd = fd;  // gRPC owns it now
  slot->acceptor_->HandleNewConnection(&p);
}

PeerSlot* UnixListeners::SlotOf(const LocalPeer& peer) {
  if (auto it = by_uid_.find(peer.uid); it != by_uid_.end()) return it->second;
  if (by_uid_.size() >= slots_.size()) return nullptr;
  PeerSlot* slot = slots_[by_uid_.size()].get();
  std::string because;
  LocalPeer bound = peer;
  bound.role = roles_.RoleOf(peer.uid, peer.groups, &because);
  spdlog::info("local user {} is served as {} ({})", LogSafe(bound.Label()),
               LocalRoleName(bound.role), because);
  slot->Bind(std::move(bound));
  by_uid_[peer.uid] = slot;
  return slot;
}

}  // namespace irontune
