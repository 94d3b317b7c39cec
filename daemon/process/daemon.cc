#include "daemon/process/daemon.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "daemon/base/log_safe.h"
#include "daemon/builder/build_pool.h"
#include "daemon/builder/builder_env.h"
#include "daemon/builder/command_builder.h"
#include "daemon/edge/auth.h"
#include "daemon/edge/call_gate.h"
#include "daemon/edge/front_service.h"
#include "daemon/edge/local_peer.h"
#include "daemon/edge/refusal_log.h"
#include "daemon/edge/service.h"
#include "daemon/edge/stream_quota.h"
#include "daemon/edge/tls.h"
#include "daemon/edge/unix_listener.h"
#include "daemon/fleet/fleet_pool.h"
#include "daemon/fleet/fleet_store.h"
#include "daemon/fleet/fleet_toolchain.h"
#include "daemon/fleet/fleet_url.h"
#include "daemon/fleet/job_notices.h"
#include "daemon/process/health_watch.h"
#include "daemon/scheduler/fleet_box.h"
#include "daemon/scheduler/fleet_front.h"
#include "daemon/sim/presets.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "daemon/store/cache.h"
#include "daemon/store/cache_outbox.h"
#include "daemon/store/sqlite.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "spdlog/spdlog.h"

#ifdef IRONTUNE_HAVE_XRT
#include "daemon/xrt/xrt_device.h"
#endif

#ifndef IRONTUNE_VERSION
#define IRONTUNE_VERSION "unknown"
#endif

namespace irontune {
namespace {

// How long in-flight calls get once the worker has stopped.
constexpr absl::Duration kServerGrace = absl::Seconds(2);

absl::Status Errno(const std::string& what) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, ": ", std::strerror(errno)));
}

// Whether something accepts connections on the unix socket `path`.
bool Answers(const std::string& path) {
  sockaddr_un addr = {};
  if (path.size() >= sizeof(addr.sun_path)) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool answered = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr),
                                  sizeof(addr)) == 0;
  ::close(fd);
  return answered;
}

// Removes a unix socket left by an earlier run and makes its directory. A
// socket something answers on (another irontuned, whatever its state dir)
// is left alone: FailedPrecondition naming it.
absl::Status PrepareUnixSocket(const std::string& address) {
  if (!absl::StartsWith(address, "unix:")) return absl::OkStatus();
  const std::filesystem::path p{UnixSocketPath(address)};
  std::error_code ec;
  if (p.has_parent_path())
    std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create ", p.parent_path().string(), ": ", ec.message()));
  }
  if (!std::filesystem::is_socket(p, ec)) return absl::OkStatus();
  if (Answers(p.string())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "another irontuned answers on ", address,
        "; it is left alone. Stop that daemon, or listen elsewhere "
        "(--listen)"));
  }
  std::filesystem::remove(p, ec);
  return absl::OkStatus();
}

// Checks the database at `path` (sqlite::QuickCheck). A damaged one is
// refused, saying what to do, or with `move_aside` moved aside.
absl::Status CheckDatabase(const std::string& path, bool move_aside,
                           const std::string& losing) {
  absl::Status s = sqlite::QuickCheck(path);
  if (!absl::IsDataLoss(s)) return s;
  if (!move_aside) {
    return absl::DataLossError(absl::StrCat(
        s.message(),
        ". irontuned will not use it. Restore it from a backup, or start "
        "irontuned once with --move-corrupt-aside: it renames the file to ",
        path, ".corrupt-TIME and starts with an empty one (", losing, ")"));
  }
  ASSIGN_OR_RETURN(const std::string aside, sqlite::MoveAside(path));
  spdlog::warn("{}; moved aside to {}, starting with an empty one ({})",
               std::string(s.message()), aside, losing);
  return absl::OkStatus();
}

}  // namespace

