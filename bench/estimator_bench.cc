// Which estimator of a step time and of a difference between two settings
// covers the truth: coverage of +-2 SE over many measured pairs on sim:npu2
// (virtual clock, default noise: jitter, outliers, drift; scripted
// interference), the sim's noise-free model (TrueStepUs) as the truth.
// Prints figures; never fails on time.
//
//   estimator_bench [--seeds S] [--batches K] [--rounds R] [--calls C]
//
// Each seed is one device; each of its runs times every pair K times in a
// row, one batch (one Measure) each, the first setting as the default, as a
// shape's search re-times the recorded setting in every batch. Between runs
// the device idles a seeded 0 to 60 s of virtual time, so runs see the
// drift at different phases.
//
// Candidates for a difference (the second setting minus the first):
//   paired      median(b - a), Maritz-Jarrett SE of the b - a
//   mixed       median(b) - median(a), SE of the b - a (IRON's difference)
//   unpaired    median(b) - median(a), hypot(SE(b), SE(a))
// and for the first setting's absolute step time (one batch's figure):
//   within      median(a), SE(a) alone
//   reported    median(a), t_step_noise_us: SE(a) with kDriftFloor
//   +batches    median(a), t_step_noise_us combined with the spread of the
//               run's K batch figures (BatchNoise), as TimeShape reports
//               the recorded setting
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "daemon/base/stats.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "daemon/tune/measure.h"
#include "spdlog/spdlog.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/tune_context.h"

