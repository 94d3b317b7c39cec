// Daemon: everything irontuned runs, put together and taken apart in order.
//
// Start: the device lock (one irontuned per NPU, whatever the state dir:
// RUNTIME_DIR/irontuned-DEVICE.lock), the state dir (created if missing)
// and its lock (one irontuned per state dir, the directory itself locked so
// deleting irontuned.lock lets no second one in; a second one fails naming
// the pid holding it), the device, the databases' quick_check (a damaged
// one is refused, or moved aside with move_corrupt_aside), the measurement
// cache (irontune.db), the job store (jobs.db; jobs a crash interrupted are
// marked so), the device worker and the cached answers beside it
// (--cached-answers; daemon/scheduler/cached_answers.h), then the gRPC
// server on every listen
// address with health (grpc.health.v1, SERVING) and reflection, each
// listener's calls checked for a token before their message is read
// (call_gate.h) and gRPC's caps set (ServerCaps). A unix
// socket a live irontuned answers on is never removed: start fails naming
// it.
//
// Shutdown, in order: health NOT_SERVING and every new request refused
// (UNAVAILABLE); the cached answers stop (their waiting jobs end
// UNAVAILABLE, those being answered are cancelled); queued jobs end
// UNAVAILABLE "irontuned is shutting down";
// the running job is cancelled at its next round (or finishes); the worker
// is joined; the server stops (streams have ended with their jobs); the
// databases are closed; the lock is released.
//
// While the device worker is hung (no heartbeat within --stall-limit), or a
// cached answer has run that long, health answers NOT_SERVING, and SERVING
// once it beats (health_watch.h).
//
// systemd (systemd_notify.h): READY=1 once listening, then STATUS= (queue
// length, running job) and WATCHDOG=1 pings while the device worker is
// alive; STOPPING=1 as shutdown begins.
//
// No gRPC types in this header. Threads: Start and Shutdown from one thread.
#ifndef IRONTUNE_DAEMON_PROCESS_DAEMON_H_
#define IRONTUNE_DAEMON_PROCESS_DAEMON_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/npu/device.h"
#include "daemon/process/systemd_notify.h"
#include "daemon/scheduler/admission.h"
#include "daemon/scheduler/cached_answers.h"
#include "daemon/scheduler/runner.h"
#include "daemon/store/jobs_store.h"

