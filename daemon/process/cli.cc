#include "daemon/process/cli.h"

#include <signal.h>

#include <cstdint>
#include <exception>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/power_modes.h"
#include "daemon/edge/auth.h"
#include "daemon/process/daemon.h"
#include "daemon/tune/kernel_cycles.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace irontune {

namespace {

// A size in bytes, as every byte flag takes it: suffixes allowed (1k =
// 1024, "16G"), the default shown in --help.
template <typename T>
void AddBytes(CLI::App& app, const std::string& flag, T& into,
              const std::string& help) {
  app.add_option(flag, into, help)
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
}

// A number that must be positive (a count, days, seconds), the default
// shown in --help.
template <typename T>
void AddPositive(CLI::App& app, const std::string& flag, T& into,
                 const std::string& help) {
  app.add_option(flag, into, help)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

// Flags (and config-file keys) straight into `options`; the three that
// need translating into `log_level`, `sim_clock` and `power_mode`.
void AddOptions(CLI::App& app, DaemonOptions& options, std::string& log_level,
                std::string& sim_clock, std::string& power_mode) {
  app.add_option("--device", options.device,
                 "The NPU to serve: sim:npu2 or sim:npu1 (simulated), or xrt:N "
                 "(a real NPU, where irontuned was built with XRT: "
                 "docs/npu-box.md)")
      ->capture_default_str();
  app.add_option("--listen", options.listen,
                 "Where to serve gRPC; repeat for several: unix:PATH or "
                 "HOST:PORT (HOST:0 picks a free port)")
      ->capture_default_str();
  app.add_option("--state-dir", options.state_dir,
                 "Directory for irontune.db (the measurement cache), jobs.db "
                 "(finished jobs) and irontuned.lock (one daemon per dir)")
      ->capture_default_str();
  app.add_option("--log-level", log_level, "Log level on stderr")
      ->check(CLI::IsMember(
          {"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--sim-clock", sim_clock,
                 "The simulated NPU's clock: realtime (runs take their "
                 "simulated time) or virtual (they return at once; tests)")
      ->check(CLI::IsMember({"virtual", "realtime"}))
      ->capture_default_str();
  app.add_option("--sim-seed", options.sim_seed,
                 "Seed of the simulated NPU's noise and interference")
      ->capture_default_str();
  app.add_option("--queue-limit", options.queue_limit,
                 "Most jobs waiting at once; beyond it requests fail with "
                 "RESOURCE_EXHAUSTED")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--cached-answers", options.cached_answers,
                 "Threads answering, beside the device worker, the jobs "
                 "whose figures are all in the cache (no remeasure): such "
                 "a job waits for no device job; 0: every job waits for "
                 "the device worker")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--kernel-cycles", options.kernel_cycles,
                 "mlir-aie's nightly kernel cycle counts (a JSON file, "
                 "docs/search.md): GEMM settings their kernel alone shows "
                 "cannot win are not timed. Default: none")
      ->check(CLI::ExistingFile);
  app.add_option("--power-mode", power_mode,
                 "Set the NPU's power mode at start (xrt-smi configure "
                 "--pmode; turbo is refused while other processes hold NPU "
                 "contexts). Default: leave it. docs/npu-box.md")
      ->check(CLI::IsMember(PowerModeNameList()));
  app.add_option("--xrt-smi", options.xrt_smi,
                 "The xrt-smi program a real NPU is examined with. Default: "
                 "$XILINX_XRT/bin/xrt-smi, /opt/xilinx/xrt/bin/xrt-smi, or "
                 "xrt-smi in PATH");
}

// A real NPU's design builder (docs/builder-protocol.md).
void AddBuilderOptions(CLI::App& app, DaemonOptions& options) {
  app.add_option("--builder-command", options.builder_command,
                 "For a real NPU: the command that builds a design "
                 "(docs/builder-protocol.md), e.g. deploy/iron-builder; "
                 "split on white space. Not with a sim device");
  app.add_option("--builder-env", options.builder_env,
                 "A variable of irontuned's environment the builder command "
                 "gets (repeat for several; NAME, or PREFIX* for every "
                 "variable starting so), e.g. XILINX_XRT, PYTHONPATH, "
                 "MLIR_AIE_*. It always gets PATH, HOME, LANG, LC_ALL and "
                 "TMPDIR, and never NOTIFY_SOCKET or IRONTUNE_TOKEN; nothing "
                 "else is passed (docs/builder-protocol.md)");
  app.add_option("--build-timeout", options.build_timeout_s,
                 "Seconds one build may take; then its process group is "
                 "killed and the setting fails")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  app.add_option("--build-jobs", options.build_jobs,
                 "Most builds running at once. Default: the cores less one, "
                 "at least 1")
      ->check(CLI::Range(1, 1024));
  app.add_option("--artifact-store-bytes", options.artifact_store_bytes,
                 "Cap on STATE_DIR/artifacts (built designs); least recently "
                 "used ones are deleted beyond it. 0: no cap")
      ->capture_default_str();
  app.add_flag("--build-ahead,!--no-build-ahead", options.build_ahead,
               "Build the next batches' designs on --build-jobs threads "
               "while the device times a batch (default); "
               "--no-build-ahead builds each when it is needed");
  app.add_flag("--build-spare,!--no-build-spare", options.build_spare,
               "With a thread to spare, also build the designs of the "
               "other settings of the shapes an Autotune has not finished, "
               "which their later lines may ask for (default); "
               "--no-build-spare builds only what a search asks for");
  app.add_option("--shapes-at-once", options.shapes_at_once,
                 "Shapes an Autotune searches at once: a later shape is "
                 "timed while those before it wait for their builds; 1: "
                 "one at a time")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--sim-build-seconds", options.sim_build_seconds,
                 "The simulated NPU's build cost a design (a real IRON "
                 "compile takes seconds): CPU time on the real-time clock, "
                 "counted on the virtual one; 0: none")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_flag("--sim-build-sleep", options.sim_build_sleep,
               "Sleep the simulated build cost instead of spending CPU");
  app.add_option("--sim-hang-after-runs", options.sim_hang_after_runs,
                 "Tests: from its Nth run on (counting from 0), the "
                 "simulated NPU hangs as a wedged one does: the run never "
                 "returns. -1: never")
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
}

// The admission limits, the memory budget and what is kept of past jobs
// (admission.h, docs/operations.md "Admission and limits").
void AddLimitOptions(CLI::App& app, DaemonOptions& options,
                     double& jobs_db_days) {
  AdmissionLimits& l = options.limits;
  AddBytes(app, "--memory-limit", l.memory_limit_bytes,
           "What the running jobs' memory estimates may add up to; a "
           "job waits until it fits, one that never can is refused");
  AddBytes(app, "--job-memory", l.job_memory_bytes,
           "One job's estimated peak memory, at most");
  AddPositive(app, "--job-device-seconds", l.job_device_seconds,
              "One job's device time, at most: refused when its estimate "
              "is more, stopped within a round when it uses more");
  AddBytes(app, "--max-message-bytes", l.message_bytes,
           "The largest gRPC message irontuned reads");
  AddBytes(app, "--max-profile-bytes", l.profile_bytes,
           "The largest profile an Autotune may send");
  AddBytes(app, "--max-recording-bytes", l.recording_bytes,
           "The largest recording an Autotune may send");
  app.add_option("--max-recording-operators", l.recording_operators,
                 "Most operators in a recording")
      ->capture_default_str();
  app.add_option("--max-recording-steps", l.recording_steps,
                 "Most steps in a recording, over all its calls")
      ->capture_default_str();
  AddBytes(app, "--job-history-bytes", options.history_bytes,
           "Memory the ended jobs kept for Watch and status may hold "
           "(jobs.db keeps them beyond)");
  AddPositive(app, "--jobs-db-max-age-days", jobs_db_days,
              "Ended jobs older than this are deleted from jobs.db");
  AddBytes(app, "--jobs-db-max-bytes", options.job_store.max_bytes,
           "jobs.db keeps the newest ended jobs within this many bytes");
}

// What the queued jobs and the open streams may hold (queue_budget.h,
// stream_quota.h; docs/operations.md "Admission and limits").
void AddQueueOptions(CLI::App& app, AdmissionLimits& l) {
  app.add_option("--client-queue-quota", l.client_queue_quota,
                 "Most jobs one client may have waiting (0: no quota)")
      ->capture_default_str();
  AddBytes(app, "--queue-memory", l.queue_memory_bytes,
           "What the requests jobs hold may add up to, each its encoded "
           "size as received, from its submit until its job drops it "
           "(an Autotune as it starts, a Measure as it ends); past it "
           "a submit is refused");
  AddBytes(app, "--client-queue-bytes", l.client_queue_bytes,
           "What one client's requests may add up to, counted as "
           "--queue-memory counts them; past it its submit is refused");
  AddPositive(app, "--max-streams", l.concurrent_streams,
              "Most Autotune, Measure and Watch streams open at once");
  app.add_option("--max-streams-per-caller", l.streams_per_caller,
                 "Most streams one caller (a token's name) may have open. "
                 "Default: a quarter of --max-streams, at least 1")
      ->check(CLI::PositiveNumber);
  app.add_option("--admin-streams", l.admin_streams,
                 "The last this many of --max-streams only admin callers "
                 "may open; below --max-streams. Default: 4, at most a "
                 "quarter of --max-streams")
      ->check(CLI::NonNegativeNumber);
}

// gRPC's caps on threads, connection memory, calls and headers
// (ServerCaps, docs/operations.md "Connections and calls").
void AddCapOptions(CLI::App& app, DaemonOptions& options) {
  AddBytes(app, "--max-small-message-bytes", options.limits.small_message_bytes,
           "The largest request of an RPC other than Autotune, Measure "
           "and ImportCache");
  ServerCaps& caps = options.caps;
  AddPositive(app, "--grpc-threads", caps.threads,
              "Threads gRPC may run calls on (each open stream holds one); "
              "past it a call is RESOURCE_EXHAUSTED");
  AddBytes(app, "--grpc-memory", caps.memory_bytes,
           "Memory gRPC's connections may hold receiving (at least "
           "--max-message-bytes)");
  AddPositive(app, "--max-calls-per-connection", caps.calls_per_connection,
              "Calls one connection may have open at once");
  app.add_option("--max-header-bytes", caps.header_bytes,
                 "A call's headers, at most")
      ->check(CLI::Range(1024, 1 << 20))
      ->capture_default_str();
}

// Where the device lock lives and what to do with a damaged database.
void AddStateOptions(CLI::App& app, DaemonOptions& options) {
  app.add_option("--runtime-dir", options.runtime_dir,
                 "Directory of the per-device lock (one irontuned per NPU). "
                 "Default: $RUNTIME_DIRECTORY, else /run/irontune where "
                 "writable");
  app.add_flag("--move-corrupt-aside", options.move_corrupt_aside,
               "A database failing its check at start is renamed to "
               "FILE.corrupt-TIME and an empty one started, instead of "
               "refusing to start");
  // Tests only: databases may not grow (a full disk); hidden from --help.
  app.add_option("--test-max-database-pages", options.test_max_database_pages)
      ->group("");
  // Tests only: where a real NPU's timing hygiene reads /proc.
  app.add_option("--test-proc-root", options.test_proc_root)->group("");
}

// Who may connect and how (docs/security.md).
void AddSecurityOptions(CLI::App& app, DaemonOptions& options,
                        std::string& hash_token) {
  app.add_option("--socket-group", options.socket_group,
                 "Group of the unix sockets, which are mode 0660 (default: "
                 "the daemon's own group)");
  app.add_flag("--insecure", options.insecure,
               "Serve plaintext gRPC on addresses off loopback too (logged "
               "as a warning). Without it they need --tls-cert/--tls-key");
  app.add_option("--tls-cert", options.tls_cert,
                 "PEM certificate (chain) to serve TLS with on every TCP "
                 "address")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", options.tls_key, "PEM private key of --tls-cert")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-client-ca", options.tls_client_ca,
                 "PEM CA: TCP clients must present a certificate it signed")
      ->check(CLI::ExistingFile);
  app.add_option("--tokens", options.tokens,
                 "Bearer tokens file, lines NAME ROLE SHA256 (roles submit, "
                 "admin). Default: none, and only callers of the unix socket "
                 "paths are served, each as admin")
      ->check(CLI::ExistingFile);
  app.add_flag("--allow-loopback-without-tokens",
               options.allow_loopback_without_tokens,
               "Without --tokens, serve loopback TCP and unix-abstract "
               "addresses too, every local user reaching them as admin "
               "(logged as a warning); without it they are refused at start");
  app.add_option("--local-role", options.local_roles,
                 "Role of a unix socket caller by OS user or group, WHO:ROLE "
                 "(alice:submit, @ci:submit, bob:none; a user's rule wins, "
                 "then the first group's). Repeatable; without --tokens only");
  app.add_option("--local-default-role", options.local_default_role,
                 "Role of unix socket callers no --local-role names: admin, "
                 "submit or none (default admin: the socket's mode and group "
                 "are the control)");
  app.add_option("--hash-token", hash_token,
                 "Print the --tokens line NAME ROLE SHA256 for the token read "
                 "from standard input, then exit. Give NAME:ROLE");
}

