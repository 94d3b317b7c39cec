// Benchmarks of irontuned as a service: the real binaries over loopback TCP.
// Prints figures; never fails on time.
//
//   service_bench cached       a fully cached Autotune of the example, end to
//                              end through irontune-client subprocesses and
//                              in-process with a raw gRPC stub: p50/p99;
//                              then what --tokens costs a cached Autotune
//                              and a GetStatus (ratio in one run)
//   service_bench concurrent   64 client threads, each its own channel,
//                              submitting Measure jobs for a bounded time:
//                              throughput, errors by code, lost requests,
//                              worst queue wait, daemon RSS over the run
//   service_bench utilisation  simulated device time over job wall time of
//                              an Autotune on the real-time clock, --rounds 3
//                              --calls 5 (`utilisation decode`: the default
//                              Timing on the decode call only, instead), the
//                              engine overhead (wall / device) and the
//                              daemon's peak RSS; further arguments go to
//                              irontuned (--sim-build-seconds S,
//                              --no-build-ahead, --build-jobs N, ...)
//   service_bench --mixed-load 60s
//                              64 client threads for 60 s, each request at
//                              random: GetStatus, Measure, a small
//                              Autotune, a job cancelled by Cancel, a job
//                              whose stream is dropped: lost requests,
//                              requests answered twice, GetStatus p99,
//                              daemon RSS at start, middle and end
//   service_bench --big-job    one big Measure's peak RSS (VmHWM) against
//                              admission's memory estimate, at repeats
//                              0 (the default, 9), 64 and 256; then the
//                              example's Autotune at the default Timing
//   service_bench busy         fully cached Autotunes of the example from
//                              24 client threads (and irontune-client
//                              processes) on the real-time clock: one
//                              client alone, the clients on the idle
//                              daemon, then while the example's Autotune
//                              remeasured holds the device: p50/p99;
//                              --irontuned PATH and --client PATH run
//                              other builds (e.g. main's, for a before),
//                              --clients N, --seconds S, --think-ms M,
//                              --long example|other (the long job: the
//                              example remeasured, or another
//                              recording), the rest go to irontuned
//   service_bench all          cached, concurrent, utilisation
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "bench/percentile.h"
#include "common/profile.h"
#include "common/recording.h"
#include "common/value.h"
#include "daemon/base/sha256.h"
#include "daemon/npu/device.h"
#include "daemon/scheduler/admission.h"
#include "daemon/scheduler/replies.h"
#include "daemon/scheduler/requests.h"
#include "grpcpp/grpcpp.h"
#include "irontune/v1/tuner.grpc.pb.h"
#include "spdlog/spdlog.h"
#include "tests/testing/process.h"
#include "tests/testing/recording_fixtures.h"

extern char** environ;

