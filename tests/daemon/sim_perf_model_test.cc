#include <catch2/catch.hpp>
#include <cstdio>
#include <tuple>
#include <vector>

#include "daemon/sim/perf_model.h"
#include "daemon/sim/sim_limits.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

using testing::Gemm;
using testing::Gemv;
using testing::PlatformOf;

struct Best {
  double us = 1e300;
  int64_t tm = 0, tk = 0, tn = 0, cols = 0;
};

// Every GEMM setting the sim's builder admits over the usual domains.
std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> Settings(
    int64_t m, int64_t k, int64_t n, const sim::SimPreset& p) {
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> out;
  const sim::CallValues none;
  for (int64_t tm : {16, 32, 64, 128, 256}) {
    for (int64_t tk : {16, 32, 64, 128, 256}) {
      for (int64_t tn : {16, 32, 64, 128, 256}) {
        for (int64_t cols = 1; cols <= p.columns; cols *= 2) {
          v1::Operator op = Gemm(m, k, n, tm, tk, tn, cols);
          if (sim::SimRefusal(sim::OpView(op, none), p).empty()) {
            out.emplace_back(tm, tk, tn, cols);
          }
        }
      }
    }
  }
  return out;
}

Best BestGemm(int64_t m, int64_t k, int64_t n, const std::string& gen,
              int64_t* max_volume) {
  const sim::SimPreset& p = *sim::FindSimPresetByGeneration(gen);
  Best best;
  *max_volume = 0;
  for (auto [tm, tk, tn, cols] : Settings(m, k, n, p)) {
    absl::StatusOr<double> us =
        sim::ModelStepUs(Gemm(m, k, n, tm, tk, tn, cols), PlatformOf(gen));
    REQUIRE(us.ok());
    *max_volume = std::max(*max_volume, tm * tk * tn);
    if (*us < best.us) best = {*us, tm, tk, tn, cols};
  }
  return best;
}

TEST_CASE("the GEMM model is not monotone in tile size", "[sim][perf]") {
  for (const std::string gen : {"npu1", "npu2"}) {
    int64_t max_volume = 0;
    Best best = BestGemm(256, 256, 256, gen, &max_volume);
    INFO(gen << " best " << best.tm << "x" << best.tk << "x" << best.tn
             << " cols " << best.cols);
    REQUIRE(best.us < 1e300);
    CHECK(best.tm * best.tk * best.tn < max_volume);
  }
}

TEST_CASE(
    "the GEMM model's best at a large shape is neither the smallest tiles nor "
    "all "
    "columns at a small shape",
    "[sim][perf]") {
  int64_t max_volume = 0;
  Best large = BestGemm(2048, 2048, 2048, "npu2", &max_volume);
  CHECK(large.tm * large.tk * large.tn > 16 * 16 * 16);
  Best small = BestGemm(64, 64, 64, "npu2", &max_volume);
  CHECK(small.cols < 8);
}

TEST_CASE("the model's GEMM throughput is near the published bf16 peaks",
          "[sim][perf]") {
  // docs/npu-facts.md: bf16 GEMM peak npu2 14.71 TOPS, npu1 3.14 TOPS (at the
  // top clock). The sim's best at 4096^3 should be of that order.
  for (auto [gen, published] :
       {std::pair<std::string, double>{"npu2", 14.71}, {"npu1", 3.14}}) {
    int64_t max_volume = 0;
    Platform top = PlatformOf(gen);
    top.core_mhz = gen == "npu1" ? 1600 : 1800;
    const sim::SimPreset& p = *sim::FindSimPresetByGeneration(gen);
    double best_us = 1e300;
    for (auto [tm, tk, tn, cols] : Settings(4096, 4096, 4096, p)) {
      best_us = std::min(
          best_us,
          *sim::ModelStepUs(Gemm(4096, 4096, 4096, tm, tk, tn, cols), top));
    }
    (void)max_volume;
    const double tops = 2.0 * 4096 * 4096 * 4096 / (best_us * 1e-6) / 1e12;
    INFO(gen << " " << tops << " TOPS");
    CHECK(tops > published * 0.5);
    CHECK(tops < published * 1.5);
  }
}