namespace {

// The first bytes of `path` ("" when unreadable).
std::string ReadHead(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  ::close(fd);
  return n > 0 ? std::string(buf, n) : std::string();
}

// What start-up reads for security before anything else runs, so a bad
// flag fails at once (docs/security.md).
struct Security {
  std::optional<TlsConfig> tls;
  std::shared_ptr<const Authenticator> auth;
  std::shared_ptr<RefusalLog> refusals = std::make_shared<RefusalLog>();
  std::optional<gid_t> socket_gid;  // nullopt: leave the group as created
  LocalRoles local_roles;           // of the unix socket paths' callers
};

// --local-role and --local-default-role (local_peer.h); with tokens they
// decide nothing, which a warning says.
absl::StatusOr<LocalRoles> LoadLocalRoles(const DaemonOptions& options,
                                          bool tokens,
                                          std::vector<std::string>& warnings) {
  std::vector<LocalRoleRule> rules;
  for (const std::string& text : options.local_roles) {
    ASSIGN_OR_RETURN(LocalRoleRule rule, ParseLocalRoleRule(text));
    rules.push_back(std::move(rule));
  }
  absl::StatusOr<LocalRole> fallback =
      ParseLocalRole(options.local_default_role);
  if (!fallback.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--local-default-role: ", fallback.status().message()));
  }
  if (tokens &&
      (!rules.empty() || fallback->value_or(Role::kSubmit) != Role::kAdmin)) {
    warnings.push_back(
        "--local-role and --local-default-role decide nothing with --tokens: "
        "every caller's token gives its role");
  }
  return LocalRoles(std::move(rules), *fallback);
}

absl::StatusOr<gid_t> ResolveGroup(const std::string& name) {
  const std::optional<gid_t> gid = GroupIdOf(name);
  if (gid.has_value()) return *gid;
  return absl::InvalidArgumentError(
      absl::StrCat("--socket-group ", name, ": no such group"));
}

absl::StatusOr<Security> LoadSecurity(const DaemonOptions& options) {
  Security security;
  ASSIGN_OR_RETURN(security.tls,
                   LoadTls(TlsFiles{options.tls_cert, options.tls_key,
                                    options.tls_client_ca}));
  std::optional<TokenTable> tokens;
  if (!options.tokens.empty()) {
    ASSIGN_OR_RETURN(tokens, TokenTable::Load(options.tokens));
    spdlog::info("{} tokens from {}", tokens->size(), options.tokens);
  }
  std::vector<std::string> warnings;
  ASSIGN_OR_RETURN(security.local_roles,
                   LoadLocalRoles(options, tokens.has_value(), warnings));
  RETURN_IF_ERROR(CheckListen(
      options.listen, security.tls.has_value(), options.insecure,
      tokens.has_value(), options.allow_loopback_without_tokens, &warnings));
  for (const std::string& address : options.listen) {
    if (!GatedBeforeRead(address, security.tls.has_value())) {
      warnings.push_back(absl::StrCat(
          "--insecure: on ", address,
          " a call's token is checked only once its message is read (gRPC "
          "checks it before on TLS, unix and loopback listeners)"));
    }
  }
  for (const std::string& w : warnings) spdlog::warn("{}", w);
  security.auth = std::make_shared<const Authenticator>(
      std::move(tokens), options.allow_loopback_without_tokens);
  if (!options.socket_group.empty()) {
    ASSIGN_OR_RETURN(security.socket_gid, ResolveGroup(options.socket_group));
  }
  return security;
}

}  // namespace

absl::StatusOr<int> TakeLockFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Errno(absl::StrCat("cannot open ", path));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) {
      errno = err;
      return Errno(absl::StrCat("cannot lock ", path));
    }
    std::string pid = n > 0 ? std::string(buf, n) : std::string("unknown");
    pid = std::string(absl::StripAsciiWhitespace(pid));
    return absl::FailedPreconditionError(
        absl::StrCat("another irontuned (pid ", pid, ") holds ", path,
                     "; one irontuned runs per NPU and state dir"));
  }
  const std::string text = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) !=
                                     static_cast<ssize_t>(text.size())) {
    ::close(fd);
    return Errno(absl::StrCat("cannot write ", path));
  }
  return fd;
}