// --hash-token NAME:ROLE: the tokens-file line of the token on stdin.
int HashTokenMain(const std::string& name_role) {
  const size_t colon = name_role.rfind(':');
  absl::StatusOr<Role> role =
      colon == std::string::npos
          ? absl::InvalidArgumentError("give NAME:ROLE, e.g. ci:submit")
          : ParseRole(name_role.substr(colon + 1));
  std::string token;
  std::getline(std::cin, token);
  absl::StatusOr<std::string> line =
      role.ok() ? TokenLine(name_role.substr(0, colon), *role, token)
                : absl::StatusOr<std::string>(role.status());
  if (!line.ok()) {
    std::cerr << "irontuned: --hash-token " << name_role << ": "
              << line.status().message() << "\n";
    return kExitUsage;
  }
  std::cout << *line << "\n";
  return kExitOk;
}

// --stall-limit: seconds into DaemonOptions::stall_limit.
void AddSystemdOptions(CLI::App& app, double& stall_limit_s) {
  app.add_option("--stall-limit", stall_limit_s,
                 "Seconds the device worker may spend in one device call, "
                 "build or task before it counts as hung: systemd's "
                 "watchdog pings (WatchdogSec=) then stop and systemd "
                 "restarts irontuned")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
}

// The fleet (docs/fleet.md).
void AddFleetOptions(CLI::App& app, DaemonOptions& options) {
  app.add_option("--fleet", options.fleet,
                 "Join a fleet: the PostgreSQL store's URL (libpq's, e.g. "
                 "postgresql://irontune@db.lab/irontune; no password in it). "
                 "This box then also claims shards of its NPU and power "
                 "mode. Empty: this box alone");
  app.add_option("--fleet-password-file", options.fleet_password_file,
                 "The fleet store's password, in a passfile (libpq's "
                 "host:port:db:user:password lines, mode 0600). Default: "
                 "PGPASSFILE or ~/.pgpass");
  app.add_option("--fleet-name", options.fleet_name,
                 "This box's name in the fleet's leases. Default: the host "
                 "name and --device");
  app.add_option("--role", options.role,
                 "box: this irontuned times jobs on its NPU (with --fleet, "
                 "the fleet's shards too). front: a fleet's front, with no "
                 "NPU: it serves the Tuner service over the fleet's store "
                 "(needs --fleet; --device, the cache and the state dir are "
                 "not used)")
      ->check(CLI::IsMember({"box", "front"}))
      ->capture_default_str();
  app.add_option("--fleet-platform", options.fleet_platforms,
                 "A front's map from a profile's generation to the platform "
                 "whose boxes time it, GEN=PLATFORM (e.g. npu2=strix), once "
                 "per generation: Strix and Krackan both load npu2.json but "
                 "time differently. Without one, a submit naming only the "
                 "generation is refused");
  app.add_option("--fleet-connections", options.fleet_connections,
                 "A front's connections to the fleet store at most, shared by "
                 "its calls")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--max-connection-age", options.max_connection_age_s,
                 "Seconds after which a client's connection is closed (its "
                 "calls finish first), so clients spread again when fronts "
                 "come and go. Default: 300 on a front, none on a box; 0: "
                 "none")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--fleet-lease", options.fleet_lease_s,
                 "Seconds a claimed shard stays this box's without a renewal "
                 "(renewed every third of it): after a box dies, another "
                 "resumes its shard this long after")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
}