namespace irontune {
namespace {

using Clock = std::chrono::steady_clock;

const std::string kDaemon = IRONTUNE_IRONTUNED;
const std::string kClient = IRONTUNE_CLIENT;
const std::string kSource = IRONTUNE_SOURCE_DIR;
const std::string kExample = kSource + "/examples/llama-3.2-1b.rec";
const std::string kProfile = kSource + "/examples/profiles/npu2.json";

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void PrintLatencies(const char* what, const std::vector<double>& s) {
  if (s.empty()) {
    std::printf("  %s: no samples\n", what);
    return;
  }
  std::printf(
      "  %-44s n=%zu  p50 %7.1f ms  p99 %7.1f ms  min %7.1f ms  max %7.1f "
      "ms\n",
      what, s.size(), Percentile(s, 50) * 1e3, Percentile(s, 99) * 1e3,
      *std::min_element(s.begin(), s.end()) * 1e3,
      *std::max_element(s.begin(), s.end()) * 1e3);
}

// Runs argv to completion, output to /dev/null (or to `out_path`), blocking
// in waitpid so the wall time has no polling slack. Returns the exit code.
int RunBlocking(const std::vector<std::string>& argv,
                const std::string& out_path = "/dev/null") {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Which irontuned a Daemon runs, and in which state dir.
struct DaemonSetup {
  std::string binary = kDaemon;
  // Empty: a fresh one, removed at the end; else this one, kept.
  std::string dir;
};

// irontuned on loopback TCP with a fresh state dir; SIGTERM on destruction.
class Daemon {
 public:
  // With a non-empty `token`, irontuned runs with a tokens file that makes
  // it the only (admin) token, and every channel call must carry it.
  Daemon(const std::string& tag, const std::string& clock,
         std::vector<std::string> extra = {}, std::string token = "",
         const DaemonSetup& setup = DaemonSetup())
      : dir_(setup.dir.empty() ? e2e::TempDir("bench-" + tag) : setup.dir),
        keep_dir_(!setup.dir.empty()),
        token_(std::move(token)) {
    if (!token_.empty()) {
      WriteTokensFile(dir_ + "/tokens", token_);
      extra.insert(extra.end(), {"--tokens", dir_ + "/tokens"});
    }
    // Log level info: the start-up line names the port it picked for :0.
    std::vector<std::string> argv = {
        setup.binary,  "--state-dir",
        dir_,          "--listen",
        "127.0.0.1:0", "--sim-clock",
        clock,         "--log-level",
        "info",        "--allow-loopback-without-tokens"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<e2e::Process>("irontuned", argv, dir_);
    address_ = e2e::WaitForServingAddress(*process_, "127.0.0.1:", 10);
    up_ = !address_.empty() && AnswersStatus();
    if (!up_) {
      std::printf("irontuned did not come up: %s\n",
                  process_->Stderr().c_str());
    }
  }
  ~Daemon() {
    process_->Signal(SIGTERM);
    if (!process_->Wait(60)) {
      std::printf("irontuned did not stop in 60 s\n");
      return;
    }
    std::error_code ignored;
    if (!keep_dir_) std::filesystem::remove_all(dir_, ignored);
  }
  bool up() const { return up_; }
  pid_t pid() const { return process_->pid(); }
  const std::string& address() const { return address_; }
  const std::string& dir() const { return dir_; }
  const std::string& token() const { return token_; }
  // Gives `context` the token, if this daemon has one.
  void Authorize(grpc::ClientContext* context) const {
    if (!token_.empty())
      context->AddMetadata("authorization", "Bearer " + token_);
  }
  std::string Log() const { return process_->Stderr(); }
  // A channel with its own connection (no subchannel shared with others).
  std::shared_ptr<grpc::Channel> Channel() const {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    return grpc::CreateCustomChannel(address_,
                                     grpc::InsecureChannelCredentials(), args);
  }

 private:
  // Whether GetStatus succeeds within about 10 s.
  bool AnswersStatus() const {
    auto stub = v1::Tuner::NewStub(Channel());
    for (int i = 0; i < 200; ++i) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(1));
      Authorize(&context);
      v1::StatusResponse status;
      if (stub->GetStatus(&context, v1::GetStatusRequest(), &status).ok()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  static void WriteTokensFile(const std::string& path,
                              const std::string& token) {
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return;  // irontuned's start names the missing file
    std::fprintf(f, "bench admin %s\n", Sha256Hex(token).c_str());
    std::fclose(f);
  }

  std::string dir_;
  bool keep_dir_;
  std::string token_;
  std::string address_;
  std::unique_ptr<e2e::Process> process_;
  bool up_ = false;
};

// The example recording and profile as an AutotuneRequest, as
// `irontune-client submit` builds it.
v1::AutotuneRequest ExampleRequest(uint32_t rounds, uint32_t calls) {
  v1::AutotuneRequest request;
  auto recording = LoadRecording(kExample);
  auto profile = Profile::Load(kProfile);
  if (!recording.ok() || !profile.ok()) {
    std::printf("cannot load the example: %s %s\n",
                recording.status().ToString().c_str(),
                profile.status().ToString().c_str());
    std::exit(1);
  }
  *request.mutable_calls() = *recording;
  *request.mutable_profile() = profile->proto();
  request.mutable_timing()->set_rounds(rounds);
  request.mutable_timing()->set_calls(calls);
  request.set_client("irontune-client");
  return request;
}

struct AutotuneOutcome {
  grpc::Status status;
  bool has_result = false;
  v1::AutotuneResult result;
  double queued_to_started_s = -1;
  std::map<std::string, int> events;  // by oneof case
};

AutotuneOutcome RunAutotune(v1::Tuner::Stub& stub,
                            const v1::AutotuneRequest& request,
                            const Daemon* daemon = nullptr,
                            double deadline_s = 0) {
  AutotuneOutcome out;
  grpc::ClientContext context;
  if (daemon != nullptr) daemon->Authorize(&context);
  if (deadline_s > 0) {
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::duration<double>(deadline_s)));
  }
  auto reader = stub.Autotune(&context, request);
  v1::AutotuneEvent event;
  Clock::time_point queued;
  while (reader->Read(&event)) {
    ++out.events[v1::AutotuneEvent::descriptor()
                     ->FindFieldByNumber(event.event_case())
                     ->name()];
    if (event.has_queued()) queued = Clock::now();
    if (event.has_started()) out.queued_to_started_s = Since(queued);
    if (event.has_result()) {
      out.has_result = true;
      out.result = event.result();
    }
  }
  out.status = reader->Finish();
  return out;
}

// What authentication costs a call: the same calls, interleaved, to an
// irontuned without tokens and to one with --tokens (the token checked on
// the headers by the call gate, hashed and compared with every line's).
int AuthCost() {
  constexpr int kAutotunes = 40, kStatuses = 400;
  std::printf(
      "cached, auth: the same calls interleaved to irontuned without tokens "
      "and with --tokens (one channel each, loopback TCP)\n");
  Daemon plain("auth-plain", "virtual");
  Daemon tokened("auth-tokens", "virtual", {},
                 "service-bench-token-0123456789abcdef");
  if (!plain.up() || !tokened.up()) return 1;
  v1::AutotuneRequest request = ExampleRequest(2, 3);
  auto plain_stub = v1::Tuner::NewStub(plain.Channel());
  auto token_stub = v1::Tuner::NewStub(tokened.Channel());
  int failures = 0;
  for (int i = 0; i < 2; ++i) {  // connect and fill each cache
    if (!RunAutotune(*plain_stub, request, &plain).status.ok()) ++failures;
    if (!RunAutotune(*token_stub, request, &tokened).status.ok()) ++failures;
  }
  auto status = [&](v1::Tuner::Stub& stub, const Daemon& d) {
    grpc::ClientContext context;
    d.Authorize(&context);
    v1::StatusResponse response;
    if (!stub.GetStatus(&context, v1::GetStatusRequest(), &response).ok())
      ++failures;
  };
  std::vector<double> plain_auto, token_auto, plain_status, token_status;
  for (int i = 0; i < kAutotunes; ++i) {
    auto start = Clock::now();
    if (!RunAutotune(*plain_stub, request, &plain).status.ok()) ++failures;
    plain_auto.push_back(Since(start));
    start = Clock::now();
    if (!RunAutotune(*token_stub, request, &tokened).status.ok()) ++failures;
    token_auto.push_back(Since(start));
  }
  for (int i = 0; i < kStatuses; ++i) {
    auto start = Clock::now();
    status(*plain_stub, plain);
    plain_status.push_back(Since(start));
    start = Clock::now();
    status(*token_stub, tokened);
    token_status.push_back(Since(start));
  }
  std::printf("  %d calls failed\n", failures);
  PrintLatencies("cached Autotune, no tokens", plain_auto);
  PrintLatencies("cached Autotune, --tokens", token_auto);
  PrintLatencies("GetStatus, no tokens", plain_status);
  PrintLatencies("GetStatus, --tokens", token_status);
  std::printf(
      "  p50 with tokens / without: Autotune %.3f, GetStatus %.3f; GetStatus "
      "p50 difference %+.1f us\n",
      Percentile(token_auto, 50) / Percentile(plain_auto, 50),
      Percentile(token_status, 50) / Percentile(plain_status, 50),
      (Percentile(token_status, 50) - Percentile(plain_status, 50)) * 1e6);
  return failures == 0 ? 0 : 1;
}

// ---------------------------------------------------------------- cached

int Cached() {
  constexpr int kN = 30;
  const std::string rounds = "2", calls = "3";
  std::printf(
      "cached: fully cached Autotune of examples/llama-3.2-1b.rec "
      "(npu2.json, --rounds %s --calls %s), irontuned --sim-clock virtual, "
      "loopback TCP\n",
      rounds.c_str(), calls.c_str());
  Daemon daemon("cached", "virtual");
  if (!daemon.up()) return 1;
  const std::vector<std::string> submit = {
      kClient,  "--server", daemon.address(), "submit",  kExample, "--profile",
      kProfile, "--rounds", rounds,           "--calls", calls,    "--json"};

  auto start = Clock::now();
  int rc = RunBlocking(submit, daemon.dir() + "/warm.json");
  std::printf("  warm-up submit (fills the cache): exit %d, %.2f s\n", rc,
              Since(start));
  if (rc != 0) return 1;

  // Baseline: the client process with the cheapest remote command.
  std::vector<double> status_s;
  for (int i = 0; i < kN; ++i) {
    start = Clock::now();
    rc = RunBlocking(
        {kClient, "--server", daemon.address(), "--timeout", "10", "status"});
    status_s.push_back(Since(start));
    if (rc != 0) std::printf("  status exit %d\n", rc);
  }

  std::vector<double> client_s;
  int failures = 0;
  for (int i = 0; i < kN; ++i) {
    start = Clock::now();
    rc = RunBlocking(submit);
    client_s.push_back(Since(start));
    if (rc != 0) ++failures;
  }

  // In-process: one channel, the stub reused; and a fresh channel each time.
  v1::AutotuneRequest request = ExampleRequest(2, 3);
  std::vector<double> stub_s, fresh_s, job_wall_s;
  uint32_t hits = 0, timed = 0;
  double device_s = 0;
  std::map<std::string, int> events;
  {
    auto stub = v1::Tuner::NewStub(daemon.Channel());
    RunAutotune(*stub, request);  // connect
    for (int i = 0; i < kN; ++i) {
      start = Clock::now();
      AutotuneOutcome o = RunAutotune(*stub, request);
      stub_s.push_back(Since(start));
      if (!o.status.ok() || !o.has_result) ++failures;
      job_wall_s.push_back(o.result.stats().wall_seconds());
      hits = o.result.stats().cache_hits();
      timed = o.result.stats().settings_timed();
      device_s += o.result.stats().device_seconds();
      events = o.events;
    }
  }
  for (int i = 0; i < kN; ++i) {
    start = Clock::now();
    auto stub = v1::Tuner::NewStub(daemon.Channel());
    AutotuneOutcome o = RunAutotune(*stub, request);
    fresh_s.push_back(Since(start));
    if (!o.status.ok() || !o.has_result) ++failures;
  }

  std::printf(
      "  each run: stats.cache_hits %u, stats.settings_timed %u, device "
      "seconds over all %d raw runs %.3f; %d runs failed\n",
      hits, timed, kN, device_s, failures);
  std::printf("  events streamed per run:");
  for (auto& [k, v] : events) std::printf(" %s %d", k.c_str(), v);
  std::printf("\n");
  PrintLatencies("irontune-client submit (process, wall)", client_s);
  PrintLatencies("irontune-client status (process baseline)", status_s);
  PrintLatencies("raw stub->Autotune, one channel", stub_s);
  PrintLatencies("raw stub->Autotune, a new channel each", fresh_s);
  PrintLatencies("job wall (stats.wall_seconds, in daemon)", job_wall_s);
  std::printf("  goal: client submit p50 <= 30 ms: %s\n",
              Percentile(client_s, 50) <= 0.030 ? "met" : "NOT met");
  std::printf("  goal: job wall in the daemon p50 <= 5 ms: %s\n",
              Percentile(job_wall_s, 50) <= 0.005 ? "met" : "NOT met");
  return AuthCost();
}

// ------------------------------------------------------------ concurrent

struct ConcurrentRun {
  int64_t sent = 0, ok = 0, lost = 0;
  std::map<std::string, int64_t> errors;
  double worst_wait_s = 0;
  std::vector<double> latency_s;
  long rss_kib[5] = {-1, -1, -1, -1, -1};  // idle, 1 s, middle, last, after
  long rss_max_kib = -1;
  double seconds = 0;
};

// The name of `code` if a Measure may end with it, else "OTHER".
std::string CodeName(grpc::StatusCode code) {
  for (grpc::StatusCode named :
       {grpc::OK, grpc::CANCELLED, grpc::UNKNOWN, grpc::INVALID_ARGUMENT,
        grpc::DEADLINE_EXCEEDED, grpc::NOT_FOUND, grpc::RESOURCE_EXHAUSTED,
        grpc::FAILED_PRECONDITION, grpc::ABORTED, grpc::UNIMPLEMENTED,
        grpc::INTERNAL, grpc::UNAVAILABLE}) {
    if (code == named) {
      return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
    }
  }
  return "OTHER";
}

v1::MeasureRequest AddMeasureRequest(bool remeasure) {
  auto recording = LoadRecording(kExample);
  if (!recording.ok()) std::exit(1);
  v1::MeasureRequest request;
  for (const v1::Operator& op : recording->operators()) {
    if (op.class_name() == "ElementwiseAdd") {
      *request.mutable_operator_() = op;
      break;
    }
  }
  // The recorded setting (tile_size=512, 4 columns) and one other.
  v1::Setting* other = request.add_settings();
  for (const v1::Tunable& t : request.operator_().tunables()) {
    v1::Field* f = other->add_tunables();
    f->set_name(t.name());
    *f->mutable_value() = t.name() == "tile_size" ? IntValue(1024) : t.value();
  }
  request.mutable_timing()->set_rounds(2);
  request.mutable_timing()->set_calls(3);
  request.set_remeasure(remeasure);
  return request;
}

ConcurrentRun RunConcurrent(int threads, double seconds, int queue_limit,
                            bool remeasure) {
  ConcurrentRun run;
  Daemon daemon("concurrent", "virtual",
                {"--queue-limit", std::to_string(queue_limit)});
  if (!daemon.up()) return run;
  const v1::MeasureRequest base = AddMeasureRequest(remeasure);
  std::mutex mu;
  std::atomic<bool> stop{false};
  run.rss_kib[0] = e2e::ProcStatusKib(daemon.pid(), "VmRSS");
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto stub = v1::Tuner::NewStub(daemon.Channel());
      v1::MeasureRequest request = base;
      request.set_client("bench-" + std::to_string(t));
      ConcurrentRun mine;
      while (!stop.load()) {
        ++mine.sent;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(60));
        const auto sent = Clock::now();
        auto reader = stub->Measure(&context, request);
        v1::MeasureEvent event;
        Clock::time_point queued;
        bool has_queued = false, has_result = false;
        while (reader->Read(&event)) {
          if (event.has_queued()) {
            queued = Clock::now();
            has_queued = true;
          }
          if (event.has_started() && has_queued) {
            mine.worst_wait_s = std::max(mine.worst_wait_s, Since(queued));
          }
          if (event.has_result()) has_result = true;
        }
        grpc::Status status = reader->Finish();
        if (status.ok() && has_result) {
          ++mine.ok;
          mine.latency_s.push_back(Since(sent));
        } else if (status.ok()) {
          ++mine.lost;  // OK without a result: lost
        } else {
          ++mine.errors[CodeName(status.error_code())];
          // Back off a little after a refusal, as a client would.
          if (status.error_code() == grpc::RESOURCE_EXHAUSTED) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      run.sent += mine.sent;
      run.ok += mine.ok;
      run.lost += mine.lost;
      for (auto& [k, v] : mine.errors) run.errors[k] += v;
      run.worst_wait_s = std::max(run.worst_wait_s, mine.worst_wait_s);
      run.latency_s.insert(run.latency_s.end(), mine.latency_s.begin(),
                           mine.latency_s.end());
    });
  }
  // RSS every 250 ms: at 1 s, at half time, at the last sample under load.
  bool early_done = false, mid_done = false;
  while (Since(start) < seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    long rss = e2e::ProcStatusKib(daemon.pid(), "VmRSS");
    run.rss_max_kib = std::max(run.rss_max_kib, rss);
    if (!early_done && Since(start) >= 1) {
      run.rss_kib[1] = rss;
      early_done = true;
    }
    if (!mid_done && Since(start) >= seconds / 2) {
      run.rss_kib[2] = rss;
      mid_done = true;
    }
    run.rss_kib[3] = rss;
  }
  stop = true;
  for (std::thread& w : workers) w.join();
  run.seconds = Since(start);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  run.rss_kib[4] = e2e::ProcStatusKib(daemon.pid(), "VmRSS");
  return run;
}

void PrintConcurrent(const char* title, const ConcurrentRun& r) {
  int64_t errors = 0;
  for (auto& [k, v] : r.errors) errors += v;
  std::printf("  %s\n", title);
  std::printf(
      "    %lld requests in %.1f s: %lld with a result, %lld errors, %lld "
      "lost (accounted: %s)\n",
      static_cast<long long>(r.sent), r.seconds, static_cast<long long>(r.ok),
      static_cast<long long>(errors), static_cast<long long>(r.lost),
      r.ok + errors + r.lost == r.sent && r.lost == 0 ? "all" : "NOT all");
  for (auto& [k, v] : r.errors) {
    std::printf("    error %s: %lld\n", k.c_str(), static_cast<long long>(v));
  }
  std::printf("    throughput %.1f results/s\n", r.ok / r.seconds);
  std::printf("    worst queue wait (Queued -> Started) %.1f ms\n",
              r.worst_wait_s * 1e3);
  PrintLatencies("request latency (results only)", r.latency_s);
  std::printf(
      "    daemon VmRSS idle %ld KiB; under load at 1 s %ld KiB, middle %ld "
      "KiB, end %ld KiB (max %ld KiB); 0.5 s after the clients left %ld "
      "KiB\n",
      r.rss_kib[0], r.rss_kib[1], r.rss_kib[2], r.rss_kib[3], r.rss_max_kib,
      r.rss_kib[4]);
}

int Concurrent() {
  constexpr int kThreads = 64;
  std::printf(
      "concurrent: %d client threads, each its own channel (loopback TCP), "
      "Measure of ElementwiseAdd size=2048 at its recorded setting + "
      "tile_size=1024, --rounds 2 --calls 3, irontuned --sim-clock virtual\n",
      kThreads);
  PrintConcurrent("--queue-limit 64, from the cache, 20 s",
                  RunConcurrent(kThreads, 20, 64, false));
  PrintConcurrent("--queue-limit 64, remeasure (every job times), 10 s",
                  RunConcurrent(kThreads, 10, 64, true));
  PrintConcurrent("--queue-limit 16, from the cache, 10 s",
                  RunConcurrent(kThreads, 10, 16, false));
  return 0;
}

// ----------------------------------------------------------- utilisation

// The build pool's share of an Autotune's stats, and the utilisation its
// build time allows (UtilisationBound).
void PrintBuilds(const v1::AutotuneStats& s) {
  if (!s.has_builds()) return;
  const v1::BuildStats& b = s.builds();
  std::printf(
      "    builds: asked %llu 1-step + %llu many-step (%llu waited for), "
      "built %llu + %llu (%llu with time to spare), %.1f s of builds on %u "
      "jobs (%.1f s each), "
      "%llu fit checks (%.2f s), %llu from the pool's memory\n"
      "    waited %.1f s for builds in the pool: %.1f s for builds not queued "
      "ahead, %.1f s for builds queued but not started, the rest for builds "
      "running\n"
      "    utilisation bound (%s): %.4f\n",
      static_cast<unsigned long long>(b.asked_one_step()),
      static_cast<unsigned long long>(b.asked_many_step()),
      static_cast<unsigned long long>(b.needed()),
      static_cast<unsigned long long>(b.built_one_step()),
      static_cast<unsigned long long>(b.built_many_step()),
      static_cast<unsigned long long>(b.spare()), b.build_seconds(), b.jobs(),
      b.jobs() > 0 ? b.build_seconds() / b.jobs() : 0.0,
      static_cast<unsigned long long>(b.fit_checks()), b.fit_seconds(),
      static_cast<unsigned long long>(b.remembered()), b.waited_seconds(),
      b.waited_unqueued_seconds(), b.waited_queued_seconds(),
      b.jobs() > 0 ? "device / max(device, build time / jobs)"
                   : "device / (device + build time): no pool threads",
      UtilisationBound(s.device_seconds(), b));
}

void Utilisation(const char* title, const v1::AutotuneRequest& request,
                 const std::vector<std::string>& flags) {
  Daemon daemon("utilisation", "realtime", flags);
  if (!daemon.up()) return;
  std::string shown;
  for (const std::string& f : flags) shown += " " + f;
  std::printf("  %s, irontuned%s (pid %d)\n", title, shown.c_str(),
              daemon.pid());
  std::fflush(stdout);
  // The daemon's peak RSS, sampled every 100 ms while the job runs.
  std::atomic<bool> done{false};
  std::atomic<long> peak_kib{e2e::ProcStatusKib(daemon.pid(), "VmRSS")};
  std::thread sampler([&] {
    while (!done) {
      peak_kib =
          std::max(peak_kib.load(), e2e::ProcStatusKib(daemon.pid(), "VmRSS"));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto stub = v1::Tuner::NewStub(daemon.Channel());
  const auto start = Clock::now();
  AutotuneOutcome o = RunAutotune(*stub, request);
  const double client_wall = Since(start);
  done = true;
  sampler.join();
  if (!o.status.ok() || !o.has_result) {
    std::printf("    failed: %d %s\n", o.status.error_code(),
                o.status.error_message().c_str());
    return;
  }
  const v1::AutotuneStats& s = o.result.stats();
  std::printf(
      "    %u shapes, %u settings timed, %u from the cache\n"
      "    device %.2f s / job wall %.2f s = utilisation %.4f (goal >= 0.95), "
      "engine overhead (wall / device) %.3f; client wall %.2f s; peak RSS "
      "%.1f MiB\n"
      "    of the job's wall time: %.2f s on the device, %.2f s waiting for "
      "builds, %.2f s the rest (CPU work, the host)\n",
      s.shapes(), s.settings_timed(), s.cache_hits(), s.device_seconds(),
      s.wall_seconds(), s.device_seconds() / s.wall_seconds(),
      s.wall_seconds() / s.device_seconds(), client_wall,
      peak_kib.load() / 1024.0, s.device_seconds(), s.build_wait_seconds(),
      s.wall_seconds() - s.device_seconds() - s.build_wait_seconds());
  PrintBuilds(s);
}

// `service_bench utilisation [decode] [irontuned flags...]`: the flags
// (e.g. --sim-build-seconds 4 --no-build-ahead) go to irontuned.
int Utilisation(bool decode, const std::vector<std::string>& flags) {
  std::printf(
      "utilisation: Autotune of the example on the real-time simulated NPU "
      "(fresh cache), simulated device time over the job's wall time\n");
  if (!decode) {
    Utilisation("--rounds 3 --calls 5 (as scripts/demo)", ExampleRequest(3, 5),
                flags);
  } else {
    v1::AutotuneRequest request = ExampleRequest(0, 0);
    request.clear_timing();
    auto* calls = request.mutable_calls()->mutable_calls();
    for (int i = calls->size() - 1; i >= 0; --i) {
      if (calls->Get(i).recording().name() != "decode") {
        calls->DeleteSubrange(i, 1);
      }
    }
    Utilisation("default Timing, the decode call only", request, flags);
  }
  return 0;
}

// ------------------------------------------------------------ mixed load

// What one Autotune or Measure stream answered.
struct StreamOutcome {
  grpc::Status status;
  std::string job_id;
  int results = 0;
  bool mixed_ids = false;  // events of more than one job on one stream
};

// How a client treats its stream once the job has an id: reads it to the
// end, cancels the job by RPC and reads on, or drops the stream.
enum class StreamEnd { kRead, kCancel, kDrop };

// Reads `reader` (of `context`) as `end` says; `cancel` cancels a job by id.
template <typename Event>
StreamOutcome Drain(grpc::ClientReaderInterface<Event>& reader,
                    grpc::ClientContext& context, StreamEnd end,
                    const std::function<void(const std::string&)>& cancel) {
  StreamOutcome out;
  Event event;
  bool acted = false;
  while (reader.Read(&event)) {
    if (!event.job_id().empty()) {
      if (out.job_id.empty()) out.job_id = event.job_id();
      if (event.job_id() != out.job_id) out.mixed_ids = true;
    }
    if (event.has_result()) ++out.results;
    if (acted || out.job_id.empty()) continue;
    acted = true;
    if (end == StreamEnd::kCancel) cancel(out.job_id);
    if (end == StreamEnd::kDrop) {
      context.TryCancel();
      break;
    }
  }
  out.status = reader.Finish();
  return out;
}

struct MixedTally {
  std::map<std::string, int64_t> sent;     // by action
  std::map<std::string, int64_t> errors;   // "action CODE"
  std::map<std::string, std::string> why;  // the first message of each code
  int64_t results = 0;                     // streams that ended with a result
  int64_t lost = 0;                        // requests never answered
  int64_t twice = 0;                       // requests answered twice
  std::vector<double> status_s;
  std::vector<std::string> job_ids;  // every job a stream named
  std::vector<std::string> dropped;  // jobs whose stream was dropped

  void Add(const MixedTally& o) {
    for (auto& [k, v] : o.sent) sent[k] += v;
    for (auto& [k, v] : o.errors) errors[k] += v;
    why.insert(o.why.begin(), o.why.end());
    results += o.results;
    lost += o.lost;
    twice += o.twice;
    status_s.insert(status_s.end(), o.status_s.begin(), o.status_s.end());
    job_ids.insert(job_ids.end(), o.job_ids.begin(), o.job_ids.end());
    dropped.insert(dropped.end(), o.dropped.begin(), o.dropped.end());
  }
};

// Counts what a stream of `action` answered: one result (or, when cancelled
// or dropped, none) or an error code; OK without a result, more than one
// result, or events of two jobs are lost or twice.
void Tally(const std::string& action, StreamEnd end, const StreamOutcome& o,
           MixedTally& t) {
  if (!o.job_id.empty()) t.job_ids.push_back(o.job_id);
  if (end == StreamEnd::kDrop && !o.job_id.empty()) {
    t.dropped.push_back(o.job_id);  // judged by the daemon's record, later
    return;
  }
  if (o.results > 1 || o.mixed_ids) ++t.twice;
  if (o.status.ok() && o.results == 1) {
    ++t.results;
  } else if (o.status.ok() ||
             o.status.error_code() == grpc::DEADLINE_EXCEEDED) {
    ++t.lost;
  } else if (!(end == StreamEnd::kCancel &&
               o.status.error_code() == grpc::CANCELLED)) {
    ++t.errors[action + " " + CodeName(o.status.error_code())];
    t.why.emplace(CodeName(o.status.error_code()), o.status.error_message());
  }
}

// A small Autotune: testing::AddSiluCalls, --rounds 2 --calls 3.
v1::AutotuneRequest SmallAutotune() {
  v1::AutotuneRequest request;
  *request.mutable_calls() = testing::AddSiluCalls();
  request.mutable_timing()->set_rounds(2);
  request.mutable_timing()->set_calls(3);
  return request;
}

// One GetStatus of the mixed load, timed into `t`.
void TimedStatus(v1::Tuner::Stub& stub, MixedTally& t) {
  ++t.sent["status"];
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  v1::StatusResponse response;
  const auto sent = Clock::now();
  grpc::Status s = stub.GetStatus(&context, v1::GetStatusRequest(), &response);
  t.status_s.push_back(Since(sent));
  if (!s.ok()) {
    ++t.errors["status " + CodeName(s.error_code())];
    t.why.emplace(CodeName(s.error_code()), s.error_message());
  }
}

// One client thread of the mixed load: picks an action at random (seeded by
// `index`) until `stop`.
MixedTally MixedClient(const Daemon& daemon, int index,
                       const std::atomic<bool>& stop) {
  auto stub = v1::Tuner::NewStub(daemon.Channel());
  v1::MeasureRequest measure = AddMeasureRequest(false);
  v1::AutotuneRequest autotune = SmallAutotune();
  const std::string client = "mixed-" + std::to_string(index);
  measure.set_client(client);
  autotune.set_client(client);
  auto cancel = [&](const std::string& id) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    v1::CancelRequest request;
    request.set_job_id(id);
    v1::CancelResponse response;
    stub->Cancel(&context, request, &response);
  };
  std::mt19937 random(static_cast<uint32_t>(index) * 7919u + 1);
  MixedTally t;
  while (!stop.load()) {
    const int pick = static_cast<int>(random() % 100);
    if (pick < 35) {
      TimedStatus(*stub, t);
      continue;
    }
    // Measure 30, Autotune 15, cancel 10, drop 10: the last two on
    // either kind.
    const bool is_measure = pick < 65 || (pick >= 80 && pick % 2 == 0);
    const StreamEnd end = pick < 80   ? StreamEnd::kRead
                          : pick < 90 ? StreamEnd::kCancel
                                      : StreamEnd::kDrop;
    const std::string action =
        std::string(end == StreamEnd::kRead     ? ""
                    : end == StreamEnd::kCancel ? "cancel "
                                                : "drop ") +
        (is_measure ? "measure" : "autotune");
    ++t.sent[action];
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(120));
    StreamOutcome o;
    if (is_measure) {
      measure.set_remeasure(random() % 4 == 0);
      auto reader = stub->Measure(&context, measure);
      o = Drain<v1::MeasureEvent>(*reader, context, end, cancel);
    } else {
      auto reader = stub->Autotune(&context, autotune);
      o = Drain<v1::AutotuneEvent>(*reader, context, end, cancel);
    }
    Tally(action, end, o, t);
    if (o.status.error_code() == grpc::RESOURCE_EXHAUSTED) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return t;
}

// The daemon's record of every job the load named: a job it has no record
// of, or that has not ended within `grace_s`, is lost.
int64_t UnendedJobs(const Daemon& daemon, const std::vector<std::string>& ids,
                    double grace_s, std::map<std::string, int64_t>* states) {
  auto stub = v1::Tuner::NewStub(daemon.Channel());
  int64_t lost = 0;
  const auto start = Clock::now();
  for (const std::string& id : ids) {
    while (true) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(10));
      v1::GetResultRequest request;
      request.set_job_id(id);
      v1::JobResult result;
      grpc::Status s = stub->GetResult(&context, request, &result);
      if (s.ok()) {
        ++(*states)[v1::JobState_Name(result.summary().state())];
        break;
      }
      if (s.error_code() != grpc::FAILED_PRECONDITION ||
          Since(start) > grace_s) {
        ++lost;  // no record, or still not ended
        std::printf("    job %s: %s\n", id.c_str(), s.error_message().c_str());
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return lost;
}

// The mixed load's figures.
void PrintMixed(const MixedTally& all, double elapsed, size_t jobs,
                const std::map<std::string, int64_t>& states, int64_t unended,
                int64_t reused, const long rss[4], long rss_max) {
  int64_t sent = 0;
  std::printf("  requests in %.1f s:", elapsed);
  for (auto& [k, v] : all.sent) {
    std::printf(" %s %lld,", k.c_str(), static_cast<long long>(v));
    sent += v;
  }
  std::printf(" all %lld\n", static_cast<long long>(sent));
  std::printf("  streams ended with their result: %lld; errors:",
              static_cast<long long>(all.results));
  if (all.errors.empty()) std::printf(" none");
  for (auto& [k, v] : all.errors) {
    std::printf(" %s %lld,", k.c_str(), static_cast<long long>(v));
  }
  for (auto& [code, message] : all.why) {
    std::printf("\n    e.g. %s: %s", code.c_str(), message.c_str());
  }
  std::printf("\n  jobs named: %zu; their states afterwards:", jobs);
  for (auto& [k, v] : states) {
    std::printf(" %s %lld", k.c_str(), static_cast<long long>(v));
  }
  std::printf(
      "\n  lost requests: %lld (streams unanswered %lld, jobs without an "
      "ended record %lld)\n",
      static_cast<long long>(all.lost + unended),
      static_cast<long long>(all.lost), static_cast<long long>(unended));
  std::printf(
      "  requests answered twice: %lld (streams with two results or two "
      "jobs %lld, job ids given twice %lld)\n",
      static_cast<long long>(all.twice + reused),
      static_cast<long long>(all.twice), static_cast<long long>(reused));
  PrintLatencies("GetStatus under load", all.status_s);
  std::printf(
      "  daemon VmRSS: start %ld KiB, middle %ld KiB, end %ld KiB (max %ld "
      "KiB); after the clients left and every job ended %ld KiB\n",
      rss[0], rss[1], rss[2], rss_max, rss[3]);
}

int MixedLoad(double seconds) {
  constexpr int kThreads = 64;
  std::printf(
      "mixed load: %d client threads for %.0f s, each its own channel "
      "(loopback TCP), irontuned --sim-clock virtual, default limits. Each "
      "request at random: 35%% GetStatus, 30%% Measure (ElementwiseAdd, 2 "
      "settings, a quarter remeasured), 15%% Autotune (AddSiluCalls, "
      "--rounds 2 --calls 3), 10%% a job cancelled by Cancel once it has an "
      "id, 10%% a job whose stream is dropped (ClientContext::TryCancel) "
      "once it has an id\n",
      kThreads, seconds);
  Daemon daemon("mixed", "virtual");
  if (!daemon.up()) return 1;
  long rss[4] = {e2e::ProcStatusKib(daemon.pid(), "VmRSS"), -1, -1,
                 -1};  // start, mid, end, after
  long rss_max = rss[0];
  std::atomic<bool> stop{false};
  std::vector<MixedTally> tallies(kThreads);
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] { tallies[t] = MixedClient(daemon, t, stop); });
  }
  while (Since(start) < seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const long now = e2e::ProcStatusKib(daemon.pid(), "VmRSS");
    rss_max = std::max(rss_max, now);
    if (rss[1] < 0 && Since(start) >= seconds / 2) rss[1] = now;
    rss[2] = now;
  }
  stop = true;
  for (std::thread& w : workers) w.join();
  const double elapsed = Since(start);
  MixedTally all;
  for (const MixedTally& t : tallies) all.Add(t);
  std::map<std::string, int64_t> states;
  const int64_t unended = UnendedJobs(daemon, all.job_ids, 30, &states);
  std::set<std::string> unique(all.job_ids.begin(), all.job_ids.end());
  const int64_t reused = static_cast<int64_t>(all.job_ids.size()) -
                         static_cast<int64_t>(unique.size());
  rss[3] = e2e::ProcStatusKib(daemon.pid(), "VmRSS");

  PrintMixed(all, elapsed, unique.size(), states, unended, reused, rss,
             rss_max);
  return 0;
}

// ------------------------------------------------------------- big job

// Resets `pid`'s VmHWM to its present RSS (proc(5), clear_refs "5").
bool ResetPeakRss(pid_t pid) {
  std::ofstream out("/proc/" + std::to_string(pid) + "/clear_refs");
  out << "5\n";
  out.flush();
  return static_cast<bool>(out);
}

Platform PlatformOf(const v1::StatusResponse& s) {
  Platform p;
  p.name = s.platform();
  p.generation = s.generation();
  p.columns = static_cast<int>(s.columns());
  p.core_mhz = static_cast<int>(s.core_mhz());
  p.hw_contexts = static_cast<int>(s.hw_contexts());
  p.full_elf = true;
  return p;
}

// The example's operator whose Measure at `repeats` admission estimates
// largest (up to 2 GiB), with that estimate.
std::pair<v1::MeasureRequest, JobCost> BiggestMeasure(const Platform& p,
                                                      uint32_t repeats) {
  auto recording = LoadRecording(kExample);
  if (!recording.ok()) std::exit(1);
  std::pair<v1::MeasureRequest, JobCost> best;
  for (const v1::Operator& op : recording->operators()) {
    v1::MeasureRequest request;
    *request.mutable_operator_() = op;
    request.set_repeats(repeats);
    request.set_remeasure(true);
    request.mutable_timing()->set_rounds(2);
    request.mutable_timing()->set_calls(3);
    if (!ValidateMeasureRequest(request).ok()) continue;
    // At most 2 GiB, so the run fits beside others on a shared box.
    AdmissionLimits limits;
    limits.job_memory_bytes = uint64_t{2} << 30;
    absl::StatusOr<JobCost> cost = AdmitMeasure(request, p, limits);
    if (cost.ok() && cost->memory_bytes > best.second.memory_bytes) {
      best = {request, *cost};
    }
  }
  return best;
}

// "GEMM M=256 K=2048 N=2048": the class and its integer params.
std::string ShapeText(const v1::Operator& op) {
  std::string out = op.class_name();
  for (const v1::Param& p : op.params()) {
    if (p.value().has_int_value()) {
      out += " " + p.name() + "=" + std::to_string(p.value().int_value());
    }
  }
  return out;
}

// The daemon's status through `stub`; false when the call fails.
bool GetStatusOf(v1::Tuner::Stub& stub, v1::StatusResponse* status) {
  grpc::ClientContext context;
  return stub.GetStatus(&context, v1::GetStatusRequest(), status).ok();
}

// The example's Autotune at the default Timing (the lm-head GEMV its
// largest shape): its real peak RSS, measured as BigJob's, against
// admission's estimate. One shape at a time, as the virtual clock runs
// them (builds take no wall time, so no shape is searched beside
// another); the estimate for shapes at once sums the largest shapes'
// figures, an upper bound.
int BigAutotune() {
  Daemon daemon("bigautotune", "virtual", {"--shapes-at-once", "1"});
  if (!daemon.up()) return 1;
  auto stub = v1::Tuner::NewStub(daemon.Channel());
  v1::StatusResponse status;
  if (!GetStatusOf(*stub, &status)) return 1;
  v1::AutotuneRequest request = ExampleRequest(0, 0);
  request.clear_timing();
  spdlog::set_level(spdlog::level::warn);  // the settings' domain notes
  AdmissionLimits limits;
  limits.job_memory_bytes = limits.memory_limit_bytes = uint64_t{64} << 30;
  absl::StatusOr<JobCost> cost =
      AdmitAutotune(request, PlatformOf(status), limits, 1);
  if (!cost.ok()) {
    std::printf("  Autotune: %s\n", cost.status().ToString().c_str());
    return 1;
  }
  const long before = e2e::ProcStatusKib(daemon.pid(), "VmRSS");
  const bool reset = ResetPeakRss(daemon.pid());
  AutotuneOutcome o = RunAutotune(*stub, request);
  const long peak = e2e::ProcStatusKib(daemon.pid(), "VmHWM");
  const double extra = static_cast<double>(peak - before) * 1024;
  std::printf(
      "  the example's Autotune, default Timing: %s; estimate %s; VmRSS "
      "before %ld KiB, VmHWM during %ld KiB%s: the job's peak %.1f MiB; "
      "estimate / peak = %.3f\n",
      o.status.ok() && o.has_result ? "tuned"
                                    : o.status.error_message().c_str(),
      FormatBytes(cost->memory_bytes).c_str(), before, peak,
      reset ? "" : " (VmHWM not reset: since start)", extra / (1 << 20),
      static_cast<double>(cost->memory_bytes) / extra);
  return 0;
}

// One big Measure's real peak RSS (VmHWM over the job, less the RSS before
// it) against admission's estimate.
int BigJob() {
  std::printf(
      "big job: a Measure (remeasure) of the example's operator that "
      "admission estimates largest, alone on a fresh irontuned --sim-clock "
      "virtual; peak RSS is VmHWM reset just before the job\n");
  for (uint32_t repeats : {0u, 64u, 256u}) {
    Daemon daemon("bigjob", "virtual");
    if (!daemon.up()) return 1;
    auto stub = v1::Tuner::NewStub(daemon.Channel());
    v1::StatusResponse status;
    if (!GetStatusOf(*stub, &status)) return 1;
    auto [request, cost] = BiggestMeasure(PlatformOf(status), repeats);
    if (cost.memory_bytes == 0) {
      std::printf("  repeats %u: no operator admitted\n", repeats);
      continue;
    }
    const long before = e2e::ProcStatusKib(daemon.pid(), "VmRSS");
    const bool reset = ResetPeakRss(daemon.pid());
    grpc::ClientContext context;
    auto reader = stub->Measure(&context, request);
    v1::MeasureEvent event;
    bool result = false;
    while (reader->Read(&event)) result |= event.has_result();
    grpc::Status s = reader->Finish();
    const long peak = e2e::ProcStatusKib(daemon.pid(), "VmHWM");
    const double extra = static_cast<double>(peak - before) * 1024;
    std::printf(
        "  %s, repeats %u: %s; estimate %s; VmRSS before %ld KiB, VmHWM "
        "during %ld KiB%s: the job's peak %.1f MiB; estimate / peak = %.3f "
        "(goal: near 1, never under)\n",
        ShapeText(request.operator_()).c_str(), request.repeats(),
        s.ok() && result ? "timed" : s.error_message().c_str(),
        FormatBytes(cost.memory_bytes).c_str(), before, peak,
        reset ? "" : " (VmHWM not reset: since start)", extra / (1 << 20),
        static_cast<double>(cost.memory_bytes) / extra);
  }
  return BigAutotune();
}

// ----------------------------------------------------------- cached busy

// What `service_bench busy` is given.
struct BusyArgs {
  DaemonSetup daemon;
  std::string client = kClient;
  int clients = 24;
  double seconds = 20;
  double think_ms = 300;  // mean pause between a client's submits
  // "example": the example's Autotune remeasured (it rewrites the rows the
  // cached submits read); "other": a long Autotune of another recording
  // (testing::SmallAutotune: two shapes, 1000 rounds of 1000 calls).
  std::string long_job = "example";
  std::vector<std::string> flags;  // more irontuned flags
};

// The long job's request.
v1::AutotuneRequest LongRequest(const std::string& which) {
  v1::AutotuneRequest request;
  if (which == "other") {
    request = testing::SmallAutotune(/*quick=*/false);
  } else {
    // Timed longer than the submits' figures (the Timing is not in the
    // cache key), so it outlasts the load.
    request = ExampleRequest(8, 6);
    request.set_remeasure(true);
  }
  request.set_client("long-job");
  return request;
}

// A long Autotune (LongRequest), on a stream of its own until Stop
// cancels it: a job holding the device.
class LongJob {
 public:
  LongJob(const Daemon& daemon, const v1::AutotuneRequest& request)
      : stub_(v1::Tuner::NewStub(daemon.Channel())) {
    thread_ = std::thread([this, request] { Follow(request); });
  }
  ~LongJob() { Stop(); }
  // Waits up to 60 s for its Started event; its job id, or "".
  std::string WaitStarted() {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(60),
                      [this] { return started_ || ended_; });
    return started_ ? id_ : std::string();
  }
  bool ended() {
    std::lock_guard<std::mutex> lock(mu_);
    return ended_;
  }
  void Stop() {
    context_.TryCancel();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Follow(const v1::AutotuneRequest& request) {
    auto reader = stub_->Autotune(&context_, request);
    v1::AutotuneEvent e;
    while (reader->Read(&e)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (id_.empty()) id_ = e.job_id();
      if (e.has_started()) started_ = true;
      changed_.notify_all();
    }
    reader->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    changed_.notify_all();
  }

  std::unique_ptr<v1::Tuner::Stub> stub_;
  grpc::ClientContext context_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::string id_;
  bool started_ = false, ended_ = false;
  std::thread thread_;
};

// A submit's deadline in `busy`: one waiting longer counts as failed
// (DEADLINE_EXCEEDED), its latency as this.
constexpr double kBusyDeadlineS = 10;

struct LoadRun {
  std::vector<double> latency_s;  // raw stub submits
  std::vector<double> client_s;   // irontune-client processes
  int failures = 0;
  std::map<std::string, int> codes;  // the stub submits' failures by code
  double seconds = 0;
};

// `args.clients` threads, each with its own channel, submitting the
// example's cached Autotune for `args.seconds`, pausing a uniform
// [0, 2 think_ms] between submits; beside them one more client that runs
// irontune-client processes, pausing as they do.
LoadRun CachedLoad(const Daemon& daemon, const BusyArgs& args) {
  LoadRun run;
  std::mutex mu;
  const v1::AutotuneRequest request = ExampleRequest(2, 3);
  const auto end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(args.seconds));
  auto client = [&](int index) {
    auto stub = v1::Tuner::NewStub(daemon.Channel());
    std::mt19937 rng(index);
    std::uniform_real_distribution<double> think(0, 2 * args.think_ms);
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::milli>(think(rng)));
    while (Clock::now() < end) {
      const auto start = Clock::now();
      AutotuneOutcome o = RunAutotune(*stub, request, nullptr, kBusyDeadlineS);
      const double took = Since(start);
      {
        std::lock_guard<std::mutex> lock(mu);
        run.latency_s.push_back(took);
        if (!o.status.ok() || !o.has_result) {
          ++run.failures;
          ++run.codes[CodeName(o.status.error_code())];
        }
      }
      std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(think(rng)));
    }
  };
  auto processes = [&] {
    const std::vector<std::string> submit = {
        args.client, "--server",  daemon.address(),
        "--timeout", "10",        "submit",
        kExample,    "--profile", kProfile,
        "--rounds",  "2",         "--calls",
        "3",         "--json"};
    std::mt19937 rng(args.clients);
    std::uniform_real_distribution<double> think(0, 2 * args.think_ms);
    while (Clock::now() < end) {
      const auto start = Clock::now();
      const int rc = RunBlocking(submit);
      {
        std::lock_guard<std::mutex> lock(mu);
        run.client_s.push_back(Since(start));
        if (rc != 0) ++run.failures;
      }
      std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(think(rng)));
    }
  };
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < args.clients; ++i) threads.emplace_back(client, i);
  threads.emplace_back(processes);
  for (std::thread& t : threads) t.join();
  run.seconds = Since(start);
  return run;
}

