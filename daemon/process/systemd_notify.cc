#include "daemon/process/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// The sockaddr for `path` ("@name": abstract namespace) and its length;
// 0 when the path does not fit.
socklen_t Address(const std::string& path, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) return 0;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (path[0] == '@') addr.sun_path[0] = '\0';
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() +
                                (path[0] == '@' ? 0 : 1));
}

}  // namespace

NotifyConfig NotifyConfig::FromEnvironment() {
  NotifyConfig config;
  config.socket = Env("NOTIFY_SOCKET");
  const std::string pid = Env("WATCHDOG_PID");
  int64_t watchdog_pid = 0;
  const bool ours = pid.empty() || (absl::SimpleAtoi(pid, &watchdog_pid) &&
                                    watchdog_pid == ::getpid());
  uint64_t usec = 0;
  if (ours && absl::SimpleAtoi(Env("WATCHDOG_USEC"), &usec) && usec > 0) {
    config.watchdog = absl::Microseconds(usec);
  }
  return config;
}

SystemdNotifier::SystemdNotifier(NotifyConfig config)
    : config_(std::move(config)) {}

SystemdNotifier::~SystemdNotifier() { Stop(); }

absl::Status SystemdNotifier::Notify(std::string_view message) {
  if (!enabled()) return absl::OkStatus();
  sockaddr_un addr;
  const socklen_t len = Address(config_.socket, addr);
  if (len == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "NOTIFY_SOCKET ", config_.socket, ": not a unix socket path"));
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("NOTIFY_SOCKET: socket: ", std::strerror(errno)));
  }
  const ssize_t sent =
      ::sendto(fd, message.data(), message.size(), MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&addr), len);
  const int err = errno;
  ::close(fd);
  if (sent != static_cast<ssize_t>(message.size())) {
    return absl::FailedPreconditionError(
        absl::StrCat("NOTIFY_SOCKET ", config_.socket, ": ",
                     sent < 0 ? std::strerror(err) : "short send"));
  }
  return absl::OkStatus();
}

void SystemdNotifier::Stopping() {
  stopping_ = true;
  absl::Status s = Notify("STOPPING=1\nSTATUS=shutting down");
  if (!s.ok()) spdlog::warn("systemd: {}", s.ToString());
}

void SystemdNotifier::Start(std::function<std::string()> status,
                            std::function<bool()> alive) {
  if (!enabled() || thread_.joinable()) return;
  status_ = std::move(status);
  alive_ = std::move(alive);
  thread_ = std::thread([this] { Loop(); });
}

void SystemdNotifier::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void SystemdNotifier::Loop() {
  const bool watchdog = config_.watchdog > absl::ZeroDuration();
  const absl::Duration step =
      watchdog ? std::min(config_.watchdog / 2, config_.status_period)
               : config_.status_period;
  std::string last_status;
  bool was_alive = true;
  absl::Time next_ping = absl::Now();
  do {
    Tick(last_status, was_alive, next_ping);
  } while (!stop_.WaitForNotificationWithTimeout(step));
}

void SystemdNotifier::Tick(std::string& last_status, bool& was_alive,
                           absl::Time& next_ping) {
  const std::string status = status_ ? status_() : std::string();
  if (!stopping_ && status != last_status) {
    absl::Status s = Notify(absl::StrCat("STATUS=", status));
    if (!s.ok()) spdlog::debug("systemd: {}", s.ToString());
    last_status = status;
  }
  if (config_.watchdog <= absl::ZeroDuration()) return;
  const bool alive = !alive_ || alive_();
  if (alive != was_alive) {
    if (alive) {
      spdlog::warn("device worker moves again; watchdog pings resume");
    } else {
      spdlog::error(
          "device worker is stuck; watchdog pings stop, so systemd "
          "restarts irontuned after WatchdogSec");
    }
    was_alive = alive;
  }
  const absl::Time now = absl::Now();
  if (!alive || now < next_ping) return;
  absl::Status s = Notify("WATCHDOG=1");
  if (!s.ok()) spdlog::debug("systemd: {}", s.ToString());
  next_ping = now + config_.watchdog / 2;
}

}  // namespace irontune