absl::StatusOr<std::pair<int, int>> TakeStateDirLock(const std::string& dir) {
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return Errno(absl::StrCat("cannot open ", dir));
  const std::string file = (std::filesystem::path(dir) / "irontuned.lock");
  if (::flock(dir_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(dir_fd);
    if (err != EWOULDBLOCK) {
      errno = err;
      return Errno(absl::StrCat("cannot lock ", dir));
    }
    std::string pid(absl::StripAsciiWhitespace(ReadHead(file)));
    return absl::FailedPreconditionError(absl::StrCat(
        "another irontuned (pid ", pid.empty() ? "unknown" : pid,
        ") holds the state dir ", dir, "; one irontuned runs per state dir"));
  }
  absl::StatusOr<int> file_fd = TakeLockFile(file);
  if (!file_fd.ok()) {
    ::close(dir_fd);
    return file_fd.status();
  }
  return std::make_pair(dir_fd, *file_fd);
}

std::string DeviceLockPath(const std::string& device,
                           const std::string& runtime_dir) {
  std::string dir = runtime_dir;
  if (const char* env = std::getenv("RUNTIME_DIRECTORY");
      dir.empty() && env != nullptr && *env != '\0') {
    // systemd lists several directories separated by ':'.
    dir = std::string(env).substr(0, std::string(env).find(':'));
  }
  if (dir.empty() && ::access(kDefaultRuntimeDir, W_OK) == 0) {
    dir = kDefaultRuntimeDir;
  }
  if (dir.empty()) return "";
  std::string name = device;
  for (char& c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '-';
  }
  return (std::filesystem::path(dir) /
          absl::StrCat("irontuned-", name, ".lock"))
      .string();
}

struct Daemon::Parts {
  // Declared in start order; torn down by Shutdown in the documented order.
  int device_lock_fd = -1;
  int state_dir_fd = -1;
  int lock_fd = -1;
  // With --builder-command: the artifact store (outlives the worker, which
  // owns the builder) and the builder until the worker takes it.
  std::unique_ptr<ArtifactStore> artifacts;
  std::unique_ptr<Builder> command_builder;
  std::unique_ptr<JobStore> store;
  // With --fleet: the store and the cache's outbox until the box takes
  // them, and the box's toolchain (FleetToolchain: its NPU stack and builder).
  FleetConnection fleet_connection;
  std::unique_ptr<FleetStore> fleet_store;
  std::unique_ptr<CacheOutbox> outbox;
  std::string toolchain;
  std::unique_ptr<JobQueue> queue;
  // With cached answers: what the worker may be rewriting (outlives both).
  std::unique_ptr<CacheWrites> cache_writes;
  std::unique_ptr<DeviceWorker> worker;
  // What the cached answers take from the worker's parts (StartWorker),
  // and the cached answers.
  CachedAnswersOptions cached_options;
  std::unique_ptr<CachedAnswers> cached;
  std::unique_ptr<FleetBox> fleet_box;
  std::unique_ptr<TunerService> service;
  // A front's (--role front): the store's connections, the LISTEN thread,
  // what it does with calls, and its service.
  std::unique_ptr<FleetPool> fleet_pool;
  std::unique_ptr<JobNotices> job_notices;
  std::unique_ptr<FleetFront> fleet_front;
  std::unique_ptr<FrontService> front_service;
  std::unique_ptr<grpc::Server> server;
  // irontuned's own accept loop for its unix socket paths, feeding `server`.
  std::unique_ptr<UnixListeners> unix_listeners;
  std::vector<std::string> addresses;
  std::unique_ptr<SystemdNotifier> notifier;
  std::unique_ptr<HealthWatch> health;
  bool shut_down = false;
};

Daemon::Daemon(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

Daemon::~Daemon() { Shutdown(); }

const std::vector<std::string>& Daemon::addresses() const {
  return parts_->addresses;
}

namespace {

#ifndef IRONTUNE_HAVE_XRT
// The simulated NPUs this irontuned has, "sim:npu2, sim:npu1".
std::string SimDeviceNames() {
  std::vector<std::string> names;
  for (const char* spec : {"sim:npu2", "sim:npu1"})
    if (sim::FindSimPreset(spec) != nullptr) names.push_back(spec);
  return absl::StrJoin(names, ", ");
}
#endif

// A real NPU, `--device xrt:N`.
absl::StatusOr<std::unique_ptr<Device>> OpenXrtDevice(
    const DaemonOptions& options) {
#ifdef IRONTUNE_HAVE_XRT
  ASSIGN_OR_RETURN(const unsigned int index, ParseXrtSpec(options.device));
  XrtDeviceOptions xrt;
  xrt.index = index;
  xrt.smi.path = options.xrt_smi;
  xrt.power_mode = options.power_mode;
  if (!options.test_proc_root.empty()) {
    xrt.hygiene.proc_root = options.test_proc_root;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<XrtDevice> device,
                   XrtDevice::Open(std::move(xrt)));
  // Designs for a real NPU come from an external builder
  // (docs/builder-protocol.md).
  if (options.builder_command.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device ", options.device,
        " needs --builder-command (the program that builds designs for a "
        "real NPU, docs/builder-protocol.md); none is given"));
  }
  return std::unique_ptr<Device>(std::move(device));
#else
  return absl::FailedPreconditionError(absl::StrCat(
      "--device ", options.device,
      ": XRT was not found when this irontuned was built, so it cannot drive "
      "a real NPU; build it with XRT 2.19 or later as docs/npu-box.md says "
      "(\"Building with XRT\"). It has the simulated NPUs: ",
      SimDeviceNames()));
#endif
}

absl::StatusOr<std::unique_ptr<Device>> OpenDevice(
    const DaemonOptions& options) {
  if (absl::StartsWith(options.device, "xrt:")) return OpenXrtDevice(options);
  SimOptions sim;
  sim.seed = options.sim_seed;
  sim.clock = options.sim_clock == SimClock::kVirtual
                  ? SimOptions::Clock::kVirtual
                  : SimOptions::Clock::kRealTime;
  if (options.power_mode) sim.power_mode = *options.power_mode;
  sim.hang_after_runs = options.sim_hang_after_runs;
  ASSIGN_OR_RETURN(std::unique_ptr<SimDevice> device,
                   MakeSimDevice(options.device, sim));
  return device;
}

// The queue budget and the stream limits in force, at start.
void LogQueueLimits(const AdmissionLimits& limits,
                    const StreamLimits& streams) {
  spdlog::info(
      "queue: {} of requests at most, {} of one client's; streams: {}, {} "
      "of one caller's, the last {} kept for admins",
      FormatBytes(limits.queue_memory_bytes),
      FormatBytes(limits.client_queue_bytes), streams.total, streams.per_caller,
      streams.admin_slots);
}

// Listens on every address; the addresses listened on, with the port a
// ":0" address was given.
// gRPC's caps (ServerCaps) and the largest message, on `builder`.
absl::Status ApplyCaps(const ServerCaps& caps, uint64_t max_message_bytes,
                       grpc::ServerBuilder& builder) {
  if (caps.memory_bytes < max_message_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grpc-memory ", caps.memory_bytes,
                     " is less than --max-message-bytes ", max_message_bytes,
                     ": no message that large could be received"));
  }
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<uint64_t>(max_message_bytes, std::numeric_limits<int>::max())));
  grpc::ResourceQuota quota("irontuned");
  quota.Resize(static_cast<size_t>(caps.memory_bytes));
  quota.SetMaxThreads(caps.threads);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             caps.calls_per_connection);
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, caps.header_bytes);
  if (caps.max_connection_age != absl::InfiniteDuration()) {
    // Clients reconnect, and re-resolve, once their connection is this old;
    // the calls under way get the grace to finish.
    const int age_ms =
        static_cast<int>(absl::ToInt64Milliseconds(caps.max_connection_age));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, age_ms);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               std::numeric_limits<int>::max());
    spdlog::info("gRPC: a connection closes once {} old",
                 absl::FormatDuration(caps.max_connection_age));
  }
  spdlog::info(
      "gRPC caps: {} threads, {} of connection memory, {} calls a "
      "connection, {} of headers a call",
      caps.threads, FormatBytes(caps.memory_bytes), caps.calls_per_connection,
      FormatBytes(static_cast<uint64_t>(caps.header_bytes)));
  return absl::OkStatus();
}

