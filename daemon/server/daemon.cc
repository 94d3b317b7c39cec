#include "daemon/server/daemon.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "daemon/server/auth.h"
#include "daemon/server/service.h"
#include "daemon/server/tls.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "daemon/store/cache.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "spdlog/spdlog.h"

#ifndef IRONTUNE_VERSION
#define IRONTUNE_VERSION "unknown"
#endif

namespace irontune {
namespace {

// Recordings may be up to RecordingLimits::max_bytes; leave room for the
// rest of the request.
constexpr int kMaxMessageBytes = (512 << 20) + (16 << 20);
// How long in-flight calls get once the worker has stopped.
constexpr absl::Duration kServerGrace = absl::Seconds(2);

absl::Status Errno(const std::string& what) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, ": ", std::strerror(errno)));
}

// Removes a unix socket left by an earlier run (we hold the lock, so no
// live irontuned of this state dir owns it) and makes its directory.
absl::Status PrepareUnixSocket(const std::string& address) {
  absl::string_view path(address);
  if (!absl::ConsumePrefix(&path, "unix:")) return absl::OkStatus();
  absl::ConsumePrefix(&path, "//");
  const std::filesystem::path p{std::string(path)};
  std::error_code ec;
  if (p.has_parent_path())
    std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create ", p.parent_path().string(), ": ", ec.message()));
  }
  if (std::filesystem::is_socket(p, ec)) std::filesystem::remove(p, ec);
  return absl::OkStatus();
}

// The path of a "unix:PATH" address.
std::string UnixPath(absl::string_view address) {
  absl::ConsumePrefix(&address, "unix:");
  absl::ConsumePrefix(&address, "//");
  return std::string(address);
}

// What start-up reads for security before anything else runs, so a bad
// flag fails at once (docs/security.md).
struct Security {
  std::optional<TlsConfig> tls;
  std::shared_ptr<const Authenticator> auth;
  std::optional<gid_t> socket_gid;  // nullopt: leave the group as created
};

absl::StatusOr<gid_t> ResolveGroup(const std::string& name) {
  std::vector<char> buf(16384);
  group g{};
  group* found = nullptr;
  if (::getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found) == 0 &&
      found != nullptr) {
    return found->gr_gid;
  }
  gid_t gid = 0;
  if (absl::SimpleAtoi(name, &gid)) return gid;
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
  RETURN_IF_ERROR(CheckListen(options.listen, security.tls.has_value(),
                              options.insecure, tokens.has_value(), &warnings));
  for (const std::string& w : warnings) spdlog::warn("{}", w);
  security.auth = std::make_shared<const Authenticator>(std::move(tokens));
  if (!options.socket_group.empty()) {
    ASSIGN_OR_RETURN(security.socket_gid, ResolveGroup(options.socket_group));
  }
  return security;
}

// The credentials `address` is served with: TLS on TCP when configured.
std::shared_ptr<grpc::ServerCredentials> CredentialsFor(
    const std::string& address, const std::optional<TlsConfig>& tls) {
  if (!tls.has_value() || TransportOf(address) == Transport::kUnix) {
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl(
      tls->client_ca_pem.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = tls->client_ca_pem;
  ssl.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
  return grpc::SslServerCredentials(ssl);
}

// Makes every unix socket of `listen` mode 0660 and, when given, of group
// `gid`. Explicit, whatever the umask was at bind.
absl::Status SecureUnixSockets(const std::vector<std::string>& listen,
                               std::optional<gid_t> gid) {
  for (const std::string& address : listen) {
    if (!absl::StartsWith(address, "unix:")) continue;
    const std::string path = UnixPath(address);
    if (::chmod(path.c_str(), 0660) != 0) {
      return Errno(absl::StrCat("cannot chmod 0660 ", path));
    }
    if (gid.has_value() && ::chown(path.c_str(), -1, *gid) != 0) {
      return Errno(absl::StrCat("cannot give ", path, " to group ", *gid));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> TakeLockFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
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

struct Daemon::Parts {
  // Declared in start order; torn down by Shutdown in the documented order.
  int lock_fd = -1;
  std::unique_ptr<JobStore> store;
  std::unique_ptr<JobQueue> queue;
  std::unique_ptr<DeviceWorker> worker;
  std::unique_ptr<TunerService> service;
  std::unique_ptr<grpc::Server> server;
  std::vector<std::string> addresses;
  std::unique_ptr<SystemdNotifier> notifier;
  bool shut_down = false;
};

Daemon::Daemon(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

Daemon::~Daemon() { Shutdown(); }

const std::vector<std::string>& Daemon::addresses() const {
  return parts_->addresses;
}

namespace {

absl::StatusOr<std::unique_ptr<SimDevice>> OpenDevice(
    const DaemonOptions& options) {
  if (absl::StartsWith(options.device, "xrt:")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device ", options.device,
        ": real NPUs (xrt) are not built into this irontuned; it has the "
        "simulated NPU only (sim:npu2, sim:npu1)"));
  }
  SimOptions sim;
  sim.seed = options.sim_seed;
  sim.clock = options.sim_clock == SimClock::kVirtual
                  ? SimOptions::Clock::kVirtual
                  : SimOptions::Clock::kRealTime;
  return MakeSimDevice(options.device, sim);
}

absl::StatusOr<std::filesystem::path> MakeStateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("--state-dir ", dir, ": ", ec.message()));
  }
  return std::filesystem::path(dir);
}

// Listens on every address; the addresses listened on, with the port a
// ":0" address was given.
absl::StatusOr<std::vector<std::string>> Listen(
    const std::vector<std::string>& listen, const Security& security,
    grpc::Service* service, std::unique_ptr<grpc::Server>& server) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  if (listen.empty()) {
    return absl::InvalidArgumentError("--listen: no address given");
  }
  std::vector<std::unique_ptr<int>> ports;
  for (const std::string& address : listen) {
    RETURN_IF_ERROR(PrepareUnixSocket(address));
    ports.push_back(std::make_unique<int>(0));
    builder.AddListeningPort(address, CredentialsFor(address, security.tls),
                             ports.back().get());
  }
  builder.RegisterService(service);
  // Sockets are born 0660 at most; SecureUnixSockets then sets it exactly.
  const mode_t umask = ::umask(0117);
  server = builder.BuildAndStart();
  ::umask(umask);
  if (server == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", absl::StrJoin(listen, ", "),
        security.tls ? " (in use, not an address, or the TLS key does not "
                       "match the certificate)"
                     : " (in use, or not an address)"));
  }
  RETURN_IF_ERROR(SecureUnixSockets(listen, security.socket_gid));
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