namespace irontune {

class Cache;

inline constexpr char kDefaultListen[] = "unix:/run/irontune/irontuned.sock";
inline constexpr char kDefaultStateDir[] = "/var/lib/irontune";
inline constexpr char kDefaultRuntimeDir[] = "/run/irontune";

enum class SimClock { kVirtual, kRealTime };

// gRPC's own caps on what callers may hold of the server, set on its
// ServerBuilder (docs/operations.md "Connections and calls").
struct ServerCaps {
  // Threads gRPC's resource quota allows (--grpc-threads): each call in
  // progress holds one, a stream for its whole life; past it a new call is
  // RESOURCE_EXHAUSTED. Keep it above --max-streams.
  int threads = 512;
  // Memory gRPC's resource quota allows its connections (--grpc-memory):
  // read buffers and messages being received. Under pressure gRPC shrinks
  // its flow-control windows, then closes the connections holding the
  // most. At least --max-message-bytes.
  uint64_t memory_bytes = uint64_t{2} << 30;
  // Calls one connection may have open at once
  // (GRPC_ARG_MAX_CONCURRENT_STREAMS, --max-calls-per-connection).
  int calls_per_connection = 64;
  // A call's headers, at most (GRPC_ARG_MAX_METADATA_SIZE,
  // --max-header-bytes).
  int header_bytes = 8 << 10;
  // A connection's age past which gRPC closes it, its calls finished first
  // (GRPC_ARG_MAX_CONNECTION_AGE_MS); infinite: never
  // (DaemonOptions::max_connection_age_s).
  absl::Duration max_connection_age = absl::InfiniteDuration();
};

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
  // Set at start (`xrt-smi configure --pmode` on a real NPU); nullopt
  // leaves the NPU's.
  std::optional<PowerMode> power_mode;
  // The xrt-smi program a real NPU is examined with; "" finds it
  // ($XILINX_XRT/bin, /opt/xilinx/xrt/bin, then PATH).
  std::string xrt_smi;
  // Security (docs/security.md). The unix sockets' group (empty: the
  // daemon's own); they are made mode 0660 whatever the umask.
  std::string socket_group;
  // Serve plaintext off loopback (logged as a warning).
  bool insecure = false;
  // TLS for every TCP address: PEM files; empty: none.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;  // also ask for and verify client certificates
  // The tokens file (daemon/edge/auth.h); empty: local callers only.
  std::string tokens;
  // Without tokens, loopback TCP and unix-abstract callers are admin too
  // (logged as a warning); without it such a listener is refused.
  bool allow_loopback_without_tokens = false;
  // Roles of the unix socket paths' callers by OS user or group
  // (daemon/edge/local_peer.h): "WHO:ROLE" rules, and the role of
  // everyone else who can open the socket ("admin", "submit", "none").
  std::vector<std::string> local_roles;
  std::string local_default_role = "admin";
  ServerCaps caps;
  // A build command speaking docs/builder-protocol.md, for a real NPU;
  // empty: the simulated NPU's own builder.
  std::string builder_command;
  // Variables of irontuned's environment the build command gets besides
  // PATH, HOME, LANG, LC_ALL and TMPDIR (--builder-env: names, or prefixes
  // ending `*`; daemon/builder/builder_env.h); nothing else is passed.
  std::vector<std::string> builder_env;
  double build_timeout_s = 600;
  int build_jobs = 0;  // builds at once; 0: the cores less one, at least 1
  uint64_t artifact_store_bytes = uint64_t{10} << 30;  // 0: no cap
  // Designs are built ahead on build_jobs threads
  // (daemon/builder/build_pool.h); false: each when it is needed, on the device
  // worker.
  bool build_ahead = true;
  // An Autotune's later shapes' other settings are built with threads to
  // spare (BuildPool::PrefetchSpare); false: only what is asked for.
  bool build_spare = true;
  // Shapes an Autotune searches at once (AutotuneOptions.shapes_at_once):
  // a later one is timed while those before it wait for builds.
  int shapes_at_once = kShapesAtOnce;
  // The simulated NPU's build cost a design, in seconds
  // (daemon/sim/sim_builder.h): spent on the real-time clock as CPU time
  // (or slept, sim_build_sleep), only counted on the virtual one.
  double sim_build_seconds = 4.0;
  // SimOptions::hang_after_runs (--sim-hang-after-runs).
  int64_t sim_hang_after_runs = -1;
  bool sim_build_sleep = false;
  // systemd's notify socket and watchdog (NotifyConfig::FromEnvironment()
  // in irontuned); empty: no notifications.
  NotifyConfig notify;
  // The device worker counts as hung, and watchdog pings stop, when it
  // spends longer than this in one device call, build or task.
  absl::Duration stall_limit = absl::Seconds(120);
  // The fleet (docs/fleet.md): the PostgreSQL store's URL (libpq's; empty:
  // no fleet, this box alone), the passfile its password is in, the box's
  // name in leases ("" : HOSTNAME DEVICE) and how long a claim holds
  // unrenewed.
  std::string fleet;
  std::string fleet_password_file;
  std::string fleet_name;
  double fleet_lease_s = 30;
  // "box", or "front": a fleet's front, with no NPU (FrontService); it
  // maps generations to platforms (FleetPlatforms::Parse) and shares at
  // most `fleet_connections` connections to the store.
  std::string role = "box";
  std::vector<std::string> fleet_platforms;
  int fleet_connections = 8;
  // Seconds after which gRPC closes a client's connection, its calls
  // finished first; 0: never; negative: a front's default (300 s), none on
  // a box.
  double max_connection_age_s = -1;
  // Threads answering jobs whose figures are all stored, beside the
  // device worker (--cached-answers; daemon/scheduler/cached_answers.h);
  // 0: every job is queued for the worker.
  int cached_answers = kCachedAnswerThreads;
  // Tests only: replaces the DeviceJobRunner (and turns cached answers
  // off: every job goes through it).
  std::unique_ptr<JobRunner> runner;
  // Admission limits (admission.h), the ended jobs kept in memory (bytes)
  // and in jobs.db.
  AdmissionLimits limits;
  size_t history_bytes = size_t{64} << 20;
  JobStoreLimits job_store;
  // Where the per-device lock lives: this; else $RUNTIME_DIRECTORY; else
  // /run/irontune where it can be written. With none of them (a simulated
  // NPU run by hand), no device lock is taken, and the log says so.
  std::string runtime_dir;
  // A database failing quick_check is moved aside (PATH.corrupt-TIME) and
  // a fresh one started, instead of refusing to start.
  bool move_corrupt_aside = false;
  // Tests only: sqlite::SetMaxPageCountForTesting (a full disk); 0: none.
  int64_t test_max_database_pages = 0;
  // Tests only: the /proc a real NPU's timing hygiene reads (CPU wait,
  // completion IRQs), so a loaded test machine does not refuse figures;
  // empty: /proc.
  std::string test_proc_root;
};