void PrintLoad(const char* title, const LoadRun& r) {
  std::printf(
      "  %s: %zu stub submits and %zu client processes in %.1f s "
      "(%.1f/s), %d failed\n",
      title, r.latency_s.size(), r.client_s.size(), r.seconds,
      (r.latency_s.size() + r.client_s.size()) / r.seconds, r.failures);
  if (!r.codes.empty()) {
    std::printf("    stub failures by code:");
    for (const auto& [code, n] : r.codes) {
      std::printf(" %s %d", code.c_str(), n);
    }
    std::printf(" (a submit waits at most %.0f s)\n", kBusyDeadlineS);
  }
  PrintLatencies("  raw stub->Autotune, each client its channel", r.latency_s);
  PrintLatencies("  irontune-client submit (process, wall)", r.client_s);
}

// The jobs irontuned's log says it answered from the cache.
int AnsweredFromCache(const std::string& log) {
  int n = 0;
  for (size_t at = log.find("(from the cache)\n"); at != std::string::npos;
       at = log.find("(from the cache)\n", at + 1)) {
    if (log.rfind(" ended: ", at) > log.rfind('\n', at)) ++n;
  }
  return n;
}

// Fills a state dir's cache with the example's figures, on the virtual
// clock; false when the submit fails.
bool FillCache(const BusyArgs& args, const std::string& dir) {
  DaemonSetup setup = args.daemon;
  setup.dir = dir;
  Daemon fill("busy-fill", "virtual", {}, "", setup);
  if (!fill.up()) return false;
  const int rc = RunBlocking({args.client, "--server", fill.address(), "submit",
                              kExample, "--profile", kProfile, "--rounds", "2",
                              "--calls", "3", "--json"});
  std::printf("  cache filled on the virtual clock: exit %d\n", rc);
  return rc == 0;
}