TEST_CASE("a faster clock shortens compute-bound steps", "[sim][perf]") {
  Platform slow = PlatformOf("npu2"), fast = PlatformOf("npu2");
  slow.core_mhz = 792;
  fast.core_mhz = 1800;
  v1::Operator op = Gemm(2048, 2048, 2048, 128, 32, 64, 8);
  CHECK(*sim::ModelStepUs(op, slow) > *sim::ModelStepUs(op, fast) * 1.5);
}

TEST_CASE("a bounded extent shortens the step", "[sim][perf]") {
  v1::Operator op = Gemm(2048, 2048, 2048, 64, 64, 64, 8);
  v1::CallValue* v = op.add_values();
  v->set_name("rows");
  v->set_symbol("M_used");
  v->set_bounds("M");
  const double full = *sim::ModelStepUs(op, PlatformOf("npu2"));
  const double part =
      *sim::ModelStepUs(op, PlatformOf("npu2"), {{"M_used", 256}});
  CHECK(part < full / 4);
}

TEST_CASE("the add model gives the facts' ~3 us for 2048 elements",
          "[sim][perf]") {
  v1::Operator op;
  op.set_class_name("ElementwiseAdd");
  testing::AddParam(op, "size", 2048);
  testing::AddTunable(op, "tile_size", 512);
  testing::AddTunable(op, "num_aie_columns", 4);
  testing::AddBuffer(op, "a", v1::BUFFER_ROLE_IN, {2048});
  testing::AddBuffer(op, "b", v1::BUFFER_ROLE_IN, {2048});
  testing::AddBuffer(op, "c", v1::BUFFER_ROLE_OUT, {2048});
  const double us = *sim::ModelStepUs(op, PlatformOf("npu2"));
  CHECK(us > 2);
  CHECK(us < 5);
}

TEST_CASE("unknown platforms are refused by the ground-truth function",
          "[sim][perf]") {
  CHECK(sim::ModelStepUs(Gemm(256, 256, 256, 64, 64, 64, 1), PlatformOf("npu9"))
            .status()
            .code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("print model figures", "[.explore]") {
  for (const std::string gen : {"npu1", "npu2"}) {
    for (int64_t s : {256, 512, 2048, 4096}) {
      int64_t mv = 0;
      Best b = BestGemm(s, s, s, gen, &mv);
      Best d{*sim::ModelStepUs(Gemm(s, s, s, 64, 64, 64, gen == "npu1" ? 4 : 8),
                               PlatformOf(gen))};
      std::printf(
          "%s %ld^3 best %.1f us (%ldx%ldx%ld c%ld) %.2f TOPS; default %.1f "
          "us\n",
          gen.c_str(), s, b.us, b.tm, b.tk, b.tn, b.cols,
          2.0 * s * s * s / b.us / 1e6, d.us);
    }
    for (auto [tsi, tso, v] : {std::tuple<int, int, int>{1, 256, 64},
                               {1, 32, 64},
                               {2, 256, 32},
                               {1, 256, 16},
                               {4, 256, 64}}) {
      const int cols = gen == "npu1" ? 4 : 8;
      std::printf(
          "%s GEMV 2048x8192 tsi %d tso %d v %d: %.1f us; 2048x2048: %.1f us\n",
          gen.c_str(), tsi, tso, v,
          *sim::ModelStepUs(Gemv(2048, 8192, tsi, tso, v, cols),
                            PlatformOf(gen)),
          *sim::ModelStepUs(Gemv(2048, 2048, tsi, tso, v, cols),
                            PlatformOf(gen)));
    }
  }
}

}  // namespace
}  // namespace irontune
