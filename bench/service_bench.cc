// Benchmarks of irontuned as a service: the real binaries over loopback TCP.
// Prints figures; never fails on time.
//
//   service_bench cached       a fully cached Autotune of the example, end to
//                              end through irontune-client subprocesses and
//                              in-process with a raw gRPC stub: p50/p99
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
//   service_bench all          cached, concurrent, utilisation
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/profile.h"
#include "common/recording.h"
#include "common/value.h"
#include "grpcpp/grpcpp.h"
#include "irontune/v1/tuner.grpc.pb.h"
#include "tests/testing/process.h"

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

// Nearest-rank percentile of `v` (sorted in place), p in [0, 100].
double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(p / 100.0 * v.size() + 0.999999);
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
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

long RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// irontuned on loopback TCP with a fresh state dir; SIGTERM on destruction.
class Daemon {
 public:
  Daemon(const std::string& tag, const std::string& clock,
         std::vector<std::string> extra = {})
      : dir_(e2e::TempDir("bench-" + tag)) {
    // Log level info: the start-up line names the port it picked for :0.
    std::vector<std::string> argv = {kDaemon,    "--state-dir", dir_,
                                     "--listen", "127.0.0.1:0", "--sim-clock",
                                     clock,      "--log-level", "info"};
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
    std::filesystem::remove_all(dir_, ignored);
  }
  bool up() const { return up_; }
  pid_t pid() const { return process_->pid(); }
  const std::string& address() const { return address_; }
  const std::string& dir() const { return dir_; }
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
      v1::StatusResponse status;
      if (stub->GetStatus(&context, v1::GetStatusRequest(), &status).ok()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::string dir_;
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
                            const v1::AutotuneRequest& request) {
  AutotuneOutcome out;
  grpc::ClientContext context;
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
  return 0;
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
  run.rss_kib[0] = RssKib(daemon.pid());
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
    long rss = RssKib(daemon.pid());
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
  run.rss_kib[4] = RssKib(daemon.pid());
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
  std::atomic<long> peak_kib{RssKib(daemon.pid())};
  std::thread sampler([&] {
    while (!done) {
      peak_kib = std::max(peak_kib.load(), RssKib(daemon.pid()));
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
      "%.1f MiB\n",
      s.shapes(), s.settings_timed(), s.cache_hits(), s.device_seconds(),
      s.wall_seconds(), s.device_seconds() / s.wall_seconds(),
      s.wall_seconds() / s.device_seconds(), client_wall,
      peak_kib.load() / 1024.0);
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

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  const bool decode = argc > 2 && std::string(argv[2]) == "decode";
  std::vector<std::string> flags;
  for (int i = decode ? 3 : 2; i < argc; ++i) flags.push_back(argv[i]);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (what == "cached") return irontune::Cached();
  if (what == "concurrent") return irontune::Concurrent();
  if (what == "utilisation") return irontune::Utilisation(decode, flags);
  if (what == "all") {
    int rc = irontune::Cached();
    rc |= irontune::Concurrent();
    rc |= irontune::Utilisation(false, flags);
    return rc;
  }
  std::fprintf(stderr,
               "usage: service_bench cached|concurrent|utilisation "
               "[decode] [irontuned flags...]|all\n");
  return 2;
}