class Daemon {
 public:
  // Starts everything. FailedPrecondition when another irontuned holds the
  // device or the state dir (naming its pid), answers on a unix socket to
  // listen on, or `device` is not built in; DataLoss for a damaged database
  // (saying what to do); the error of whatever else fails to start.
  // With role "front": no device, lock, state dir or cache; InvalidArgument
  // without --fleet or for a bad --fleet-platform, and the store's errors
  // as a box's.
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
  // The device lock's fd; -1 when there is no runtime dir (logged).
  absl::StatusOr<int> TakeDeviceLock(const DaemonOptions& options);
  // jobs.db checked, opened, and its interrupted jobs marked.
  absl::Status OpenJobStore(const std::filesystem::path& dir,
                            const DaemonOptions& options,
                            std::unique_ptr<JobStore>& store);
  // Start for role "front".
  static absl::StatusOr<std::unique_ptr<Daemon>> StartFront(
      DaemonOptions options);
  // The queue, the device worker over `device` and `cache` (the file at
  // `cache_path`), then the cached answers beside it.
  absl::Status StartWorker(DaemonOptions& options,
                           std::unique_ptr<Device> device,
                           std::unique_ptr<Cache> cache,
                           const std::string& cache_path);
  // With --cached-answers above 0 (and no test runner): the threads
  // answering from the cache beside the worker, over their own connections
  // to `cache_path`. REQUIRES: StartWorker succeeded.
  absl::Status StartCachedAnswers(const DaemonOptions& options,
                                  const std::string& cache_path);
  // With --fleet: reaches the store (its schema migrated), keeps the
  // cache's outbox, and after the worker starts, claims shards. The
  // store's errors (a URL that does not parse, credentials refused, a
  // newer schema) stop the start, each naming which.
  absl::Status OpenFleet(const DaemonOptions& options, Cache& cache);
  void StartFleetBox(const DaemonOptions& options);
  // Health NOT_SERVING while the device worker is hung (health_watch.h).
  void WatchHealth(const DaemonOptions& options);
  // READY=1, then STATUS= and watchdog pings (systemd_notify.h).
  void StartNotifier(const DaemonOptions& options);
  std::unique_ptr<Parts> parts_;
};

// Makes the state dir `dir` where it is missing, mode 0700 whatever the
// umask; an existing one keeps its mode. FailedPrecondition naming it.
absl::StatusOr<std::filesystem::path> MakeStateDir(const std::string& dir);

// Takes the lock file `path` (flock, holding our pid), created 0600. Returns
// its fd (kept open for the process's life; closing it releases the lock).
// FailedPrecondition "another irontuned (pid N) holds PATH" when taken.
absl::StatusOr<int> TakeLockFile(const std::string& path);

// Takes the lock of state dir `dir`: a flock on the directory itself, then
// TakeLockFile(dir/irontuned.lock) for the pid. Returns both fds.
// FailedPrecondition naming the holder's pid when taken.
absl::StatusOr<std::pair<int, int>> TakeStateDirLock(const std::string& dir);

// The device lock's path for `device` ("sim:npu2" -> RUNTIME_DIR/
// irontuned-sim-npu2.lock), `runtime_dir` resolved as DaemonOptions says;
// "" when there is no runtime dir to use.
std::string DeviceLockPath(const std::string& device,
                           const std::string& runtime_dir);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_PROCESS_DAEMON_H_