// One client's cached submits, one after another, on an idle daemon.
std::vector<double> OneIdle(const Daemon& daemon) {
  auto stub = v1::Tuner::NewStub(daemon.Channel());
  const v1::AutotuneRequest request = ExampleRequest(2, 3);
  for (int i = 0; i < 2; ++i) RunAutotune(*stub, request);  // connect, warm
  std::vector<double> out;
  for (int i = 0; i < 30; ++i) {
    const auto start = Clock::now();
    RunAutotune(*stub, request);
    out.push_back(Since(start));
  }
  return out;
}

// The job on the device now, as GetStatus says; "" when idle.
std::string RunningJob(const Daemon& daemon) {
  v1::StatusResponse status;
  auto stub = v1::Tuner::NewStub(daemon.Channel());
  if (!GetStatusOf(*stub, &status) || !status.has_running()) return "";
  return status.running().job_id();
}

// The phases of `busy` on the realtime daemon: one client alone, the
// clients on the idle daemon, then the clients while the long job runs.
// The CPU seconds process `pid` has used (its threads, those ended too).
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  // The fields after the command's closing parenthesis; utime and stime
  // are the 14th and 15th of the line.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::atof(field.c_str());
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// irontuned's CPU over a phase, and the submits answered in it.
struct PhaseCpu {
  double seconds = 0, wall = 0;
  size_t submits = 0;
};