// Adds every address of `listen` but the unix socket paths (`unix`
// serves those) to `builder`; the ports gRPC picks go to `ports`.
void AddGrpcListeners(const std::vector<std::string>& listen,
                      const Security& security, grpc::ServerBuilder& builder,
                      std::vector<std::unique_ptr<int>>& ports) {
  for (const std::string& address : listen) {
    ports.push_back(std::make_unique<int>(0));
    if (absl::StartsWith(address, "unix:")) continue;
    builder.AddListeningPort(address,
                             GatedCredentials(address, security.tls,
                                              security.auth, security.refusals),
                             ports.back().get());
  }
}

absl::StatusOr<std::vector<std::string>> Listen(
    const std::vector<std::string>& listen, const DaemonOptions& options,
    const Security& security, grpc::Service* service,
    std::unique_ptr<grpc::Server>& server,
    std::unique_ptr<UnixListeners>& unix) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  RETURN_IF_ERROR(
      ApplyCaps(options.caps, options.limits.message_bytes, builder));
  if (listen.empty()) {
    return absl::InvalidArgumentError("--listen: no address given");
  }
  for (const std::string& address : listen) {
    RETURN_IF_ERROR(PrepareUnixSocket(address));
  }
  ASSIGN_OR_RETURN(
      unix, UnixListeners::Bind(listen, security.socket_gid,
                                security.local_roles, security.refusals));
  unix->Register(builder, [&security](std::shared_ptr<PeerSlot> slot) {
    return SlotCredentials(std::move(slot), security.auth, security.refusals);
  });
  std::vector<std::unique_ptr<int>> ports;
  AddGrpcListeners(listen, security, builder, ports);
  builder.RegisterService(service);
  server = builder.BuildAndStart();
  if (server == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", absl::StrJoin(listen, ", "),
        security.tls ? " (in use, not an address, or the TLS key does not "
                       "match the certificate)"
                     : " (in use, or not an address)"));
  }
  unix->Start();
  std::vector<std::string> addresses;
  for (size_t i = 0; i < listen.size(); ++i) {
    const std::string& a = listen[i];
    const bool unix_socket = absl::StartsWith(a, "unix:");
    if (*ports[i] == 0 && !unix_socket) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", a));
    }
    addresses.push_back(absl::EndsWith(a, ":0") && !unix_socket
                            ? absl::StrCat(a.substr(0, a.size() - 1), *ports[i])
                            : a);
  }
  return addresses;
}

// The simulated NPU's builder, with its build cost (--sim-build-seconds).
std::unique_ptr<Builder> MakeSimBuilder(const DaemonOptions& options) {
  SimBuildCost cost;
  cost.per_design = absl::Seconds(options.sim_build_seconds);
  cost.spend = options.sim_clock == SimClock::kVirtual
                   ? SimBuildCost::Spend::kCount
               : options.sim_build_sleep ? SimBuildCost::Spend::kSleep
                                         : SimBuildCost::Spend::kCpu;
  return std::make_unique<SimBuilder>(cost);
}

// `inner` behind a BuildPool of --build-jobs threads (none with
// --no-build-ahead).
std::unique_ptr<BuildPool> MakeBuildPool(const DaemonOptions& options,
                                         std::unique_ptr<Builder> inner) {
  BuildPoolOptions o;
  o.threads =
      !options.build_ahead ? 0
      : options.build_jobs > 0
          ? options.build_jobs
          : std::max(1,
                     static_cast<int>(std::thread::hardware_concurrency()) - 1);
  o.spare = options.build_spare;
  spdlog::info("build pool: {} threads{}", o.threads,
               o.spare ? "" : ", none building with time to spare");
  return std::make_unique<BuildPool>(std::move(inner), o);
}