namespace irontune {
namespace {

struct Pair {
  const char* name;
  v1::Operator a, b;
};

std::vector<Pair> Pairs() {
  using testing::Gemv;
  using testing::IronGemm;
  return {
      {"GEMM 256x512x512 8 vs 4 columns",
       IronGemm(256, 512, 512, 64, 64, 64, 8),
       IronGemm(256, 512, 512, 64, 64, 64, 4)},
      {"GEMM 256x512x512 tile_m 64 vs 32",
       IronGemm(256, 512, 512, 64, 64, 64, 8),
       IronGemm(256, 512, 512, 32, 64, 64, 8)},
      {"GEMV 2048x2048 vector 64 vs 32", Gemv(2048, 2048, 2, 256, 64, 8),
       Gemv(2048, 2048, 2, 256, 32, 8)},
  };
}

constexpr int kRuns = 4;  // runs per seed

struct Tally {
  int64_t n = 0, covered = 0;
  double sum_z2 = 0;
  void Add(double error, std::optional<double> se) {
    if (!se || !(*se > 0)) return;
    ++n;
    if (std::abs(error) <= 2 * *se) ++covered;
    sum_z2 += (error / *se) * (error / *se);
  }
  std::string Text() const {
    return n == 0 ? "-"
                  : absl::StrFormat("%.3f (rms z %.2f, n %d)",
                                    static_cast<double>(covered) / n,
                                    std::sqrt(sum_z2 / n), n);
  }
};

double TrueStep(SimDevice& device, SimBuilder& builder,
                const v1::Operator& op) {
  const Platform platform = *device.GetPlatform();
  auto outcome = builder.Build({op, platform, 1, true, v1::PACKAGING_FULL_ELF});
  return *device.TrueStepUs(*outcome->artifact);
}

std::vector<double> Rounds(const google::protobuf::RepeatedField<double>& r) {
  return {r.begin(), r.end()};
}

struct Figures {
  Tally paired, mixed, unpaired, within, reported, batches;
  double bias = 0;  // mean (median(a) - truth) / truth
  int64_t bias_n = 0;
};

// One run: the pair timed `batches` times in a row on `device`.
void OneRun(const Pair& p, SimDevice& device, SimBuilder& builder,
            const v1::Timing& timing, int batches, Figures& f) {
  testing::LocalTuneContext context(&device, &builder);
  const double ta = TrueStep(device, builder, p.a);
  const double tb = TrueStep(device, builder, p.b);
  std::vector<double> a_batches, a_se;
  for (int k = 0; k < batches; ++k) {
    MeasurePlan plan;
    plan.settings = {p.a, p.b};
    plan.timing = ResolvedTiming(timing);
    plan.packaging = v1::PACKAGING_FULL_ELF;
    plan.remeasure = true;
    auto outcome = Measure(plan, context);
    if (!outcome.ok() || outcome->measurements.size() != 2) {
      std::fprintf(stderr, "%s: %s\n", p.name,
                   outcome.ok() ? "setting refused"
                                : outcome.status().ToString().c_str());
      std::exit(1);
    }
    const std::vector<double> a = Rounds(outcome->measurements[0].round_us());
    const std::vector<double> b = Rounds(outcome->measurements[1].round_us());
    const double truth = tb - ta;
    if (a.size() == b.size()) {
      const Difference d = PairedDifference(b, a);
      f.paired.Add(d.delta - truth, d.noise);
      f.mixed.Add(Median(b) - Median(a) - truth, d.noise);
    }
    const Difference u = UnpairedDifference(b, a);
    f.unpaired.Add(u.delta - truth, u.noise);
    const v1::Measurement& ma = outcome->measurements[0];
    a_batches.push_back(Median(a));
    a_se.push_back(ma.t_step_noise_us());
    f.within.Add(Median(a) - ta, MedianStandardError(a));
    f.reported.Add(ma.t_step_us() - ta,
                   ma.has_t_step_noise_us()
                       ? std::optional<double>(ma.t_step_noise_us())
                       : std::nullopt);
    f.bias += (Median(a) - ta) / ta;
    ++f.bias_n;
  }
  const std::optional<double> spread = BatchNoise(a_batches);
  for (size_t k = 0; k < a_batches.size(); ++k) {
    f.batches.Add(a_batches[k] - ta,
                  spread ? std::optional<double>(std::hypot(a_se[k], *spread))
                         : std::nullopt);
  }
}

int Main(int seeds, int batches, const v1::Timing& timing) {
  SimBuilder builder;
  std::printf(
      "estimator_bench: sim:npu2, virtual clock, default noise plus "
      "interference; %d seeds x %d runs x %d batches per pair, rounds %d "
      "calls %d\n",
      seeds, kRuns, batches, timing.rounds(), timing.calls());
  std::printf("coverage of +-2 SE (share with |estimate - truth| <= 2 SE)\n");
  for (const Pair& p : Pairs()) {
    Figures f;
    for (int seed = 1; seed <= seeds; ++seed) {
      SimOptions options;
      options.seed = static_cast<uint64_t>(seed) * 7919;
      auto device = MakeSimDevice("sim:npu2", options);
      // Another process holds the NPU now and then: those rounds are
      // discarded and redone.
      for (int w = 0; w < 6; ++w) {
        (*device)->ScriptInterference({w * 45e6 + 5e6, 2e6, 4242});
      }
      std::mt19937_64 idle(seed);
      for (int run = 0; run < kRuns; ++run) {
        // 0 to 60 s idle, one holders query (100 ms) at a time.
        for (int q = static_cast<int>(idle() % 600); q > 0; --q) {
          (void)(*device)->OtherHolders();
        }
        OneRun(p, **device, builder, timing, batches, f);
      }
    }
    std::printf("\n%s\n", p.name);
    std::printf("  delta  paired   median(b - a)           %s\n",
                f.paired.Text().c_str());
    std::printf("  delta  mixed    median(b) - median(a)   %s\n",
                f.mixed.Text().c_str());
    std::printf("  delta  unpaired median(b) - median(a)   %s\n",
                f.unpaired.Text().c_str());
    std::printf("  t_step within   SE(a)                   %s\n",
                f.within.Text().c_str());
    std::printf("  t_step reported t_step_noise_us         %s\n",
                f.reported.Text().c_str());
    std::printf("  t_step batches  reported + batch spread %s\n",
                f.batches.Text().c_str());
    std::printf("  t_step mean relative error %+.4f%%\n",
                f.bias_n ? 100 * f.bias / f.bias_n : 0.0);
  }
  return 0;
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  int seeds = 10, batches = 6;
  irontune::v1::Timing timing;
  timing.set_rounds(8);
  timing.set_calls(50);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : "0";
    if (a == "--seeds") {
      seeds = std::atoi(next), ++i;
    } else if (a == "--batches") {
      batches = std::atoi(next), ++i;
    } else if (a == "--rounds") {
      timing.set_rounds(std::atoi(next)), ++i;
    } else if (a == "--calls") {
      timing.set_calls(std::atoi(next)), ++i;
    } else {
      std::fprintf(stderr,
                   "usage: estimator_bench [--seeds S] [--batches K] "
                   "[--rounds R] [--calls C]\n");
      return 2;
    }
  }
  return irontune::Main(seeds, batches, timing);
}