// Runs `options`' daemon until SIGTERM or SIGINT.
int Serve(DaemonOptions options) {
  // Every thread started from here on inherits the blocked signals; this
  // thread takes them with sigwait, so no work happens in a handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<Daemon> daemon;
  try {
    absl::StatusOr<std::unique_ptr<Daemon>> started =
        Daemon::Start(std::move(options));
    if (!started.ok()) {
      spdlog::error("cannot start: {}", started.status().ToString());
      return kExitStartup;
    }
    daemon = *std::move(started);
  } catch (const std::exception& e) {
    spdlog::error("cannot start: {}", e.what());
    return kExitStartup;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("{} received", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  daemon->Shutdown();
  daemon.reset();
  return kExitOk;
}

}  // namespace

int IrontunedMain(int argc, char** argv) {
  CLI::App app{
      "irontuned: the irontune daemon. It holds one NPU, keeps the "
      "measurement cache and serves irontune.v1.Tuner (Measure, Autotune, "
      "status, jobs, cache export/import) over gRPC. See docs/operations.md."};
  app.set_config("--config", "",
                 "Read options from FILE (key = value lines, TOML style; "
                 "flags on the command line override it)");
  app.allow_config_extras(false);
  DaemonOptions options;
  std::string log_level = "info";
  std::string sim_clock = "realtime";
  double jobs_db_days = 30;
  std::string power_mode;
  AddOptions(app, options, log_level, sim_clock, power_mode);
  AddBuilderOptions(app, options);
  AddLimitOptions(app, options, jobs_db_days);
  AddQueueOptions(app, options.limits);
  AddCapOptions(app, options);
  AddStateOptions(app, options);
  std::string hash_token;
  AddSecurityOptions(app, options, hash_token);
  AddFleetOptions(app, options);
  double stall_limit_s = absl::ToDoubleSeconds(options.stall_limit);
  AddSystemdOptions(app, stall_limit_s);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (!hash_token.empty()) return HashTokenMain(hash_token);
  auto logger = spdlog::stderr_color_mt("irontuned");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));
  options.sim_clock =
      sim_clock == "virtual" ? SimClock::kVirtual : SimClock::kRealTime;
  options.job_store.max_age = absl::Hours(24) * jobs_db_days;
  if (!power_mode.empty()) options.power_mode = *ParsePowerMode(power_mode);
  options.stall_limit = absl::Seconds(stall_limit_s);
  options.notify = NotifyConfig::FromEnvironment();
  if (!options.kernel_cycles.empty()) {
    // Read once at start too, so a file that does not parse is logged now
    // (LoadKernelCycles names where), not only when an Autotune reads it.
    const size_t kernels =
        LoadKernelCycles(options.kernel_cycles, nullptr).size();
    if (kernels > 0) {
      spdlog::info("kernel cycles: {} kernels in {}", kernels,
                   options.kernel_cycles);
    }
  }
  return Serve(std::move(options));
}

}  // namespace irontune
