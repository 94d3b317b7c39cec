// Daemon: everything irontuned runs, put together and taken apart in order.
//
// Start: the state dir (created if missing), its lock file (one irontuned
// per state dir: a second one fails naming the pid holding it), the device,
// the measurement cache (irontune.db), the job store (jobs.db), the device
// worker, then the gRPC server on every listen address with health
// (grpc.health.v1, SERVING) and reflection.
//
// Shutdown, in order: health NOT_SERVING and every new request refused
// (UNAVAILABLE); queued jobs end UNAVAILABLE "irontuned is shutting down";
// the running job is cancelled at its next round (or finishes); the worker
// is joined; the server stops (streams have ended with their jobs); the
// databases are closed; the lock is released.
//
// systemd (systemd_notify.h): READY=1 once listening, then STATUS= (queue
// length, running job) and WATCHDOG=1 pings while the device worker is
// alive; STOPPING=1 as shutdown begins.
//
// No gRPC types in this header. Threads: Start and Shutdown from one thread.
#ifndef IRONTUNE_DAEMON_SERVER_DAEMON_H_
#define IRONTUNE_DAEMON_SERVER_DAEMON_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/server/runner.h"
#include "daemon/server/systemd_notify.h"

namespace irontune {

class Cache;
class SimDevice;

inline constexpr char kDefaultListen[] = "unix:/run/irontune/irontuned.sock";
inline constexpr char kDefaultStateDir[] = "/var/lib/irontune";

enum class SimClock { kVirtual, kRealTime };

struct DaemonOptions {
  std::string device = "sim:npu2";
  std::vector<std::string> listen = {kDefaultListen};
  std::string state_dir = kDefaultStateDir;
  SimClock sim_clock = SimClock::kRealTime;
  uint64_t sim_seed = 1;
  size_t queue_limit = 64;
  // mlir-aie nightly kernel cycles (daemon/tune/kernel_cycles.h) for the
  // GEMM bound; empty: none, every setting is timed.
  std::string kernel_cycles;
  // Security (docs/security.md). The unix sockets' group (empty: the
  // daemon's own); they are made mode 0660 whatever the umask.
  std::string socket_group;
  // Serve plaintext off loopback (logged as a warning).
  bool insecure = false;
  // TLS for every TCP address: PEM files; empty: none.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;  // also ask for and verify client certificates
  // The tokens file (daemon/server/auth.h); empty: local callers only.
  std::string tokens;
  // systemd's notify socket and watchdog (NotifyConfig::FromEnvironment()
  // in irontuned); empty: no notifications.
  NotifyConfig notify;
  // The device worker counts as hung, and watchdog pings stop, when it
  // spends longer than this in one device call, build or task.
  absl::Duration stall_limit = absl::Seconds(120);
  // Tests only: replaces the DeviceJobRunner.
  std::unique_ptr<JobRunner> runner;
};

class Daemon {
 public:
  // Starts everything. FailedPrecondition when another irontuned holds the
  // state dir (naming its pid) or `device` is not built in; the error of
  // whatever else fails to start.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(DaemonOptions options);
  ~Daemon();  // Shutdown()
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // As the file comment says; idempotent.
  void Shutdown();

  // The addresses actually listened on ("unix:/x.sock", "127.0.0.1:50051"
  // with the port a ":0" request was given).
  const std::vector<std::string>& addresses() const;

 private:
  struct Parts;
  explicit Daemon(std::unique_ptr<Parts> parts);
  absl::Status StartWorker(DaemonOptions& options,
                           std::unique_ptr<SimDevice> device,
                           std::unique_ptr<Cache> cache);
  // READY=1, then STATUS= and watchdog pings (systemd_notify.h).
  void StartNotifier(const DaemonOptions& options);
  std::unique_ptr<Parts> parts_;
};

// Takes the lock file `path` (flock, holding our pid). Returns its fd (kept
// open for the process's life; closing it releases the lock).
// FailedPrecondition "another irontuned (pid N) holds PATH" when taken.
absl::StatusOr<int> TakeLockFile(const std::string& path);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SERVER_DAEMON_H_