// With --builder-command, the CommandBuilder and its artifact store in
// DIR/artifacts, into `builder` and `artifacts`; nothing otherwise.
absl::Status OpenCommandBuilder(const DaemonOptions& options,
                                const std::filesystem::path& dir,
                                std::unique_ptr<ArtifactStore>& artifacts,
                                std::unique_ptr<Builder>& builder) {
  RETURN_IF_ERROR(CheckBuilderEnvNames(options.builder_env));
  if (options.builder_command.empty()) return absl::OkStatus();
  if (absl::StartsWith(options.device, "sim:")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--builder-command builds designs for a real NPU (--device xrt:N); "
        "the simulated NPU ",
        options.device, " builds its own and cannot load them"));
  }
  ASSIGN_OR_RETURN(artifacts,
                   ArtifactStore::Open((dir / "artifacts").string(),
                                       options.artifact_store_bytes));
  CommandBuilderOptions o;
  o.command = options.builder_command;
  o.pass_env = options.builder_env;
  o.timeout = absl::Seconds(options.build_timeout_s);
  o.jobs =
      options.build_jobs > 0
          ? options.build_jobs
          : std::max(1,
                     static_cast<int>(std::thread::hardware_concurrency()) - 1);
  ASSIGN_OR_RETURN(builder, CommandBuilder::Create(o, artifacts.get()));
  spdlog::info(
      "builder: {} ({} at once, {} s timeout); artifacts in {}; its "
      "environment: {}{}{}",
      builder->Environment(), o.jobs, options.build_timeout_s, artifacts->dir(),
      absl::StrJoin(kBuilderBaseEnv, " "), o.pass_env.empty() ? "" : " ",
      absl::StrJoin(o.pass_env, " "));
  return absl::OkStatus();
}

// What STATUS= says: the running job and the queue length, and a hung
// worker.
std::string StatusText(const WorkerStatus& worker, size_t queued,
                       absl::Duration since_beat, absl::Duration stall_limit) {
  std::string text =
      worker.running
          ? absl::StrCat("running ",
                         worker.running->kind() == v1::JOB_KIND_AUTOTUNE
                             ? "autotune "
                             : "measure ",
                         worker.running->id(), " for ",
                         LogSafe(worker.running->client()))
          : std::string("idle");
  absl::StrAppend(&text, "; ", queued, queued == 1 ? " job" : " jobs",
                  " queued");
  if (since_beat > stall_limit) {
    absl::StrAppend(&text, "; device worker stuck for ",
                    absl::ToInt64Seconds(since_beat), " s");
  }
  return text;
}

}  // namespace

absl::StatusOr<std::filesystem::path> MakeStateDir(const std::string& dir) {
  std::error_code ec;
  const bool existed = std::filesystem::exists(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("--state-dir ", dir, ": ", ec.message()));
  }
  // Made here: private whatever the umask (a dir made by systemd's
  // StateDirectory= or by hand keeps the mode it was given).
  if (!existed && ::chmod(dir.c_str(), 0700) != 0) {
    return Errno(absl::StrCat("--state-dir ", dir, ": cannot chmod 0700"));
  }
  return std::filesystem::path(dir);
}

absl::StatusOr<int> Daemon::TakeDeviceLock(const DaemonOptions& options) {
  const std::string path = DeviceLockPath(options.device, options.runtime_dir);
  if (path.empty()) {
    spdlog::warn(
        "no runtime dir (--runtime-dir, $RUNTIME_DIRECTORY or a writable {}): "
        "no device lock taken, so only the state dir's lock keeps a second "
        "irontuned off {}",
        kDefaultRuntimeDir, options.device);
    return -1;
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(),
                                      ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the runtime dir of ", path, ": ",
                     ec.message(), " (--runtime-dir)"));
  }
  return TakeLockFile(path);
}

absl::Status Daemon::OpenJobStore(const std::filesystem::path& dir,
                                  const DaemonOptions& options,
                                  std::unique_ptr<JobStore>& store) {
  const std::string path = (dir / "jobs.db").string();
  RETURN_IF_ERROR(CheckDatabase(path, options.move_corrupt_aside,
                                "past jobs' results are lost"));
  ASSIGN_OR_RETURN(store, JobStore::Open(path, options.job_store));
  ASSIGN_OR_RETURN(const std::vector<std::string> lost,
                   store->MarkInterrupted());
  for (const std::string& id : lost) {
    spdlog::warn("job {} was interrupted: irontuned stopped while it ran", id);
  }
  return absl::OkStatus();
}