// What STATUS= says: the running job and the queue length, and a hung
// worker.
std::string StatusText(const WorkerStatus& worker, size_t queued,
                       absl::Duration since_beat, absl::Duration stall_limit) {
  std::string text =
      worker.running
          ? absl::StrCat(
                "running ",
                worker.running->kind() == v1::JOB_KIND_AUTOTUNE ? "autotune "
                                                                : "measure ",
                worker.running->id(), " for ", worker.running->client())
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

absl::Status Daemon::StartWorker(DaemonOptions& options,
                                 std::unique_ptr<SimDevice> device,
                                 std::unique_ptr<Cache> cache) {
  Parts& p = *parts_;
  p.queue = std::make_unique<JobQueue>(options.queue_limit);
  WorkerParts wp;
  SimDevice* sim_device = device.get();
  wp.device_clock_us = [sim_device] { return sim_device->now_us(); };
  wp.device = std::move(device);
  wp.builder = std::make_unique<SimBuilder>();
  wp.cache = std::move(cache);
  wp.runner = options.runner
                  ? std::move(options.runner)
                  : std::make_unique<DeviceJobRunner>(options.kernel_cycles);
  p.worker = std::make_unique<DeviceWorker>(std::move(wp), p.queue.get(),
                                            p.store.get());
  return p.worker->Start();
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options) {
  // Whatever fails below, the parts made so far are released in order.
  auto daemon = std::unique_ptr<Daemon>(new Daemon(std::make_unique<Parts>()));
  Parts& p = *daemon->parts_;
  ASSIGN_OR_RETURN(const Security security, LoadSecurity(options));
  ASSIGN_OR_RETURN(std::unique_ptr<SimDevice> device, OpenDevice(options));
  ASSIGN_OR_RETURN(const std::filesystem::path dir,
                   MakeStateDir(options.state_dir));
  ASSIGN_OR_RETURN(p.lock_fd, TakeLockFile((dir / "irontuned.lock").string()));

  ASSIGN_OR_RETURN(Platform platform, device->GetPlatform());
  const std::string cache_path = (dir / "irontune.db").string();
  ASSIGN_OR_RETURN(std::unique_ptr<Cache> cache,
                   Cache::Open(cache_path, platform.name, platform.power_mode));
  ASSIGN_OR_RETURN(p.store, JobStore::Open((dir / "jobs.db").string()));
  RETURN_IF_ERROR(
      daemon->StartWorker(options, std::move(device), std::move(cache)));

  ServiceDeps deps;
  deps.queue = p.queue.get();
  deps.worker = p.worker.get();
  deps.store = p.store.get();
  deps.device_spec = options.device;
  deps.version = IRONTUNE_VERSION;
  deps.cache_path = cache_path;
  deps.cache_platform = platform.name;
  deps.cache_power_mode = platform.power_mode;
  deps.auth = security.auth;
  p.service = std::make_unique<TunerService>(std::move(deps));
  ASSIGN_OR_RETURN(p.addresses,
                   Listen(options.listen, security, p.service.get(), p.server));
  // Health: SERVING for "" and for the Tuner service by name, so probes of
  // either succeed; Shutdown turns both NOT_SERVING.
  p.server->GetHealthCheckService()->SetServingStatus(true);
  p.server->GetHealthCheckService()->SetServingStatus(
      v1::Tuner::service_full_name(), true);
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
  if (serving) {
    spdlog::info("shutting down");
    p.server->GetHealthCheckService()->SetServingStatus(false);
  }
  if (p.service) p.service->BeginShutdown();
  if (p.worker) p.worker->Stop();
  if (p.notifier) p.notifier->Stop();  // before the worker goes
  if (p.server) {
    p.server->Shutdown(absl::ToChronoTime(absl::Now() + kServerGrace));
    p.server->Wait();
    p.server.reset();
  }
  p.service.reset();
  p.worker.reset();  // closes the cache
  p.queue.reset();
  p.store.reset();
  if (p.lock_fd >= 0) {
    ::close(p.lock_fd);
    p.lock_fd = -1;
  }
  if (serving) spdlog::info("stopped");
}

}  // namespace irontune