void PrintBusy(const LoadRun& idle, const LoadRun& busy, const PhaseCpu& a,
               const PhaseCpu& alone, const PhaseCpu& b) {
  PrintLoad("idle", idle);
  PrintLoad("while the long job runs", busy);
  const double rate = alone.wall > 0 ? alone.seconds / alone.wall : 0;
  std::printf(
      "  irontuned's CPU: %.2f ms a submit idle; the long job alone %.0f%% "
      "of a core; %.2f ms a submit while it runs (beyond it)\n",
      a.seconds / std::max<size_t>(1, a.submits) * 1e3, rate * 100,
      (b.seconds - rate * b.wall) / std::max<size_t>(1, b.submits) * 1e3);
  const double p50 = Percentile(busy.latency_s, 50);
  const double p99 = Percentile(busy.latency_s, 99);
  std::printf("  busy / idle p50 %.2f, p99 %.2f\n",
              p50 / Percentile(idle.latency_s, 50),
              p99 / Percentile(idle.latency_s, 99));
  const bool answered = busy.failures == 0;
  std::printf("  goal while busy: p50 <= 30 ms: %s; p99 <= 100 ms: %s\n",
              answered && p50 <= 0.030 ? "met" : "NOT met",
              answered && p99 <= 0.100 ? "met" : "NOT met");
}

