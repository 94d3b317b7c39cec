// Benchmarks of measure() on the simulated NPU. Prints figures; never fails
// on time.
//
//   measure_bench overhead   64 GEMM settings on the real-time clock:
//                            wall time over simulated device time
//   measure_bench memory     peak RSS of measuring a 2048x8192 GEMV and a
//                            256x2048x8192 GEMM (run each alone: `memory
//                            gemv`, `memory gemm`)
//   measure_bench precision  spread of t_step_us over 20 measurements of one
//                            setting at the default Timing, against the noise
//                            reported, without a cache and with one learning
//                            from the repeats; the same for a paired delta
//   measure_bench cpu        host CPU work of a batch: zeroing the example's
//                            525 MB lm-head weight in 4 KiB pages against
//                            advised huge pages, and a seeded input of it;
//                            an elementwise map over 32M elements, looked up
//                            once against per element
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/value.h"
#include "daemon/base/big_bytes.h"
#include "daemon/base/stats.h"
#include "daemon/npu/metered.h"
#include "daemon/ops/numeric.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "daemon/store/cache.h"
#include "daemon/tune/inputs.h"
#include "daemon/tune/measure.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/tune_context.h"

namespace irontune {
namespace {

using testing::IronGemm;

// A 1-batch GEMV (weights[M, K] x[K] -> y[M]) at IRON's default setting: 8
// columns, 1-element input tiles, 256 output rows, 64-wide vectors.
v1::Operator Gemv(int64_t m, int64_t k) {
  v1::Operator op = testing::GemvParams(m, k, 1, 256, 64, 8);
  testing::AddParam(op, "num_batches", 1);
  testing::AddBuffer(op, "weights", v1::BUFFER_ROLE_IN,
                     {uint64_t(m), uint64_t(k)});
  testing::AddBuffer(op, "x", v1::BUFFER_ROLE_IN, {uint64_t(k)});
  testing::AddBuffer(op, "y", v1::BUFFER_ROLE_OUT, {uint64_t(m)});
  return op;
}

long PeakRssKib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

int Overhead() {
  SimOptions options;
  options.clock = SimOptions::Clock::kRealTime;
  auto sim = MakeSimDevice("sim:npu2", options);
  SimBuilder builder;
  MeteredDevice device(sim->get());
  Platform platform = *(*sim)->GetPlatform();
  MeasurePlan request;
  request.packaging = v1::PACKAGING_FULL_ELF;
  v1::Timing timing;
  timing.set_rounds(4);
  timing.set_calls(10);
  timing.set_cutoff(100);  // time every setting in full
  request.timing = ResolvedTiming(timing);
  // The first 64 settings of a 512^3 GEMM that build.
  for (int64_t cols : {8, 4, 2, 1}) {
    for (int64_t tm : {64, 32, 16}) {
      for (int64_t tk : {64, 32, 16, 128}) {
        for (int64_t tn : {64, 32, 16}) {
          v1::Operator op = IronGemm(512, 512, 512, tm, tk, tn, cols);
          auto outcome =
              builder.Build({op, platform, 1, true, request.packaging});
          if (outcome.ok() && outcome->artifact &&
              request.settings.size() < 64) {
            request.settings.push_back(op);
          }
        }
      }
    }
  }
  testing::LocalTuneContext deps(&device, &builder);
  auto start = std::chrono::steady_clock::now();
  auto result = Measure(request, deps);
  double wall_us = std::chrono::duration<double, std::micro>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  if (!result.ok()) {
    std::printf("measure failed: %s\n", result.status().ToString().c_str());
    return 1;
  }
  std::printf("engine overhead: %zu GEMM settings, %lld runs\n",
              request.settings.size(), static_cast<long long>(device.runs()));
  std::printf("  simulated device time %.3f s, wall time %.3f s\n",
              device.device_us() / 1e6, wall_us / 1e6);
  std::printf("  wall / device = %.4f (goal <= 1.02)\n",
              wall_us / device.device_us());
  return 0;
}

int Memory(const std::string& which) {
  auto sim = MakeSimDevice("sim:npu2");
  SimBuilder builder;
  MeasurePlan request;
  request.packaging = v1::PACKAGING_FULL_ELF;
  if (which == "gemv") {
    request.settings = {Gemv(2048, 8192)};
  } else {
    request.settings = {IronGemm(256, 2048, 8192, 64, 64, 64, 8),
                        IronGemm(256, 2048, 8192, 32, 64, 64, 8)};
  }
  testing::LocalTuneContext deps(sim->get(), &builder);
  long before = PeakRssKib();
  auto result = Measure(request, deps);
  if (!result.ok()) {
    std::printf("measure failed: %s\n", result.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "peak memory, %s: %.1f MiB peak RSS (%.1f MiB before measuring)\n",
      which == "gemv" ? "GEMV 2048x8192, 1 setting"
                      : "GEMM 256x2048x8192, 2 settings",
      PeakRssKib() / 1024.0, before / 1024.0);
  return 0;
}

// The spread of a series of figures against the noise reported with them.
struct Spread {
  double mean = 0, sd = 0, lo = 0, hi = 0;
  double median_noise = 0;  // of the noises given
  int covered = 0;          // within 2 noises of the truth
  double rms_z = 0;         // root mean square of (figure - truth) / noise
};

Spread SpreadOf(const std::vector<double>& figures,
                const std::vector<double>& noises, double truth) {
  Spread out;
  for (double f : figures) out.mean += f / figures.size();
  double var = 0, z2 = 0;
  for (size_t i = 0; i < figures.size(); ++i) {
    var += (figures[i] - out.mean) * (figures[i] - out.mean);
    const double z = (figures[i] - truth) / noises[i];
    z2 += z * z;
    if (std::abs(z) <= 2) ++out.covered;
  }
  out.sd = std::sqrt(var / (figures.size() - 1));
  out.rms_z = std::sqrt(z2 / figures.size());
  auto [lo, hi] = std::minmax_element(figures.begin(), figures.end());
  out.lo = *lo;
  out.hi = *hi;
  out.median_noise = Median(noises);
  return out;
}

// What `kMeasurements` Measures in a row of `settings` gave: the first
// setting's step times with their rounds' SE and reported noise, and the
// second's (if any) paired deltas with their noise.
struct Series {
  std::vector<double> steps, within, noises, deltas, delta_noises;
  int paired = 0;  // deltas paired round by round (not cut short)
  double true_step = 0, true_delta = 0;
  double seconds_each = 0;  // of the device's clock
};

constexpr int kMeasurements = 20;

// `cache` may be null; with one, each Measure remeasures (a repeat), so the
// cache sees every figure.
absl::StatusOr<Series> MeasureSeries(const std::vector<v1::Operator>& settings,
                                     Cache* cache) {
  auto sim = MakeSimDevice("sim:npu2");
  if (!sim.ok()) return sim.status();
  SimBuilder builder;
  MeasurePlan request;
  request.packaging = v1::PACKAGING_FULL_ELF;
  request.settings = settings;
  request.remeasure = true;
  testing::LocalTuneContext deps(sim->get(), &builder, cache);
  const Platform platform = *(*sim)->GetPlatform();
  Series out;
  std::vector<double> truth;
  for (const v1::Operator& op : settings) {
    auto built = builder.Build({op, platform, 1, true, request.packaging});
    truth.push_back(*(*sim)->TrueStepUs(*built->artifact));
  }
  out.true_step = truth[0];
  if (truth.size() > 1) out.true_delta = truth[1] - truth[0];
  for (int i = 0; i < kMeasurements; ++i) {
    auto result = Measure(request, deps);
    if (!result.ok()) return result.status();
    const v1::Measurement& m = result->measurements.at(0);
    out.steps.push_back(m.t_step_us());
    std::vector<double> rounds(m.round_us().begin(), m.round_us().end());
    out.within.push_back(*MedianStandardError(rounds));
    out.noises.push_back(m.t_step_noise_us());
    if (settings.size() < 2) continue;
    const v1::Measurement& other = result->measurements.at(1);
    if (other.round_us_size() == other.default_round_us_size()) ++out.paired;
    const Delta d = AgainstDefault(other);
    out.deltas.push_back(d.delta_us);
    out.delta_noises.push_back(*d.noise_us);
  }
  out.seconds_each = (*sim)->now_us() / 1e6 / kMeasurements;
  return out;
}

void PrintSteps(const char* what, const Series& s) {
  const Spread rounds = SpreadOf(s.steps, s.within, s.true_step);
  const Spread noise = SpreadOf(s.steps, s.noises, s.true_step);
  std::printf("  %s\n", what);
  std::printf(
      "    measured mean %.2f us (bias %+.2f%%); sd %.3f us (%.3f%%), range "
      "%.2f .. %.2f us\n",
      noise.mean, 100 * (noise.mean - s.true_step) / s.true_step, noise.sd,
      100 * noise.sd / s.true_step, noise.lo, noise.hi);
  std::printf("    rounds' SE alone: median %.3f us; sd / SE = %.2f\n",
              rounds.median_noise, rounds.sd / rounds.median_noise);
  std::printf(
      "    t_step_noise_us: median %.3f us (%.3f%%), first %.3f, last %.3f; "
      "sd / noise = %.2f (goal <= 1.5)\n",
      noise.median_noise, 100 * noise.median_noise / s.true_step,
      s.noises.front(), s.noises.back(), noise.sd / noise.median_noise);
  std::printf("    true step within +-2 noises: %d of %zu; rms z %.2f\n",
              noise.covered, s.steps.size(), noise.rms_z);
}

void PrintDeltas(const char* what, const Series& s) {
  const Spread d = SpreadOf(s.deltas, s.delta_noises, s.true_delta);
  std::printf(
      "  %s: delta mean %+.3f us (true %+.3f), sd %.3f us, median noise "
      "%.3f us, sd / noise = %.2f, within +-2 noises %d of %zu, rms z "
      "%.2f; %d paired round by round\n",
      what, d.mean, s.true_delta, d.sd, d.median_noise, d.sd / d.median_noise,
      d.covered, s.deltas.size(), d.rms_z, s.paired);
}

int Precision() {
  const std::filesystem::path db =
      std::filesystem::temp_directory_path() /
      ("measure_bench_precision_" + std::to_string(getpid()) + ".db");
  auto cache = Cache::Open(db.string(), "NPU Strix", PowerMode::kDefault);
  if (!cache.ok()) {
    std::printf("cache: %s\n", cache.status().ToString().c_str());
    return 1;
  }
  const std::vector<v1::Operator> one = {
      IronGemm(256, 2048, 2048, 64, 64, 64, 8)};
  const std::vector<v1::Operator> pair = {
      IronGemm(256, 2048, 2048, 64, 64, 64, 8),
      IronGemm(256, 2048, 2048, 64, 64, 32, 8)};
  // The same device seed each time: the same timings, only the noise
  // reported with them differs.
  auto alone = MeasureSeries(one, nullptr);
  auto learning = MeasureSeries(one, cache->get());
  auto learned = MeasureSeries(one, cache->get());
  auto pair_alone = MeasureSeries(pair, nullptr);
  auto pair_learned = MeasureSeries(pair, cache->get());
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(db.string() + suffix, ec);
  }
  for (const auto* s :
       {&alone, &learning, &learned, &pair_alone, &pair_learned}) {
    if (!s->ok()) {
      std::printf("measure failed: %s\n", s->status().ToString().c_str());
      return 1;
    }
  }
  std::printf(
      "precision: GEMM 256x2048x2048, %d measurements in a row at the "
      "default Timing (8 rounds x 50 calls), %.2f s of device clock each\n"
      "  true step %.2f us\n",
      kMeasurements, alone->seconds_each, alone->true_step);
  PrintSteps("without a cache (drift: the floor, or the call's batches)",
             *alone);
  PrintSteps("with a new cache, learning from the repeats as they come",
             *learning);
  PrintSteps("the same cache again (it has seen the 20 before)", *learned);
  std::printf("paired deltas, tile_n 32 against 64, the same 20 in a row:\n");
  PrintDeltas("without a cache", *pair_alone);
  PrintDeltas("with the cache", *pair_learned);
  std::printf(
      "  simulated noise: 2%% jitter per call, 0.5%% outliers, 1%% "
      "drift over 60 s\n");
  return 0;
}

// Seconds `work` takes, once.
template <typename Work>
double Seconds(Work&& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// Seconds of the second of two runs of `work`: the first leaves freed
// pages of its kind behind, as a daemon making such buffers over and over
// does.
template <typename Work>
double Again(Work&& work) {
  Seconds(work);
  return Seconds(work);
}

int Cpu() {
  std::printf("cpu: host work a batch does beside the device, one run\n");
  const uint64_t weight = 2048ull * 128256 * 2;  // the lm-head's, bf16
  size_t sink = 0;
  const double plain = Again([&] {
    sink += static_cast<unsigned char>(std::string(weight, '\0')[7]);
  });
  const double zero =
      Again([&] { sink += static_cast<unsigned char>(ZeroBytes(weight)[7]); });
  const double seeded = Again([&] {
    sink +=
        static_cast<unsigned char>(SeededInput(v1::DTYPE_BF16, weight, 42)[7]);
  });
  std::printf(
      "    zeroing %.0f MB: in 4 KiB pages %.3f s, advised huge pages "
      "(ZeroBytes) %.3f s; ratio %.1f\n",
      weight / 1e6, plain, zero, plain / zero);
  std::printf(
      "    seeded bf16 input of the same bytes: %.3f s (%.2f GB/s); over "
      "ZeroBytes %.1f\n",
      seeded, weight / seeded / 1e9, seeded / zero);
  v1::Operator silu;
  silu.set_class_name("SiLU");
  const int64_t n = kSampleWorkBudget;
  double acc = 0;
  const double each = Seconds([&] {
    for (int64_t i = 0; i < n; ++i) acc += *ElementMap(silu, i * 1e-8, 0);
  });
  const ElementMapper map(silu);
  const double once = Seconds([&] {
    for (int64_t i = 0; i < n; ++i) acc += map(i * 1e-8, 0);
  });
  std::printf(
      "    SiLU over %lld elements: looked up per element %.3f s, once %.3f "
      "s; ratio %.1f (checksum %zu %.0f)\n",
      static_cast<long long>(n), each, once, each / once, sink, acc);
  return 0;
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) {
  std::string what = argc > 1 ? argv[1] : "";
  if (what == "overhead") return irontune::Overhead();
  if (what == "memory") return irontune::Memory(argc > 2 ? argv[2] : "gemv");
  if (what == "precision") return irontune::Precision();
  if (what == "cpu") return irontune::Cpu();
  std::fprintf(stderr,
               "usage: measure_bench overhead | memory gemv|gemm | precision "
               "| cpu\n");
  return 2;
}
