// SystemdNotifier: irontuned's side of systemd's notify protocol
// (sd_notify(3)) for a Type=notify unit with WatchdogSec=.
//
// Messages: READY=1 once every address is listened on; STATUS= with the
// queue length and the running job, sent whenever it changes; WATCHDOG=1
// every half watchdog interval while the device worker is alive (see
// Heartbeat: not stuck in one device call longer than the stall limit),
// so that a hung worker stops the pings and systemd restarts irontuned;
// STOPPING=1 when shutdown begins.
//
// The protocol is implemented here rather than taken from libsystemd: it
// is one datagram per message to the unix socket named by $NOTIFY_SOCKET
// (a path, or "@name" in the abstract namespace), so irontuned needs no
// libsystemd to build or run, and tests exercise the very code systemd
// talks to.
//
// Without a socket (not started by systemd) every call does nothing.
// Threads: Notify from any thread; Start and Stop from one thread. The
// callbacks given to Start run on the notifier's own thread.
#ifndef IRONTUNE_DAEMON_PROCESS_SYSTEMD_NOTIFY_H_
#define IRONTUNE_DAEMON_PROCESS_SYSTEMD_NOTIFY_H_

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace irontune {

struct NotifyConfig {
  // $NOTIFY_SOCKET; empty: not under systemd, nothing is sent.
  std::string socket;
  // $WATCHDOG_USEC (when $WATCHDOG_PID is unset or ours); zero: no
  // watchdog pings.
  absl::Duration watchdog = absl::ZeroDuration();
  // How often STATUS= is refreshed (sent only when its text changed).
  absl::Duration status_period = absl::Seconds(1);

  // Reads the variables above from the environment. A malformed
  // WATCHDOG_USEC counts as unset.
  static NotifyConfig FromEnvironment();
};

class SystemdNotifier {
 public:
  explicit SystemdNotifier(NotifyConfig config);
  ~SystemdNotifier();  // Stop()
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  bool enabled() const { return !config_.socket.empty(); }
  const NotifyConfig& config() const { return config_; }

  // Sends `message` ("READY=1", "STATUS=...", several lines allowed) as one
  // datagram. OK without a socket; FailedPrecondition naming the socket
  // when it cannot be sent.
  absl::Status Notify(std::string_view message);

  // Sends STOPPING=1 with STATUS=shutting down; from then on the thread
  // sends no STATUS= (pings go on while the worker lives). Any thread.
  void Stopping();

  // Starts the thread that sends STATUS=status() when it changes and, with
  // a watchdog, WATCHDOG=1 every watchdog/2 while alive() is true. Nothing
  // without a socket. REQUIRES: not started.
  void Start(std::function<std::string()> status, std::function<bool()> alive);
  // Ends the thread (no more pings); it cannot be started again.
  // Idempotent.
  void Stop();

 private:
  void Loop();
  void Tick(std::string& last_status, bool& was_alive, absl::Time& next_ping);

  const NotifyConfig config_;
  std::function<std::string()> status_;
  std::function<bool()> alive_;
  std::thread thread_;
  absl::Notification stop_;
  std::atomic<bool> stopping_{false};
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_PROCESS_SYSTEMD_NOTIFY_H_