// Runs the load on `daemon` as `cpu` counts it.
LoadRun CountedLoad(const Daemon& daemon, const BusyArgs& args, PhaseCpu& cpu) {
  const double before = ProcessCpuSeconds(daemon.pid());
  const auto start = Clock::now();
  LoadRun run = CachedLoad(daemon, args);
  cpu.seconds = ProcessCpuSeconds(daemon.pid()) - before;
  cpu.wall = Since(start);
  cpu.submits = run.latency_s.size() + run.client_s.size();
  return run;
}

int BusyPhases(const Daemon& daemon, const BusyArgs& args) {
  const std::vector<double> one = OneIdle(daemon);
  PhaseCpu idle_cpu, alone, busy_cpu;
  const LoadRun idle = CountedLoad(daemon, args, idle_cpu);
  const int idle_answered = AnsweredFromCache(daemon.Log());
  LongJob long_job(daemon, LongRequest(args.long_job));
  const std::string id = long_job.WaitStarted();
  if (id.empty()) {
    std::printf("  the long job did not start\n");
    return 1;
  }
  const double before = ProcessCpuSeconds(daemon.pid());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  alone = {ProcessCpuSeconds(daemon.pid()) - before, 3, 0};
  const auto busy_start = Clock::now();
  const LoadRun busy = CountedLoad(daemon, args, busy_cpu);
  const std::string running = RunningJob(daemon);
  const bool held = running == id && !long_job.ended();
  const double held_s = Since(busy_start);
  long_job.Stop();
  std::printf(
      "  answered from the cache (irontuned's log): %d while idle, "
      "%d while busy\n",
      idle_answered, AnsweredFromCache(daemon.Log()) - idle_answered);
  std::printf("  the long job %s was %s on the device after %.1f s of load\n",
              id.c_str(), held ? "still running" : "NOT running", held_s);
  PrintLatencies("one client alone, raw stub->Autotune", one);
  PrintBusy(idle, busy, idle_cpu, alone, busy_cpu);
  return busy.failures == 0 && idle.failures == 0 && held ? 0 : 1;
}