void Daemon::WatchHealth(const DaemonOptions& options) {
  Parts& p = *parts_;
  DeviceWorker* worker = p.worker.get();
  const CachedAnswers* cached = p.cached.get();
  grpc::HealthCheckServiceInterface* health = p.server->GetHealthCheckService();
  const absl::Duration stall = options.stall_limit;
  p.health = std::make_unique<HealthWatch>(
      [worker, cached, stall] {
        return worker->heartbeat().Alive(stall) &&
               (cached == nullptr || cached->Alive(stall));
      },
      [health](bool serving) {
        health->SetServingStatus(serving);
        health->SetServingStatus(v1::Tuner::service_full_name(), serving);
      });
  p.health->Start();
}

void Daemon::StartNotifier(const DaemonOptions& options) {
  Parts& p = *parts_;
  p.notifier = std::make_unique<SystemdNotifier>(options.notify);
  if (!p.notifier->enabled()) return;
  absl::Status ready = p.notifier->Notify("READY=1");
  if (!ready.ok()) spdlog::warn("systemd: {}", ready.ToString());
  const absl::Duration stall = options.stall_limit;
  JobQueue* queue = p.queue.get();
  DeviceWorker* worker = p.worker.get();
  p.notifier->Start(
      [queue, worker, stall] {
        return StatusText(worker->Status(), queue->size(),
                          worker->heartbeat().SinceBeat(), stall);
      },
      [worker, stall] { return worker->heartbeat().Alive(stall); });
  if (options.notify.watchdog > absl::ZeroDuration()) {
    spdlog::info(
        "systemd watchdog: a ping every {} while the device worker is "
        "alive (stall limit {})",
        absl::FormatDuration(options.notify.watchdog / 2),
        absl::FormatDuration(stall));
  }
}

namespace {

// The service's parts and settings, all but the security's.
ServiceDeps DepsOf(const DaemonOptions& options, ServiceDeps deps,
                   const std::string& cache_path, const Platform& platform,
                   const StreamLimits& streams) {
  deps.device_spec = options.device;
  deps.version = IRONTUNE_VERSION;
  deps.cache_path = cache_path;
  deps.cache_platform = platform.name;
  deps.cache_power_mode = platform.power_mode;
  deps.limits = options.limits;
  deps.streams = streams;
  LogQueueLimits(options.limits, streams);
  deps.shapes_at_once = options.shapes_at_once;
  deps.history_bytes = options.history_bytes;
  return deps;
}

std::string HostName() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
}

}  // namespace

absl::Status Daemon::OpenFleet(const DaemonOptions& options, Cache& cache) {
  Parts& p = *parts_;
  const std::string name = options.fleet_name.empty()
                               ? absl::StrCat(HostName(), " ", options.device)
                               : options.fleet_name;
  FleetUrlOptions url_options;
  url_options.password_file = options.fleet_password_file;
  url_options.application_name = absl::StrCat("irontuned box ", name);
  ASSIGN_OR_RETURN(p.fleet_connection,
                   ResolveFleetUrl(options.fleet, url_options));
  ASSIGN_OR_RETURN(p.fleet_store, FleetStore::Open(p.fleet_connection, name));
  ASSIGN_OR_RETURN(p.outbox, cache.KeepOutbox());
  return absl::OkStatus();
}

void Daemon::StartFleetBox(const DaemonOptions& options) {
  Parts& p = *parts_;
  if (p.fleet_store == nullptr) return;
  FleetBoxOptions box;
  box.connection = p.fleet_connection;
  box.name = p.fleet_store->name();
  box.toolchain = p.toolchain;
  box.lease = absl::Seconds(options.fleet_lease_s);
  box.stall_limit = options.stall_limit;
  box.limits = options.limits;
  box.shapes_at_once = options.shapes_at_once;
  p.fleet_box = std::make_unique<FleetBox>(
      std::move(box), std::move(p.fleet_store), std::move(p.outbox),
      p.worker.get(), p.queue.get());
  p.fleet_box->Start();
}

absl::Status Daemon::StartWorker(DaemonOptions& options,
                                 std::unique_ptr<Device> device,
                                 std::unique_ptr<Cache> cache,
                                 const std::string& cache_path) {
  Parts& p = *parts_;
  p.queue = std::make_unique<JobQueue>(options.queue_limit,
                                       options.limits.client_queue_quota);
  WorkerParts wp;
  wp.memory_limit_bytes = options.limits.memory_limit_bytes;
  const StackVersions stack = device->GetStackVersions();
  spdlog::info("{}: {}", options.device, DescribeStack(stack));
  wp.device = std::move(device);
  std::unique_ptr<BuildPool> pool =
      MakeBuildPool(options, p.command_builder ? std::move(p.command_builder)
                                               : MakeSimBuilder(options));
  const BuildPool* pool_ptr = pool.get();  // the worker owns it
  wp.build_stats = [pool_ptr] { return pool_ptr->stats(); };
  wp.build_jobs = pool_ptr->threads();
  p.toolchain = FleetToolchain(pool_ptr->Environment(), stack);
  p.cached_options.stack = stack;
  p.cached_options.builder_environment = pool_ptr->Environment();
  p.cached_options.checks_fit = pool_ptr->ChecksFit();
  p.cached_options.build_jobs = pool_ptr->threads();
  wp.builder = std::move(pool);
  wp.cache = std::move(cache);
  const bool cached = options.cached_answers > 0 && options.runner == nullptr;
  wp.runner = options.runner
                  ? std::move(options.runner)
                  : std::make_unique<DeviceJobRunner>(options.kernel_cycles,
                                                      options.shapes_at_once);
  if (cached) {
    ASSIGN_OR_RETURN(std::unique_ptr<CacheEpoch> epoch,
                     CacheEpoch::Open(cache_path));
    p.cache_writes = std::make_unique<CacheWrites>(std::move(epoch));
    wp.writes = p.cache_writes.get();
  }
  p.worker = std::make_unique<DeviceWorker>(std::move(wp), p.queue.get(),
                                            p.store.get());
  RETURN_IF_ERROR(p.worker->Start());
  return StartCachedAnswers(options, cache_path);
}

