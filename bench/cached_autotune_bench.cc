// A fully cached Autotune of the example in process, without gRPC: what
// the device worker's part of `service_bench cached` costs, and what it
// asks of the builder, the device, the seeded inputs and the judge.
// Prints figures; never fails on time.
//
//   cached_autotune_bench [--runs N] [--cache PATH] [--rounds R] [--calls C]
//
// The first run fills the cache (on the sim's virtual clock: minutes of
// CPU); --cache keeps it in PATH for the next invocation. Each further run
// is timed by the wall clock and by the thread's CPU clock (the figure to
// trust on a loaded box), with the Settings enumeration and the admission's
// share timed apart: first as irontuned runs it (each shape's search kept
// in the shape memo), then with the memo emptied before each run.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/percentile.h"
#include "common/profile.h"
#include "common/recording.h"
#include "daemon/npu/device.h"
#include "daemon/scheduler/admission.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "daemon/store/cache.h"
#include "daemon/tune/autotune.h"
#include "daemon/tune/settings.h"
#include "daemon/tune/shape_memo.h"
#include "daemon/tune/shapes.h"
#include "spdlog/spdlog.h"
#include "tests/testing/counting_fakes.h"
#include "tests/testing/tune_context.h"

namespace irontune {
namespace {

using testing::CountingBuilder;
using testing::CountingDevice;

const std::string kSource = IRONTUNE_SOURCE_DIR;

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double WallSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Print(const char* what, const std::vector<double>& s) {
  std::printf("  %-40s p50 %8.2f ms  p99 %8.2f ms  min %8.2f ms\n", what,
              Percentile(s, 50) * 1e3, Percentile(s, 99) * 1e3,
              *std::min_element(s.begin(), s.end()) * 1e3);
}

struct Args {
  int runs = 30;
  std::string cache;
  int rounds = 2;
  int calls = 3;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--runs") {
      a.runs = std::atoi(argv[i + 1]);
    } else if (flag == "--cache") {
      a.cache = argv[i + 1];
    } else if (flag == "--rounds") {
      a.rounds = std::atoi(argv[i + 1]);
    } else if (flag == "--calls") {
      a.calls = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  return a;
}

// The Settings enumeration of every shape, as admission and TimeShape ask
// for it, timed on the thread's CPU clock.
double SettingsSeconds(const v1::Calls& calls, const Platform& platform) {
  const double start = CpuSeconds();
  auto shapes = Shapes(calls, DefaultSearchSpace(), platform.generation);
  if (!shapes.ok()) return -1;
  for (const Shape& shape : *shapes) {
    for (const ShapeMember& m : shape.members) {
      (void)Settings(calls.operators(static_cast<int>(m.op)), platform,
                     shape.pinned, DefaultSearchSpace());
    }
  }
  return CpuSeconds() - start;
}

// Times args.runs fully cached Autotunes; with `kept` false, the shape
// memo (daemon/tune/shape_memo.h) is emptied before each, so every search
// reads its figures from the cache again. False when a run fails.
bool CachedRuns(const Args& args, bool kept, const v1::Calls& calls,
                const Profile& profile, const AutotuneOptions& options,
                const v1::AutotuneRequest& request, const Platform& platform,
                Builder& sim_builder, Device* sim, Cache* cache) {
  std::printf("  %s\n", kept ? "searches kept in the shape memo (the daemon's "
                               "path):"
                             : "shape memo emptied before each run (every "
                               "figure read from the cache):");
  std::vector<double> wall, cpu, admit, settings;
  TuneStats stats;
  int builds = 0, prefetches = 0, later = 0, loads = 0, inputs = 0, trials = 0,
      lines = 0;
  int judged = 0;
  for (int r = 0; r < args.runs; ++r) {
    CountingBuilder builder(sim_builder);
    CountingDevice device(sim);
    testing::LocalTuneContext context(&device, &builder, cache);
    AutotuneOptions counted = options;
    counted.judge = testing::CountingJudge(&judged);
    double c0 = CpuSeconds();
    (void)AdmitAutotune(request, platform, AdmissionLimits());
    admit.push_back(CpuSeconds() - c0);
    settings.push_back(SettingsSeconds(calls, platform));
    if (!kept) ForgetKeptShapes();
    const double w = WallSeconds();
    c0 = CpuSeconds();
    auto run = Autotune(calls, profile, counted, context);
    cpu.push_back(CpuSeconds() - c0);
    wall.push_back(WallSeconds() - w);
    if (!run.ok()) {
      std::printf("run %d: %s\n", r, run.status().ToString().c_str());
      return false;
    }
    stats = run->stats;
    builds = builder.builds;
    prefetches = builder.prefetches;
    later = builder.later_prefetches;
    loads = device.loads;
    inputs = context.inputs_asked;
    trials = context.trials;
    lines = static_cast<int>(context.lines.size());
  }
  std::printf(
      "    each cached run: %lld measure calls, %lld cache hits, %lld timed; "
      "builds %d, prefetches %d (for a next shape %d), device loads %d, seeded "
      "inputs asked %d, "
      "judged %d; OnTrial %d, log lines %d\n",
      static_cast<long long>(stats.measure_calls),
      static_cast<long long>(stats.cache_hits),
      static_cast<long long>(stats.device_timed), builds, prefetches, later,
      loads, inputs, judged, trials, lines);
  Print("  Autotune, wall", wall);
  Print("  Autotune, thread CPU", cpu);
  Print("  AdmitAutotune (server), thread CPU", admit);
  Print("  Settings of every shape, thread CPU", settings);
  return true;
}

int Run(const Args& args) {
  spdlog::set_level(spdlog::level::warn);
  auto calls = LoadRecording(kSource + "/examples/llama-3.2-1b.rec");
  auto profile = Profile::Load(kSource + "/examples/profiles/npu2.json");
  auto sim = MakeSimDevice("sim:npu2", SimOptions());
  if (!calls.ok() || !profile.ok() || !sim.ok()) {
    std::printf("cannot set up: %s %s %s\n", calls.status().ToString().c_str(),
                profile.status().ToString().c_str(),
                sim.status().ToString().c_str());
    return 1;
  }
  const std::string path =
      args.cache.empty()
          ? (std::filesystem::temp_directory_path() / "cached_autotune.db")
                .string()
          : args.cache;
  if (args.cache.empty()) std::filesystem::remove(path);
  auto platform = (*sim)->GetPlatform();
  auto cache = Cache::Open(path, platform->name, platform->power_mode);
  if (!cache.ok()) {
    std::printf("cache: %s\n", cache.status().ToString().c_str());
    return 1;
  }
  v1::Timing timing;
  timing.set_rounds(args.rounds);
  timing.set_calls(args.calls);
  AutotuneOptions options;
  options.timing = ResolvedTiming(timing);
  v1::AutotuneRequest request;
  *request.mutable_calls() = *calls;
  *request.mutable_profile() = profile->proto();
  *request.mutable_timing() = timing;
  SimBuilder sim_builder;

  std::printf(
      "cached_autotune: examples/llama-3.2-1b.rec, npu2.json, --rounds %d "
      "--calls %d, sim:npu2 virtual clock, cache %s\n",
      args.rounds, args.calls, path.c_str());
  double start = WallSeconds();
  {
    CountingBuilder builder(sim_builder);
    testing::LocalTuneContext context(sim->get(), &builder, cache->get());
    auto first = Autotune(*calls, *profile, options, context);
    if (!first.ok()) {
      std::printf("first run: %s\n", first.status().ToString().c_str());
      return 1;
    }
    std::printf("  first run: %.2f s wall, %lld timed, %lld from the cache\n",
                WallSeconds() - start,
                static_cast<long long>(first->stats.device_timed),
                static_cast<long long>(first->stats.cache_hits));
  }

  for (const bool kept : {true, false}) {
    if (!CachedRuns(args, kept, *calls, *profile, options, request, *platform,
                    sim_builder, sim->get(), cache->get())) {
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) {
  return irontune::Run(irontune::Parse(argc, argv));
}