int Busy(const BusyArgs& args) {
  std::printf(
      "busy: fully cached Autotunes of the example (--rounds 2 --calls 3) "
      "from %d clients (mean pause %.0f ms) for %.0f s, idle and while %s "
      "holds the device; irontuned --sim-clock realtime "
      "--sim-build-seconds 0%s%s, %s\n",
      args.clients, args.think_ms, args.seconds,
      args.long_job == "other"
          ? "an Autotune of another recording (2 shapes, 1000 rounds of 1000 "
            "calls)"
          : "the example's Autotune remeasured",
      args.flags.empty() ? "" : " ", absl::StrJoin(args.flags, " ").c_str(),
      args.daemon.binary.c_str());
  const std::string dir = e2e::TempDir("bench-busy");
  if (!FillCache(args, dir)) return 1;
  std::vector<std::string> flags = {"--sim-build-seconds", "0"};
  flags.insert(flags.end(), args.flags.begin(), args.flags.end());
  DaemonSetup setup = args.daemon;
  setup.dir = dir;
  int rc = 1;
  {
    Daemon daemon("busy", "realtime", flags, "", setup);
    if (daemon.up()) rc = BusyPhases(daemon, args);
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return rc;
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

// `busy`'s arguments: --irontuned PATH, --client PATH, --clients N,
// --seconds S, --think-ms M; the rest go to irontuned. False on a flag
// without its value.
bool ParseBusy(int argc, char** argv, BusyArgs& args) {
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool ours = flag == "--irontuned" || flag == "--client" ||
                      flag == "--clients" || flag == "--seconds" ||
                      flag == "--think-ms" || flag == "--long";
    if (!ours) {
      args.flags.push_back(flag);
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (flag == "--irontuned") args.daemon.binary = value;
    if (flag == "--client") args.client = value;
    if (flag == "--clients") args.clients = std::max(1, std::atoi(argv[i]));
    if (flag == "--seconds") args.seconds = std::atof(argv[i]);
    if (flag == "--think-ms") args.think_ms = std::atof(argv[i]);
    if (flag == "--long") args.long_job = value;
  }
  return true;
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  const bool decode = argc > 2 && std::string(argv[2]) == "decode";
  std::vector<std::string> flags;
  for (int i = decode ? 3 : 2; i < argc; ++i) flags.push_back(argv[i]);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (what == "cached") return irontune::Cached();
  if (what == "busy") {
    irontune::BusyArgs args;
    if (!irontune::ParseBusy(argc, argv, args)) {
      std::fprintf(stderr, "service_bench busy: a flag without its value\n");
      return 2;
    }
    return irontune::Busy(args);
  }
  if (what == "concurrent") return irontune::Concurrent();
  if (what == "utilisation") return irontune::Utilisation(decode, flags);
  if (what == "--mixed-load" || what == "mixed") {
    // A duration: "60s" or "60".
    const double seconds = argc > 2 ? std::atof(argv[2]) : 60;
    if (seconds <= 0) {
      std::fprintf(stderr, "service_bench --mixed-load SECONDS[s]\n");
      return 2;
    }
    return irontune::MixedLoad(seconds);
  }
  if (what == "--big-job" || what == "big-job") return irontune::BigJob();
  if (what == "all") {
    int rc = irontune::Cached();
    rc |= irontune::Concurrent();
    rc |= irontune::Utilisation(false, flags);
    return rc;
  }
  std::fprintf(stderr,
               "usage: service_bench cached|concurrent|utilisation "
               "[decode] [irontuned flags...]|busy [--irontuned PATH] "
               "[--client PATH] [--clients N] [--seconds S] [--think-ms M] "
               "[--long example|other] [irontuned flags...]|all|"
               "--mixed-load 60s|--big-job\n");
  return 2;
}