absl::Status Daemon::StartCachedAnswers(const DaemonOptions& options,
                                        const std::string& cache_path) {
  Parts& p = *parts_;
  if (p.cache_writes == nullptr) return absl::OkStatus();
  CachedAnswersOptions o = p.cached_options;
  o.writes = p.cache_writes.get();
  o.threads = options.cached_answers;
  o.waiting = options.queue_limit;
  o.cache_path = cache_path;
  DeviceWorker* worker = p.worker.get();
  const Platform platform = worker->Status().platform;
  o.cache_platform = platform.name;
  o.cache_power_mode = platform.power_mode;
  o.platform = [worker] { return worker->Status().platform; };
  o.rewrites = [worker] { return worker->tasks_run(); };
  o.costs = &worker->costs();
  p.cached = std::make_unique<CachedAnswers>(
      std::move(o),
      std::make_unique<DeviceJobRunner>(options.kernel_cycles,
                                        options.shapes_at_once),
      p.queue.get(), p.store.get());
  RETURN_IF_ERROR(p.cached->Start());
  spdlog::info(
      "cached answers: {} threads answer the jobs whose figures are all "
      "stored, beside the device worker",
      options.cached_answers);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::StartFront(
    DaemonOptions options) {
  auto daemon = std::unique_ptr<Daemon>(new Daemon(std::make_unique<Parts>()));
  Parts& p = *daemon->parts_;
  if (options.fleet.empty()) {
    return absl::InvalidArgumentError(
        "--role front needs --fleet URL: a front serves the fleet's store");
  }
  ASSIGN_OR_RETURN(const StreamLimits streams, StreamLimitsOf(options.limits));
  ASSIGN_OR_RETURN(const Security security, LoadSecurity(options));
  ASSIGN_OR_RETURN(FleetPlatforms platforms,
                   FleetPlatforms::Parse(options.fleet_platforms));
  const std::string name = options.fleet_name.empty()
                               ? absl::StrCat(HostName(), " front")
                               : options.fleet_name;
  FleetUrlOptions url;
  url.password_file = options.fleet_password_file;
  url.application_name = absl::StrCat("irontuned front ", name);
  ASSIGN_OR_RETURN(p.fleet_connection, ResolveFleetUrl(options.fleet, url));
  // Reached once now, so bad credentials or a newer schema stop the start.
  RETURN_IF_ERROR(FleetStore::Open(p.fleet_connection, name).status());
  FleetPool::Opener open = [connection = p.fleet_connection, name] {
    return FleetStore::Open(connection, name);
  };
  p.fleet_pool = std::make_unique<FleetPool>(open, options.fleet_connections);
  p.job_notices = std::make_unique<JobNotices>(open);
  p.job_notices->Start();
  p.fleet_front = std::make_unique<FleetFront>(*p.fleet_pool, *p.job_notices,
                                               std::move(platforms));
  p.front_service = std::make_unique<FrontService>(FrontDeps{
      p.fleet_front.get(), IRONTUNE_VERSION, p.fleet_connection.display,
      options.limits, streams, security.auth, security.refusals});
  ASSIGN_OR_RETURN(p.addresses,
                   Listen(options.listen, options, security,
                          p.front_service.get(), p.server, p.unix_listeners));
  p.server->GetHealthCheckService()->SetServingStatus(true);
  p.server->GetHealthCheckService()->SetServingStatus(
      v1::Tuner::service_full_name(), true);
  spdlog::info("irontuned {} front of the fleet at {} on {}", IRONTUNE_VERSION,
               p.fleet_connection.display, absl::StrJoin(p.addresses, ", "));
  p.notifier = std::make_unique<SystemdNotifier>(options.notify);
  if (p.notifier->enabled()) {
    absl::Status ready = p.notifier->Notify("READY=1");
    if (!ready.ok()) spdlog::warn("systemd: {}", ready.ToString());
  }
  return daemon;
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options) {
  const double age_s = options.max_connection_age_s;
  if (age_s > 0 || (age_s < 0 && options.role == "front")) {
    options.caps.max_connection_age = absl::Seconds(age_s < 0 ? 300 : age_s);
  }
  if (options.role == "front") return StartFront(std::move(options));
  // Whatever fails below, the parts made so far are released in order.
  auto daemon = std::unique_ptr<Daemon>(new Daemon(std::make_unique<Parts>()));
  Parts& p = *daemon->parts_;
  ASSIGN_OR_RETURN(const StreamLimits streams, StreamLimitsOf(options.limits));
  ASSIGN_OR_RETURN(const Security security, LoadSecurity(options));
  ASSIGN_OR_RETURN(std::unique_ptr<Device> device, OpenDevice(options));
  ASSIGN_OR_RETURN(p.device_lock_fd, daemon->TakeDeviceLock(options));
  ASSIGN_OR_RETURN(const std::filesystem::path dir,
                   MakeStateDir(options.state_dir));
  ASSIGN_OR_RETURN(std::tie(p.state_dir_fd, p.lock_fd),
                   TakeStateDirLock(dir.string()));
  if (options.test_max_database_pages > 0) {
    sqlite::SetMaxPageCountForTesting(options.test_max_database_pages);
  }
  RETURN_IF_ERROR(
      OpenCommandBuilder(options, dir, p.artifacts, p.command_builder));
  ASSIGN_OR_RETURN(Platform platform, device->GetPlatform());
  const std::string cache_path = (dir / "irontune.db").string();
  RETURN_IF_ERROR(CheckDatabase(cache_path, options.move_corrupt_aside,
                                "its measurements are timed again as jobs "
                                "need them"));
  ASSIGN_OR_RETURN(std::unique_ptr<Cache> cache,
                   Cache::Open(cache_path, platform.name, platform.power_mode));
  RETURN_IF_ERROR(daemon->OpenJobStore(dir, options, p.store));
  if (!options.fleet.empty())
    RETURN_IF_ERROR(daemon->OpenFleet(options, *cache));
  RETURN_IF_ERROR(daemon->StartWorker(options, std::move(device),
                                      std::move(cache), cache_path));
  daemon->StartFleetBox(options);
  ServiceDeps parts;
  parts.queue = p.queue.get();
  parts.worker = p.worker.get();
  parts.cached = p.cached.get();
  parts.store = p.store.get();
  ServiceDeps deps = DepsOf(options, parts, cache_path, platform, streams);
  deps.auth = security.auth;
  deps.refusals = security.refusals;
  p.service = std::make_unique<TunerService>(std::move(deps));
  ASSIGN_OR_RETURN(p.addresses,
                   Listen(options.listen, options, security, p.service.get(),
                          p.server, p.unix_listeners));
  // Health: SERVING for "" and for the Tuner service by name, so probes of
  // either succeed; Shutdown turns both NOT_SERVING.
  p.server->GetHealthCheckService()->SetServingStatus(true);
  p.server->GetHealthCheckService()->SetServingStatus(
      v1::Tuner::service_full_name(), true);
  daemon->WatchHealth(options);
  spdlog::info("irontuned {} serving {} ({}, {} power mode) on {}; state in {}",
               IRONTUNE_VERSION, options.device, platform.name,
               PowerModeName(platform.power_mode),
               absl::StrJoin(p.addresses, ", "), options.state_dir);
  daemon->StartNotifier(options);
  return daemon;
}

void Daemon::Shutdown() {
  Parts& p = *parts_;
  if (p.shut_down) return;
  p.shut_down = true;
  const bool serving = p.server != nullptr;
  if (p.notifier) p.notifier->Stopping();
  if (p.health) p.health->Stop();
  if (serving) {
    spdlog::info("shutting down");
    p.server->GetHealthCheckService()->SetServingStatus(false);
  }
  if (p.service) p.service->BeginShutdown();
  if (p.front_service) p.front_service->BeginShutdown();
  // Jobs waiting for a cached answer end UNAVAILABLE, those being answered
  // are cancelled.
  if (p.cached) p.cached->Stop();
  if (p.fleet_box) p.fleet_box->Stop();  // hands its shard back
  if (p.worker) p.worker->Stop();
  if (p.notifier) p.notifier->Stop();  // before the worker goes
  if (p.unix_listeners) p.unix_listeners->Stop();
  if (p.server) {
    p.server->Shutdown(absl::ToChronoTime(absl::Now() + kServerGrace));
    p.server->Wait();
    p.server.reset();
  }
  p.unix_listeners.reset();
  p.service.reset();
  p.front_service.reset();
  if (p.job_notices) p.job_notices->Stop();
  p.fleet_front.reset();
  p.job_notices.reset();
  p.fleet_pool.reset();
  p.fleet_box.reset();
  p.cached.reset();
  p.worker.reset();  // closes the cache
  p.cache_writes.reset();
  p.queue.reset();
  p.store.reset();
  for (int* fd : {&p.lock_fd, &p.state_dir_fd, &p.device_lock_fd}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  if (serving) spdlog::info("stopped");
}

}  // namespace irontune
