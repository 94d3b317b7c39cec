#include "daemon/tune/autotune.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/defaults.h"
#include "common/profile.h"
#include "common/recording.h"
#include "common/shape.h"
#include "common/value.h"
#include "daemon/builder/build_pool.h"
#include "daemon/sim/design.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "daemon/store/cache.h"
#include "daemon/tune/cost_model.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/settings.h"
#include "daemon/tune/shape_builds.h"
#include "daemon/tune/shape_memo.h"
#include "daemon/tune/shape_search.h"
#include "daemon/tune/verdicts.h"
#include "tests/testing/counting_fakes.h"
#include "tests/testing/recording_fixtures.h"
#include "tests/testing/sim_fixtures.h"
#include "tests/testing/tune_context.h"

namespace irontune {
namespace {

using testing::AddBuffer;
using testing::AddParam;
using testing::AddTunable;

void SetDomain(v1::Operator& op, const std::string& name,
               std::vector<int64_t> values) {
  for (v1::Tunable& t : *op.mutable_tunables()) {
    if (t.name() != name) continue;
    t.clear_domain();
    for (int64_t v : values) *t.add_domain() = IntValue(v);
  }
}

int64_t IntOf(const TunableValues& s, const std::string& name) {
  for (const v1::Field& f : s) {
    if (f.name() == name) return f.value().int_value();
  }
  return -1;
}

// A GEMM without a tile_k tunable (the sim takes 64): tile_m, tile_n and
// num_aie_columns move; outputs of every setting are bit-identical.
v1::Operator SearchGemm(int64_t m, int64_t k, int64_t n, int64_t tile_m,
                        int64_t tile_n, int64_t cols) {
  v1::Operator op;
  op.set_class_name("GEMM");
  AddParam(op, "M", m);
  AddParam(op, "K", k);
  AddParam(op, "N", n);
  AddTunable(op, "tile_m", tile_m);
  AddTunable(op, "tile_n", tile_n);
  AddTunable(op, "num_aie_columns", cols);
  SetDomain(op, "tile_m", {32, 64});
  SetDomain(op, "tile_n", {32, 64});
  SetDomain(op, "num_aie_columns", {1, 2, 4});
  AddBuffer(op, "a", v1::BUFFER_ROLE_IN, {uint64_t(m), uint64_t(k)});
  AddBuffer(op, "b", v1::BUFFER_ROLE_IN, {uint64_t(k), uint64_t(n)});
  AddBuffer(op, "c", v1::BUFFER_ROLE_OUT, {uint64_t(m), uint64_t(n)});
  return op;
}

// A 512x256x1024 GEMM whose tiles take 3 values each and its columns 4:
// 36 combinations, the search space of the race and descent tests.
v1::Operator WideGemm() {
  v1::Operator op = SearchGemm(512, 256, 1024, 64, 64, 1);
  SetDomain(op, "tile_m", {32, 64, 128});
  SetDomain(op, "tile_n", {32, 64, 128});
  SetDomain(op, "num_aie_columns", {1, 2, 4, 8});
  return op;
}

v1::Operator SearchGemv(int64_t m, int64_t k) {
  v1::Operator op = testing::Gemv(m, k, 2, 64, 64, 1);
  SetDomain(op, "num_aie_columns", {1, 2, 4});
  return op;
}

uint64_t Bytes(const v1::Operator& op, int buffer) {
  uint64_t n = DTypeSize(op.buffers(buffer).dtype());
  for (uint64_t e : op.buffers(buffer).shape()) n *= e;
  return n;
}

// One call running `steps` (operator indices) in order, each step on graph
// buffers of its own operator ("op<i>.<buffer>").
v1::Calls MakeCalls(std::vector<v1::Operator> ops, std::vector<int> steps) {
  v1::Calls calls;
  calls.set_format_version(1);
  for (v1::Operator& op : ops) *calls.add_operators() = std::move(op);
  v1::Timed* call = calls.add_calls();
  v1::Recording* rec = call->mutable_recording();
  rec->set_name("call");
  for (int i = 0; i < calls.operators_size(); ++i) {
    const v1::Operator& op = calls.operators(i);
    for (int b = 0; b < op.buffers_size(); ++b) {
      v1::GraphBuffer* g = rec->add_buffers();
      g->set_name(absl::StrCat("op", i, ".", op.buffers(b).name()));
      g->set_nbytes(Bytes(op, b));
    }
  }
  for (int s : steps) {
    v1::Step* step = rec->add_steps();
    step->set_op(s);
    for (const v1::Buffer& b : calls.operators(s).buffers()) {
      step->add_refs()->set_buffer(absl::StrCat("op", s, ".", b.name()));
    }
  }
  return calls;
}

// The recording's search space at 8 rounds of 20 calls: the Timing the
// tests on the sim's default noise use.
AutotuneOptions NoisyOptions() {
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = ResolvedTiming().WithRounds(8).WithCalls(20);
  return options;
}

bool Saw(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines) {
    if (absl::StrContains(l, text)) return true;
  }
  return false;
}

ResolvedTiming Quick() {
  v1::Timing t;
  t.set_rounds(4);
  t.set_calls(3);
  return ResolvedTiming(t);
}

struct Rig {
  explicit Rig(bool noise = false, uint64_t seed = 11) {
    SimOptions options;
    options.seed = seed;
    if (!noise) options.noise = sim::NoiseSettings::Off();
    device = *MakeSimDevice("sim:npu2", options);
  }
  // A context that keeps its progress across the rig's calls.
  testing::LocalTuneContext& Context(Cache* cache = nullptr) {
    if (!progress) {
      progress =
          std::make_unique<testing::LocalTuneContext>(device.get(), &builder);
    }
    progress->set_cache(cache);
    return *progress;
  }
  Platform platform() { return *device->GetPlatform(); }
  std::unique_ptr<SimDevice> device;
  SimBuilder builder;
  std::unique_ptr<testing::LocalTuneContext> progress;
};

std::string TempPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             absl::StrCat("irontune_autotune_test_", ::getpid());
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

TEST_CASE("Settings: recorded first, pinned held, duplicates once") {
  v1::Operator op = SearchGemm(256, 256, 256, 64, 64, 4);
  SetDomain(op, "tile_m", {32, 64, 64, 32});  // duplicates
  Platform platform = testing::PlatformOf("npu2");
  auto all = Settings(op, platform, {}, RecordingSearchSpace());
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2 * 2 * 3);
  CHECK(SettingsEqual((*all)[0], RecordedSetting(op)));
  for (size_t i = 1; i < all->size(); ++i) {
    CHECK_FALSE(SettingsEqual((*all)[i], (*all)[0]));
  }

  auto pinned = Settings(op, platform, {"tile_m"}, RecordingSearchSpace());
  REQUIRE(pinned.ok());
  CHECK(pinned->size() == 2 * 3);
  for (const TunableValues& s : *pinned) CHECK(IntOf(s, "tile_m") == 64);

  // The operator's own pins count too.
  op.add_pinned("num_aie_columns");
  auto own = Settings(op, platform, {}, RecordingSearchSpace());
  REQUIRE(own.ok());
  CHECK(own->size() == 2 * 2);

  // A coarser identity merges designs.
  SearchSpace coarse = RecordingSearchSpace();
  coarse.identity = [](const v1::Operator&, const TunableValues& s) {
    return absl::StrCat(IntOf(s, "tile_m"));
  };
  auto merged = Settings(op, platform, {}, coarse);
  REQUIRE(merged.ok());
  CHECK(merged->size() == 2);
}

TEST_CASE("Settings: constraint drops are counted with the first reason") {
  v1::Operator op = SearchGemm(256, 256, 256, 64, 64, 4);
  SearchSpace space = RecordingSearchSpace();
  space.violation = [](const v1::Operator& at, const Platform&) {
    for (const v1::Tunable& t : at.tunables()) {
      if (t.name() == "num_aie_columns" && t.value().int_value() == 1) {
        return std::string("one column is too few");
      }
    }
    return std::string();
  };
  std::vector<std::string> lines;
  auto found = Settings(op, testing::PlatformOf("npu2"), {}, space,
                        [&](const std::string& l) { lines.push_back(l); });
  REQUIRE(found.ok());
  CHECK(found->size() == 12 - 4);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] ==
        "GEMM: 4 of 12 settings dropped (first: one column is too few)");
}

TEST_CASE("Settings: refuses a space too large to enumerate") {
  v1::Operator op;
  op.set_class_name("Custom");
  std::vector<int64_t> many(1000);
  for (int i = 0; i < 1000; ++i) many[i] = i;
  for (const char* name : {"a", "b", "c"}) {
    AddTunable(op, name, 0);
    SetDomain(op, name, many);
  }
  CHECK(Settings(op, testing::PlatformOf("npu2"), {}, RecordingSearchSpace())
            .status()
            .code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Shapes: first-run order, one design once, pinned union") {
  v1::Operator gemm = SearchGemm(256, 256, 256, 64, 64, 1);
  v1::Operator gemm_pinned = gemm;
  gemm_pinned.add_pinned("tile_m");
  gemm_pinned.mutable_buffers(0)->set_name("a2");  // another design
  v1::Operator gemv = SearchGemv(512, 256);
  v1::Operator fixed = testing::Gemv(1024, 256, 2, 64, 64, 8);  // no domain
  v1::Calls calls =
      MakeCalls({gemm, gemv, gemm_pinned, fixed}, {1, 0, 2, 0, 3, 1});
  auto shapes = Shapes(calls, RecordingSearchSpace(), "npu2");
  REQUIRE(shapes.ok());
  REQUIRE(shapes->size() == 2);
  const Shape& first = (*shapes)[0];
  const Shape& second = (*shapes)[1];
  CHECK(first.class_name == "GEMV");
  CHECK(first.members.size() == 1);
  CHECK(first.steps == 2);
  CHECK(second.class_name == "GEMM");
  REQUIRE(second.members.size() == 2);
  CHECK(second.members[0].op == 0);
  CHECK(second.members[0].steps == 2);
  CHECK(second.members[1].op == 2);
  CHECK(second.pinned == std::set<std::string>{"tile_m"});
  CHECK(second.steps == 3);
  REQUIRE(second.members[0].points.size() == 1);
  CHECK(second.members[0].points[0].weight == 1.0);
}

TEST_CASE("Refusal: the builder's verdict, kept in the cache") {
  class Counting : public SimBuilder {
   public:
    absl::StatusOr<BuildOutcome> Build(const BuildRequest& r) override {
      ++builds;
      return SimBuilder::Build(r);
    }
    absl::StatusOr<std::string> Fit(const BuildRequest& r) override {
      ++builds;  // asked: a fit check, not a build
      ++checks;
      return SimBuilder::Fit(r);
    }
    std::string Environment() const override {
      return SimBuilder::Environment() + env;
    }
    int builds = 0;
    int checks = 0;
    std::string env;
  };
  Counting builder;
  auto cache =
      Cache::Open(TempPath("refusal.db"), "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  const Platform platform = testing::PlatformOf("npu2");
  v1::Operator bad = SearchGemm(256, 256, 256, 48, 64, 1);  // 2r multiple
  v1::Operator good = SearchGemm(256, 256, 256, 64, 64, 1);
  auto why =
      Refusal(bad, platform, v1::PACKAGING_FULL_ELF, builder, cache->get());
  REQUIRE(why.ok());
  CHECK_FALSE(why->empty());
  auto fits =
      Refusal(good, platform, v1::PACKAGING_FULL_ELF, builder, cache->get());
  REQUIRE(fits.ok());
  CHECK(fits->empty());
  CHECK(builder.builds == 2);
  // Again: from the cache, same verdicts.
  CHECK(*Refusal(bad, platform, v1::PACKAGING_FULL_ELF, builder,
                 cache->get()) == *why);
  CHECK(Refusal(good, platform, v1::PACKAGING_FULL_ELF, builder, cache->get())
            ->empty());
  CHECK(builder.builds == 2);
  // A builder fix decides again.
  builder.env = "+fix";
  CHECK(*Refusal(bad, platform, v1::PACKAGING_FULL_ELF, builder,
                 cache->get()) == *why);
  CHECK(builder.builds == 3);
  // The sim checks fits without building.
  CHECK(builder.checks == 3);
}

TEST_CASE("Kernel cycles: the nightly's file") {
  SECTION("good") {
    auto cycles = ParseKernelCycles(R"({"schema": 1,
      "builds": {"mm64": "matmul_bf16_64x64x64_npu2", "other": "k2",
                 "untimed": "k3"},
      "rows": {"mm64": {"cycles": {"value": 1200}, "status": "pass"},
               "other": {"cycles": {"value": 7}},
               "untimed": {"status": "fail"}}})");
    REQUIRE(cycles.ok());
    CHECK(cycles->size() == 2);
    CHECK(cycles->at("matmul_bf16_64x64x64_npu2") == 1200);
    CHECK(cycles->at("k2") == 7);
  }
  SECTION("wrong schema") {
    CHECK_FALSE(ParseKernelCycles(R"({"schema": 2, "builds": {}})").ok());
    CHECK_FALSE(ParseKernelCycles(R"({"builds": {}})").ok());
  }
  SECTION("malformed") {
    CHECK_FALSE(ParseKernelCycles("{\"schema\": 1,").ok());
    CHECK_FALSE(ParseKernelCycles("[1]").ok());
    CHECK_FALSE(
        ParseKernelCycles(
            R"({"schema":1,"builds":{"a":"k"},"rows":{"a":{"cycles":{"value":"x"}}}})")
            .ok());
  }
  SECTION("missing file: logged, empty") {
    std::vector<std::string> lines;
    KernelCycles cycles =
        LoadKernelCycles(TempPath("absent.json"),
                         [&](const std::string& l) { lines.push_back(l); });
    CHECK(cycles.empty());
    REQUIRE(lines.size() == 1);
    CHECK(absl::StrContains(lines[0], "no kernel cycles from"));
  }
  SECTION("bound") {
    v1::Operator op = testing::Gemm(256, 512, 1024, 32, 64, 64, 4);
    KernelCycles cycles = {{"matmul_bf16_32x64x64_npu2", 1000}};
    CHECK(*GemmRecipeKey(op, "npu2") == "matmul_bf16_32x64x64_npu2");
    // 256/(4*32) = 2 row blocks, 1024/(64*4) = 4 column blocks, 512/64 = 8.
    CHECK(*GemmMatmulCalls(op, {}, 8) == 2 * 4 * 8);
    CHECK(*LeastUs(op, {}, cycles, "npu2", 8, 1000) ==
          Approx(64 * 1000 / (1000 * kClockHeadroom)));
    CHECK_FALSE(LeastUs(op, {}, cycles, "npu1", 8, 1000).has_value());
  }
}

std::vector<v1::Field> Dims(
    std::initializer_list<std::pair<const char*, int64_t>> d) {
  std::vector<v1::Field> out;
  for (auto [name, value] : d) {
    v1::Field f;
    f.set_name(name);
    *f.mutable_value() = IntValue(value);
    out.push_back(f);
  }
  return out;
}

v1::ProfileEntry Entry(const std::string& cls, std::vector<v1::Field> dims,
                       std::vector<v1::Field> tunables) {
  v1::ProfileEntry e;
  e.set_operator_class(cls);
  for (auto& f : dims) *e.add_dims() = f;
  for (auto& f : tunables) *e.add_tunables() = f;
  return e;
}

const v1::Field* FieldOf(
    const google::protobuf::RepeatedPtrField<v1::Field>& fs,
    const std::string& name) {
  for (const v1::Field& f : fs) {
    if (f.name() == name) return &f;
  }
  return nullptr;
}

TEST_CASE("TimeShape: a coordinate descent times fewer settings") {
  v1::Operator op = WideGemm();
  v1::Calls calls = MakeCalls({op}, {0});
  auto run = [&](int exhaustive) {
    Rig rig;
    AutotuneOptions options;
    options.space = RecordingSearchSpace();
    options.timing = Quick();
    options.exhaustive = exhaustive;
    options.rank = false;  // this mechanism, not the ranked rounds
    auto shapes = Shapes(calls, options.space, "npu2");
    REQUIRE(shapes.ok());
    REQUIRE(shapes->size() == 1);
    TuneStats stats;
    auto result = TimeShape({(*shapes)[0],
                             calls,
                             rig.platform(),
                             options,
                             {},
                             rig.Context(),
                             &stats});
    REQUIRE(result.ok());
    return std::make_pair(*result, stats);
  };
  // 36 combinations, 24 of which the sim builds: a descent above 8.
  auto [all, all_stats] = run(1000);
  auto [descent, descent_stats] = run(8);
  REQUIRE(all.trials.size() > 8);
  CHECK(descent_stats.settings_timed < all_stats.settings_timed);
  CHECK(descent.trials.size() < all.trials.size());
  CHECK(descent.best != 0);
  // The descent reaches a setting no slower than the exhaustive best: on
  // the noise-free sim the time is separable enough for that.
  CHECK(descent.trials[descent.best].trial.delta_us <=
        all.trials[all.best].trial.delta_us + 1e-9);
}

// TimeShape of `op` alone on the noise-free sim at the Quick Timing, with
// `race` and `exhaustive`: its result and the stats it added.
std::pair<ShapeResult, TuneStats> SearchOf(const v1::Operator& op, bool race,
                                           int exhaustive) {
  const v1::Calls calls = MakeCalls({op}, {0});
  Rig rig;
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  options.rank = false;  // this mechanism, not the ranked rounds
  options.exhaustive = exhaustive;
  options.race = race;
  auto shapes = Shapes(calls, options.space, "npu2");
  REQUIRE(shapes.ok());
  TuneStats stats;
  auto result = TimeShape({(*shapes)[0],
                           calls,
                           rig.platform(),
                           options,
                           {},
                           rig.Context(),
                           &stats});
  REQUIRE(result.ok());
  return {*std::move(result), stats};
}

std::pair<ShapeResult, TuneStats> WideSearch(bool race, int exhaustive) {
  return SearchOf(WideGemm(), race, exhaustive);
}

TEST_CASE("TimeShape: a race gives the full Timing only to those in reach") {
  auto [full, full_stats] = WideSearch(false, 1000);
  auto [raced, raced_stats] = WideSearch(true, 1000);
  CHECK(full_stats.screened == 0);
  CHECK(raced_stats.screened == full_stats.settings_timed - 1);
  CHECK(raced_stats.screened_out > 0);
  CHECK(raced_stats.settings_timed == full_stats.settings_timed);
  // Fewer figures at the full Timing, the same setting taken.
  CHECK(raced_stats.device_timed - raced_stats.screened <
        full_stats.device_timed);
  CHECK(SettingIdentity(raced.trials[raced.best].trial.tunables) ==
        SettingIdentity(full.trials[full.best].trial.tunables));
  // No setting, screened out or not, is faster than the one taken by more
  // than the practical margin.
  const double best = raced.trials[raced.best].trial.delta_us;
  const double margin = kMinGain * (raced.recorded_us + best);
  REQUIRE(raced.trials.size() == full.trials.size());
  for (const ShapeTrial& t : raced.trials) {
    if (t.trial.refused.empty()) CHECK(t.trial.delta_us >= best - margin);
  }
}

TEST_CASE("TimeShape: a whole race confirms its few in reach from screens") {
  // On the noise-free sim only settings within the margin of the best
  // reach.
  auto [full, full_stats] = WideSearch(false, 1000);
  auto [raced, raced_stats] = WideSearch(true, 1000);
  // No setting got the full Timing in the search: each one screened is
  // left with its screening figure, and those in reach were confirmed.
  CHECK(raced_stats.screened == full_stats.settings_timed - 1);
  CHECK(raced_stats.screened_out == raced_stats.screened);
  CHECK(raced_stats.confirmations >= 1);
  CHECK(SettingIdentity(raced.trials[raced.best].trial.tunables) ==
        SettingIdentity(full.trials[full.best].trial.tunables));
  // A descent's lines still give the full Timing to what reaches.
  auto [descent, descent_stats] = WideSearch(true, 1);
  CHECK(descent_stats.screened_out < descent_stats.screened);
}

TEST_CASE("TimeShape: a descent screens a line of one new setting") {
  // tile_m and tile_n take two values each: every line of the descent
  // holds one setting beside the recorded one.
  v1::Operator op = SearchGemm(512, 256, 1024, 64, 64, 1);
  SetDomain(op, "num_aie_columns", {1});
  const TuneStats stats = SearchOf(op, /*race=*/true, /*exhaustive=*/1).second;
  REQUIRE(stats.settings_timed > 1);
  // Every setting tried beside the recorded one had a screening figure
  // first, though each line held only one.
  CHECK(stats.screened == stats.settings_timed - 1);
}

TEST_CASE("ScreenTiming: few rounds of a share of the calls") {
  ResolvedTiming full = ResolvedTiming().WithRounds(8).WithCalls(50);
  const ResolvedTiming screen = ScreenTiming(full);
  CHECK(screen.rounds() == kScreenRounds);
  CHECK(screen.calls() == 50 / kScreenCallShare);
  CHECK(screen.settle() == full.settle());
  CHECK(screen.cutoff() == full.cutoff());
  full = full.WithRounds(2).WithCalls(3);
  CHECK(ScreenTiming(full).rounds() == 2);
  CHECK(ScreenTiming(full).calls() == 2);
}

TEST_CASE("TimeShape: settings a kernel bound rules out are not timed") {
  v1::Operator op = SearchGemm(256, 256, 256, 64, 64, 1);
  AddTunable(op, "tile_k", 64);  // no domain: held, but part of the key
  v1::Calls calls = MakeCalls({op}, {0});
  const std::string path = TempPath("cycles.json");
  {
    std::ofstream out(path);
    out << R"({"schema": 1,
      "builds": {"small": "matmul_bf16_32x64x32_npu2",
                 "mid": "matmul_bf16_32x64x64_npu2"},
      "rows": {"small": {"cycles": {"value": 1000000000}},
               "mid": {"cycles": {"value": 1}}}})";
  }
  Rig rig;
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  options.cycles_path = path;
  options.rank = false;  // this mechanism, not the ranked rounds
  auto result = Autotune(calls, Profile(), options, rig.Context());
  REQUIRE(result.ok());
  // tile_m 32, tile_n 32 at 3 column counts: each bound far above any time.
  CHECK(result->stats.skipped_by_bound == 3);
  CHECK(Saw(rig.progress->lines, "3 slower by their kernel alone, not timed"));
  for (const ShapeTrial& t : result->shapes[0].trials) {
    CHECK_FALSE((IntOf(t.trial.tunables, "tile_m") == 32 &&
                 IntOf(t.trial.tunables, "tile_n") == 32));
  }
  CHECK(result->shapes[0].trials.size() == 12 - 3);
}

TEST_CASE("TimeShape: a cycles file prunes, a recipe it lacks is timed") {
  v1::Operator op = SearchGemm(256, 256, 256, 64, 64, 1);
  AddTunable(op, "tile_k", 64);
  v1::Calls calls = MakeCalls({op}, {0});
  // The fixture: 32x64x32 far too slow to win, 32x64x64 at one cycle, and
  // 64x64x32 a case the nightly did not time (no cycles): missing.
  const std::string path = std::string(IRONTUNE_SOURCE_DIR) +
                           "/tests/daemon/testdata/kernel-cycles-npu2.json";
  KernelCycles cycles = LoadKernelCycles(path, nullptr);
  REQUIRE(cycles.size() == 3);
  CHECK(cycles.count("matmul_bf16_64x64x32_npu2") == 0);
  Rig rig;
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  options.cycles_path = path;
  options.rank = false;  // this mechanism, not the ranked rounds
  auto result = Autotune(calls, Profile(), options, rig.Context());
  REQUIRE(result.ok());
  CHECK(result->stats.skipped_by_bound == 3);
  int missing_timed = 0, bounded_low_timed = 0;
  for (const ShapeTrial& t : result->shapes[0].trials) {
    const int64_t m = IntOf(t.trial.tunables, "tile_m");
    const int64_t n = IntOf(t.trial.tunables, "tile_n");
    CHECK_FALSE((m == 32 && n == 32));  // bound above any time: not timed
    if (m == 64 && n == 32 && t.trial.refused.empty()) ++missing_timed;
    if (m == 32 && n == 64 && t.trial.refused.empty()) ++bounded_low_timed;
  }
  // Not in the file: timed at every column count, as without a file.
  CHECK(missing_timed == 3);
  // A bound below the times prunes nothing.
  CHECK(bounded_low_timed == 3);
}

TEST_CASE("Kernel cycles: a bad file is named, with where it is bad") {
  auto s = ParseKernelCycles("{\n  \"schema\": 1,\n  \"builds\": {,}\n}");
  REQUIRE_FALSE(s.ok());
  CHECK(absl::StrContains(s.status().message(), "not JSON at line 3"));
  s = ParseKernelCycles(R"({"schema": 1, "builds": {"a": 7}})");
  REQUIRE_FALSE(s.ok());
  CHECK(absl::StrContains(s.status().message(), "builds.a: not a string"));
  const std::string path = TempPath("bad-cycles.json");
  std::ofstream(path) << "{\"schema\": 1,\n\"rows\": [1]}\n";
  std::vector<std::string> lines;
  KernelCycles cycles =
      LoadKernelCycles(path, [&](const std::string& l) { lines.push_back(l); });
  CHECK(cycles.empty());
  REQUIRE(lines.size() == 1);
  CHECK(absl::StrContains(lines[0], path));
  CHECK(absl::StrContains(lines[0], "rows: not an object"));
  CHECK(absl::StrContains(lines[0], "every setting is timed"));
}

// The GEMM's entry at one column (slow: a search replaces it).
v1::ProfileEntry OneColumnGemmEntry() {
  return Entry("GEMM", Dims({{"M", 256}, {"K", 256}, {"N", 256}}),
               Dims({{"tile_m", 64},
                     {"tile_k", 64},
                     {"tile_n", 64},
                     {"num_aie_columns", 1}}));
}

TEST_CASE("Autotune: entries replaced, held, kept, diff, a cached rerun") {
  v1::Operator gemm = SearchGemm(256, 256, 256, 64, 64, 1);
  v1::Operator gemv = SearchGemv(512, 256);
  v1::Calls calls = MakeCalls({gemm, gemv}, {0, 1, 0});

  Profile before;
  before.Add(OneColumnGemmEntry());
  before.Add(Entry("GEMM", Dims({{"M", 999}}), Dims({{"tile_m", 32}})));

  const std::string db = TempPath("autotune.db");
  auto cache = Cache::Open(db, "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  Rig rig;
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  auto result = Autotune(calls, before, options, rig.Context(cache->get()));
  REQUIRE(result.ok());
  REQUIRE(rig.progress->shapes.size() == 2);
  CHECK(absl::StartsWith(rig.progress->shapes[0], "GEMM M=256 K=256 N=256"));
  CHECK(absl::StartsWith(rig.progress->shapes[1], "GEMV M=512 K=256"));
  CHECK(rig.progress->trials > 0);
  REQUIRE(result->shapes.size() == 2);
  CHECK(result->shapes[0].best != 0);  // one column is slow
  CHECK(result->profile.size() == 3);

  // The covering GEMM entry: replaced, tile_k held, the gain reported.
  const v1::ProfileDiff& diff = result->diff;
  REQUIRE(diff.changed_size() >= 1);
  const v1::EntryChange* gemm_change = nullptr;
  for (const v1::EntryChange& c : diff.changed()) {
    if (c.operator_class() == "GEMM") gemm_change = &c;
  }
  REQUIRE(gemm_change != nullptr);
  CHECK(gemm_change->has_gain());
  // Against what the profile ran (1 column): the confirmation's figure.
  const ShapeResult& gemm_shape = result->shapes[0];
  CHECK(IntOf(gemm_shape.trials[gemm_shape.incumbent].trial.tunables,
              "num_aie_columns") == 1);
  CHECK(gemm_change->gain_us() ==
        Approx(-gemm_shape.against_incumbent.trial.delta_us));
  CHECK(gemm_change->gain_us() > 0);
  CHECK(result->stats.confirmations >= 1);
  CHECK(result->stats.confirmed >= 1);
  CHECK(Saw(rig.progress->lines, "confirming"));
  REQUIRE(FieldOf(gemm_change->new_tunables(), "tile_k") != nullptr);
  CHECK(FieldOf(gemm_change->new_tunables(), "tile_k")->value().int_value() ==
        64);
  CHECK(FieldOf(gemm_change->new_tunables(), "num_aie_columns")
            ->value()
            .int_value() != 1);
  // The GEMV had no entry: added, naming M and K, with its gain against the
  // recorded setting.
  REQUIRE(diff.added_size() == 1);
  CHECK(diff.added(0).operator_class() == "GEMV");
  REQUIRE(diff.added_gains_size() == 1);
  CHECK(diff.added_gains(0).has_gain());
  CHECK(diff.added_gains(0).gain_us() ==
        Approx(-result->shapes[1].against_incumbent.trial.delta_us));
  // The M=999 entry covers nothing here: kept.
  bool kept = false;
  for (const v1::ProfileEntry& e : diff.kept()) {
    if (e.operator_class() == "GEMM" && e.dims_size() == 1) kept = true;
  }
  CHECK(kept);
  // The model estimate against the submitted profile: the GEMM runs twice.
  CHECK(diff.has_model_gain());
  CHECK(diff.model_gain_us() >= 2 * gemm_change->gain_us() - 1e-9);
  // Against the recording (tile_m 64 on 1 column there too) the same here.
  CHECK(diff.has_recording_gain());
  CHECK(diff.recording_gain_us() > 0);

  // Every shape matches an entry of the result.
  auto shapes = Shapes(calls, RecordingSearchSpace(), "npu2");
  REQUIRE(shapes.ok());
  for (const Shape& shape : *shapes) {
    google::protobuf::RepeatedPtrField<v1::Field> params(shape.dims.begin(),
                                                         shape.dims.end());
    auto match = result->profile.Match(shape.class_name, params);
    REQUIRE(match.ok());
    CHECK(*match != nullptr);
  }

  // Again, from the cache: the device runs only the confirmations, which
  // are re-timed by design.
  const int64_t runs = rig.device->calls();
  Rig again;
  auto cached = Autotune(calls, before, options, again.Context(cache->get()));
  REQUIRE(cached.ok());
  CHECK(rig.device->calls() == runs);
  CHECK(cached->stats.device_timed == cached->stats.confirm_timed);
  CHECK(cached->stats.confirmations == result->stats.confirmations);
  CHECK(cached->stats.cache_hits > 0);
  CHECK(cached->profile.ToJson() == result->profile.ToJson());
}

TEST_CASE("Autotune: only the shapes asked for are tuned, the rest kept") {
  v1::Operator gemm = SearchGemm(256, 256, 256, 64, 64, 1);
  v1::Operator gemv = SearchGemv(512, 256);
  v1::Calls calls = MakeCalls({gemm, gemv}, {0, 1, 0});
  Profile before;
  before.Add(OneColumnGemmEntry());
  auto cache =
      Cache::Open(TempPath("only.db"), "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  Rig rig;
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  options.only_shapes = {ShapeKey(gemv)};
  auto result = Autotune(calls, before, options, rig.Context(cache->get()));
  REQUIRE(result.ok());
  REQUIRE(result->shapes.size() == 1);
  CHECK(result->shapes[0].key == ShapeKey(gemv));
  REQUIRE(rig.progress->shapes.size() == 1);
  CHECK(absl::StartsWith(rig.progress->shapes[0], "GEMV M=512 K=256"));
  // The GEMM's entry is kept as submitted, though one column is slow.
  CHECK(result->diff.changed_size() == 0);
  REQUIRE(result->diff.kept_size() == 1);
  CHECK(result->diff.kept(0).operator_class() == "GEMM");
  REQUIRE(result->diff.added_size() == 1);
  CHECK(result->diff.added(0).operator_class() == "GEMV");
}

TEST_CASE("Autotune: cancellation stops the search") {
  v1::Calls calls = MakeCalls({SearchGemm(256, 256, 256, 64, 64, 1)}, {0});
  Rig rig;
  testing::LocalTuneContext& context = rig.Context();
  context.cancel_when = [] { return true; };
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  CHECK(Autotune(calls, Profile(), options, context).status().code() ==
        absl::StatusCode::kCancelled);
}

TEST_CASE("Autotune: the example recording's profile loads and matches") {
  auto calls = LoadRecording(std::string(IRONTUNE_SOURCE_DIR) +
                             "/examples/llama-3.2-1b.rec");
  REQUIRE(calls.ok());
  // To keep this under a minute: the decode call only (the prompt chunk's
  // 256-row GEMMs take the sim's CPU reference over a minute more), less
  // its last two steps, the 128256-row lm head (525 MB of weights made and
  // loaded per batch) and Sample (~35 s together on the sim).
  calls->mutable_calls()->DeleteSubrange(1, calls->calls_size() - 1);
  v1::Recording* decode = calls->mutable_calls(0)->mutable_recording();
  REQUIRE(decode->steps_size() == 259);
  decode->mutable_steps()->DeleteSubrange(257, 2);
  auto profile = Profile::Load(std::string(IRONTUNE_SOURCE_DIR) +
                               "/examples/profiles/npu2.json");
  REQUIRE(profile.ok());
  Rig rig(/*noise=*/true);
  AutotuneOptions options;
  options.timing = ResolvedTiming().WithRounds(3).WithCalls(3);
  const auto start = std::chrono::steady_clock::now();
  auto result = Autotune(*calls, *profile, options, rig.Context());
  REQUIRE(result.ok());
  WARN("example autotune: " << std::chrono::duration<double>(
                                   std::chrono::steady_clock::now() - start)
                                   .count()
                            << " s, " << result->stats.settings_timed
                            << " settings, " << result->shapes.size()
                            << " shapes");
  auto loaded = Profile::FromJson(result->profile.ToJson());
  REQUIRE(loaded.ok());
  auto shapes = Shapes(*calls, DefaultSearchSpace(), "npu2");
  REQUIRE(shapes.ok());
  CHECK(shapes->size() == result->shapes.size());
  for (const Shape& shape : *shapes) {
    google::protobuf::RepeatedPtrField<v1::Field> params(shape.dims.begin(),
                                                         shape.dims.end());
    auto match = loaded->Match(shape.class_name, params);
    REQUIRE(match.ok());
    CHECK(*match != nullptr);
  }
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

// A GEMV whose kernel_vector_size (32 or 64) does not change its time: a
// true tie.
v1::Operator TiedGemv(int64_t vector) {
  v1::Operator op = testing::Gemv(2048, 2048, 2, 256, vector, 8);
  SetDomain(op, "kernel_vector_size", {32, 64});
  // A reduction's gate, so the other vector size's rounding is admitted.
  op.mutable_tolerance()->mutable_close()->set_atol(1.0 / 32);
  op.mutable_tolerance()->mutable_close()->set_rtol(1.0 / 64);
  return op;
}

double TrueUs(Rig& rig, const v1::Operator& op) {
  auto built =
      rig.builder.Build({op, rig.platform(), 1, true, v1::PACKAGING_FULL_ELF});
  REQUIRE(built.ok());
  REQUIRE(built->artifact.has_value());
  auto us = rig.device->TrueStepUs(*built->artifact);
  REQUIRE(us.ok());
  return *us;
}

TEST_CASE("Autotune: the incumbent keeps a tie, whichever it is") {
  Rig truth;
  REQUIRE(TrueUs(truth, TiedGemv(32)) == TrueUs(truth, TiedGemv(64)));
  const v1::Calls calls = MakeCalls({TiedGemv(64)}, {0});
  AutotuneOptions options = NoisyOptions();
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    // No profile: the recorded 64 stays.
    Rig rig(/*noise=*/true, seed);
    options.seed = seed;
    auto fresh = Autotune(calls, Profile(), options, rig.Context());
    REQUIRE(fresh.ok());
    CHECK(fresh->shapes[0].best == 0);
    CHECK(fresh->diff.model_gain_us() == 0);
    // The call runs 32: 32 stays, nothing changes. (IRON derives
    // kernel_vector_size, so a profile never names it; the call site may.)
    const v1::Calls calls32 = MakeCalls({TiedGemv(32)}, {0});
    Rig again(/*noise=*/true, seed + 100);
    auto held = Autotune(calls32, Profile(), options, again.Context());
    REQUIRE(held.ok());
    const ShapeResult& shape = held->shapes[0];
    CHECK(shape.best == shape.incumbent);
    CHECK(IntOf(shape.trials[shape.best].trial.tunables,
                "kernel_vector_size") == 32);
    CHECK(held->profile.ToJson() == fresh->profile.ToJson());
    CHECK(held->diff.changed_size() == 0);
    CHECK(held->diff.has_model_gain());
    CHECK(held->diff.model_gain_us() == 0);
    CHECK(held->diff.model_noise_us() == 0);
  }
}

TEST_CASE("Autotune: a re-tune of the tuned profile, remeasured, keeps it") {
  v1::Operator gemm = SearchGemm(256, 512, 512, 64, 64, 1);
  SetDomain(gemm, "tile_m", {32, 64, 128});
  SetDomain(gemm, "tile_n", {32, 64, 128});
  SetDomain(gemm, "num_aie_columns", {1, 2, 4, 8});
  const v1::Calls calls = MakeCalls({gemm, SearchGemv(512, 256)}, {0, 1, 0});
  AutotuneOptions options = NoisyOptions();
  options.exhaustive = 8;  // a descent over the GEMM's settings
  Rig first(/*noise=*/true, 1);
  auto tuned = Autotune(calls, Profile(), options, first.Context());
  REQUIRE(tuned.ok());
  REQUIRE(tuned->shapes[0].best != 0);  // 1 column is far from the best
  // From an empty profile both model figures are gains over the recording:
  // one from the confirmations, one from the search's trials.
  CHECK(tuned->diff.model_gain_us() > 0);
  CHECK(tuned->diff.recording_gain_us() > 0);
  for (uint64_t seed : {2, 3, 4}) {
    Rig rig(/*noise=*/true, seed);
    AutotuneOptions again = options;
    again.seed = seed;
    again.remeasure = true;
    auto retuned = Autotune(calls, tuned->profile, again, rig.Context());
    REQUIRE(retuned.ok());
    for (const ShapeResult& shape : retuned->shapes) {
      CHECK(shape.best == shape.incumbent);
    }
    // What `submit --check` compares.
    CHECK(retuned->profile.ToJson() == tuned->profile.ToJson());
    // No change: the model gain against the submitted profile is 0; the
    // per-recording figure still says what the profile gains.
    CHECK(retuned->diff.model_gain_us() == 0);
    CHECK(retuned->diff.has_recording_gain());
    CHECK(retuned->diff.recording_gain_us() > 0);
  }
}

// Scales every run of an image by a factor fixed at load.
class ScaledImage : public ImageWrapper {
 public:
  ScaledImage(std::unique_ptr<Image> image, double factor)
      : ImageWrapper(std::move(image)), factor_(factor) {}
  absl::StatusOr<RunResult> Run() override {
    absl::StatusOr<RunResult> r = ImageWrapper::Run();
    if (r.ok()) r->elapsed_us *= factor_;
    return r;
  }

 private:
  double factor_;
};

// The sim with each setting's step retimed to `share(op)` of the recorded
// setting's noise-free step: every run of a setting is scaled by that time
// over the sim's own noise-free step, so the sim's noise, drift and
// outliers stay as they are, in proportion.
class Retimed : public DeviceWrapper {
 public:
  Retimed(SimDevice* sim, double recorded_us,
          std::function<double(const v1::Operator&)> share)
      : DeviceWrapper(sim),
        sim_(sim),
        recorded_us_(recorded_us),
        share_(std::move(share)) {}

 protected:
  std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                   const Artifact& artifact) override {
    absl::StatusOr<sim::SimDesign> design =
        sim::DecodeSimDesign(artifact.payload);
    absl::StatusOr<double> own = sim_->TrueStepUs(artifact);
    double factor = 1;
    if (design.ok() && own.ok() && *own > 0) {
      factor = share_(design->op) * recorded_us_ / *own;
    }
    return std::make_unique<ScaledImage>(std::move(image), factor);
  }

 private:
  SimDevice* sim_;
  double recorded_us_;
  std::function<double(const v1::Operator&)> share_;
};

// Among the winners, the one changing fewer tunables is not taken where
// another might be faster than it by more than the margin it would hold:
// a re-tune from it, measuring the two side by side, would move. Both
// tile_m 32 settings are 10% faster than the recorded 64x64; 32x32 (two
// changes) is faster than 32x64 (one) by `apart` of the step: 1%, twice
// the margin, which the confirmation's last batch tells apart from the
// margin under any seed (0.7% lies about 1.4 pooled noises from it).
TEST_CASE("Autotune: the pick among winners is one a re-tune keeps") {
  v1::Operator op = SearchGemm(256, 256, 256, 64, 64, 1);
  SetDomain(op, "num_aie_columns", {1});
  const v1::Calls calls = MakeCalls({op}, {0});
  Rig truth;
  const double recorded_us = TrueUs(truth, op);
  AutotuneOptions options = NoisyOptions();
  for (double apart : {0.01, 0.0}) {
    auto share = [apart](const v1::Operator& o) {
      const TunableValues s = RecordedSetting(o);
      if (IntOf(s, "tile_m") != 32) return 1.0;
      return IntOf(s, "tile_n") == 32 ? 0.9 * (1 - apart) : 0.9;
    };
    for (uint64_t seed : {1, 2, 3}) {
      INFO("apart " << apart << ", seed " << seed);
      Rig rig(/*noise=*/true, seed);
      Retimed device(rig.device.get(), recorded_us, share);
      options.seed = seed;
      options.remeasure = false;
      testing::LocalTuneContext& context = rig.Context();
      context.set_device(&device);
      auto tuned = Autotune(calls, Profile(), options, context);
      REQUIRE(tuned.ok());
      const ShapeResult& shape = tuned->shapes[0];
      const TunableValues& taken = shape.trials[shape.best].trial.tunables;
      CHECK(IntOf(taken, "tile_m") == 32);
      // Truly apart: the faster; a true tie: the fewest changes.
      CHECK(IntOf(taken, "tile_n") == (apart > 0 ? 32 : 64));
      // Re-tuned from the written profile with fresh figures: kept.
      Rig again_rig(/*noise=*/true, seed + 100);
      Retimed again_device(again_rig.device.get(), recorded_us, share);
      testing::LocalTuneContext& again = again_rig.Context();
      again.set_device(&again_device);
      options.seed = seed + 100;
      options.remeasure = true;
      auto retuned = Autotune(calls, tuned->profile, options, again);
      REQUIRE(retuned.ok());
      CHECK(retuned->shapes[0].best == retuned->shapes[0].incumbent);
      CHECK(retuned->profile.ToJson() == tuned->profile.ToJson());
    }
  }
}

TEST_CASE("Autotune: a gain below min_gain keeps the incumbent") {
  const v1::Calls calls =
      MakeCalls({SearchGemm(256, 256, 256, 64, 64, 1)}, {0});
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  options.min_gain = 0;
  Rig rig;  // noise-free: every noise is 0
  auto taken = Autotune(calls, Profile(), options, rig.Context());
  REQUIRE(taken.ok());
  const ShapeResult& shape = taken->shapes[0];
  REQUIRE(shape.best != 0);
  REQUIRE(shape.recorded_us > 0);
  const double share =
      -shape.against_incumbent.trial.delta_us / shape.recorded_us;
  REQUIRE(share > 0);
  // Asking for a little more than that gain keeps the recorded setting, and
  // nothing is confirmed.
  options.min_gain = share * 1.01;
  Rig again;
  auto kept = Autotune(calls, Profile(), options, again.Context());
  REQUIRE(kept.ok());
  CHECK(kept->shapes[0].best == 0);
  CHECK(kept->stats.confirmations == 0);
  // A little less: taken.
  options.min_gain = share * 0.99;
  Rig third;
  auto moved = Autotune(calls, Profile(), options, third.Context());
  REQUIRE(moved.ok());
  CHECK(moved->shapes[0].best != 0);
}

// The true gain of the shape's best setting (`calls` has one shape), as a
// share of the recorded step time: tuned on the noise-free sim with no
// practical margin. REQUIRES: some setting gains.
double TrueGainShare(const v1::Calls& calls, AutotuneOptions options) {
  options.min_gain = 0;
  Rig truth;
  auto clear = Autotune(calls, Profile(), options, truth.Context());
  REQUIRE(clear.ok());
  const ShapeResult& best = clear->shapes[0];
  REQUIRE(best.best != 0);
  return -best.against_incumbent.trial.delta_us / best.recorded_us;
}

TEST_CASE("Autotune: a close call is measured until it is clear") {
  const v1::Calls calls =
      MakeCalls({SearchGemm(256, 256, 256, 64, 64, 1)}, {0});
  AutotuneOptions options = NoisyOptions();
  // The confirmation of one search's contenders: not the ranked rounds,
  // whose contenders follow each seed's figures.
  options.rank = false;
  const double share = TrueGainShare(calls, options);
  options.min_gain = 0;
  // A gain far beyond both margins clears as soon as the spread between
  // batches is seen: after kSpreadBatches (nothing is decided on fewer).
  Rig noisy(/*noise=*/true, 3);
  options.seed = 3;
  auto far = Autotune(calls, Profile(), options, noisy.Context());
  REQUIRE(far.ok());
  CHECK(far->shapes[0].best != 0);
  CHECK(far->stats.confirm_batches == kSpreadBatches);
  // A practical margin just under the true gain: under some seeds those
  // batches leave the interval holding the margin, so the confirmation
  // times more, and every seed takes the same setting.
  options.min_gain = share * 0.997;
  std::set<std::string> taken;
  int more = 0;
  for (uint64_t seed : {1, 2, 3, 4}) {
    Rig rig(/*noise=*/true, seed);
    options.seed = seed;
    auto close = Autotune(calls, Profile(), options, rig.Context());
    REQUIRE(close.ok());
    more += close->stats.confirm_batches > kSpreadBatches;
    CHECK(close->stats.confirm_batches <= kMostConfirmBatches);
    const ShapeResult& shape = close->shapes[0];
    taken.insert(SettingText(shape.trials[shape.best].trial.tunables));
  }
  CHECK(more >= 2);
  CHECK(taken.size() == 1);
}

TEST_CASE(
    "Autotune: a call left open keeps an incumbent a profile entry gives") {
  const v1::Calls calls =
      MakeCalls({SearchGemm(256, 256, 256, 64, 64, 1)}, {0});
  AutotuneOptions options = NoisyOptions();
  const double share = TrueGainShare(calls, options);
  options.min_gain = 0;
  // A tune that keeps the recorded setting writes an entry naming it.
  options.min_gain = 0.99;
  Rig keep;
  auto kept = Autotune(calls, Profile(), options, keep.Context());
  REQUIRE(kept.ok());
  REQUIRE(kept->shapes[0].best == 0);
  REQUIRE(kept->profile.proto().entries_size() == 1);
  // A true gain a hair above the practical margin: under some seeds the
  // confirmation runs to its last batch still open. Without an entry the
  // estimate then decides (and takes it); with the entry the same figures
  // keep the recorded setting unless the gain clears.
  options.min_gain = share * 0.998;
  int taken_only_fresh = 0;
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    options.seed = seed;
    Rig fresh_rig(/*noise=*/true, seed);
    auto fresh = Autotune(calls, Profile(), options, fresh_rig.Context());
    Rig covered_rig(/*noise=*/true, seed);
    auto covered =
        Autotune(calls, kept->profile, options, covered_rig.Context());
    REQUIRE(fresh.ok());
    REQUIRE(covered.ok());
    const ShapeResult& f = fresh->shapes[0];
    const ShapeResult& c = covered->shapes[0];
    // The covered run moves only where the fresh one, on the same figures,
    // moves too.
    if (c.best != c.incumbent) CHECK(f.best == c.best);
    taken_only_fresh += f.best != f.incumbent && c.best == c.incumbent;
  }
  CHECK(taken_only_fresh > 0);
}

// Whole searches on the sim's default noise: the recorded setting's step
// time over a search's batches, +- 2 reported noises, against the sim's
// noise-free time. docs/statistics.md quotes the autotune_bench figures.
TEST_CASE("Autotune: +-2 noises cover a search's recorded step time") {
  const v1::Operator gemm = SearchGemm(256, 256, 256, 64, 64, 4);
  const v1::Calls calls = MakeCalls({gemm}, {0});
  Rig truth;
  const double true_us = TrueUs(truth, gemm);
  AutotuneOptions options = NoisyOptions();
  // The descent's batches. A ranked search times the recorded setting in
  // fewer of them: 22 of 24 covered, rms z 1.46 (docs/statistics.md).
  options.rank = false;
  int n = 0, in = 0;
  double z2 = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    Rig rig(/*noise=*/true, seed);
    options.seed = seed;
    auto result = Autotune(calls, Profile(), options, rig.Context());
    REQUIRE(result.ok());
    const ShapeResult& shape = result->shapes[0];
    REQUIRE(shape.recorded_noise_us.has_value());
    ++n;
    const double z = (shape.recorded_us - true_us) / *shape.recorded_noise_us;
    z2 += z * z;
    if (std::abs(z) <= 2) ++in;
  }
  const double coverage = static_cast<double>(in) / n;
  const double rms_z = std::sqrt(z2 / n);
  INFO("coverage " << coverage << ", rms z " << rms_z << " over " << n);
  CHECK(coverage >= 0.85);
  // Not wider than it need be: a noise that counted the drift floor once
  // per batch is wider by about the square root of the batch count.
  CHECK(rms_z >= 0.4);
  CHECK(rms_z <= 1.2);
}

// A LocalTuneContext that keeps the estimates it is told.
struct EstimateRecorder : testing::LocalTuneContext {
  using LocalTuneContext::LocalTuneContext;
  void OnEstimate(const JobEstimate& e) override { estimates.push_back(e); }
  std::vector<JobEstimate> estimates;
};

// A small GEMM run once and a large GEMV run twice: in Shapes() order the
// GEMM comes first, by weighted time the GEMV.
v1::Calls SmallGemmLargeGemv() {
  return MakeCalls(
      {SearchGemm(128, 128, 128, 64, 64, 1), SearchGemv(2048, 2048)},
      {0, 1, 1});
}

TEST_CASE("Autotune: the most weighted time first, results in Shapes order") {
  const v1::Calls calls = SmallGemmLargeGemv();
  Rig rig;
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  EstimateRecorder context(rig.device.get(), &rig.builder);
  auto result = Autotune(calls, Profile(), options, context);
  REQUIRE(result.ok());
  REQUIRE(context.shapes.size() == 2);
  CHECK(absl::StartsWith(context.shapes[0], "GEMV M=2048 K=2048"));
  CHECK(absl::StartsWith(context.shapes[1], "GEMM M=128"));
  REQUIRE(result->shapes.size() == 2);
  CHECK(absl::StartsWith(result->shapes[0].key, "GEMM"));
  CHECK(absl::StartsWith(result->shapes[1].key, "GEMV"));
  CHECK(result->diff.untuned_size() == 0);

  // The estimate: planned before the first shape, told as each begins and
  // ends, used never falling, nothing left at the end.
  REQUIRE(context.estimates.size() == 1 + 2 * 2);
  const JobEstimate& first = context.estimates.front();
  CHECK(first.done == 0);
  CHECK(first.total == 2);
  CHECK(first.planned_seconds > 0);
  CHECK(first.used_seconds == 0);
  CHECK(first.remaining_seconds == Approx(first.planned_seconds));
  for (size_t i = 1; i < context.estimates.size(); ++i) {
    const JobEstimate& e = context.estimates[i];
    CHECK(e.planned_seconds == first.planned_seconds);
    CHECK(e.used_seconds >= context.estimates[i - 1].used_seconds);
    CHECK(e.remaining_seconds >= 0);
  }
  const JobEstimate& last = context.estimates.back();
  CHECK(last.done == 2);
  CHECK(last.remaining_seconds == 0);
  CHECK(last.used_seconds > 0);
  // After the first shape, the rest is its plan scaled by what the first
  // measured over its plan: corrected, so no longer the plan itself.
  const JobEstimate& after_one = context.estimates[2];
  CHECK(after_one.done == 1);
  CHECK(after_one.remaining_seconds != Approx(after_one.planned_seconds));
}

// A run reads its calls only in Start (autotune.h): they may be dropped as
// it is planned (irontuned's worker drops the request's recording then).
// Replaced by another recording after Start, they change nothing.
TEST_CASE("Autotune: a run needs its calls only until it is planned") {
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  Rig reference_rig;
  auto reference = Autotune(SmallGemmLargeGemv(), Profile(), options,
                            reference_rig.Context());
  REQUIRE(reference.ok());

  auto calls = std::make_unique<v1::Calls>(SmallGemmLargeGemv());
  Rig rig;
  auto run = AutotuneRun::Start(*calls, Profile(), options, rig.Context());
  REQUIRE(run.ok());
  *calls = MakeCalls({SearchGemv(1024, 512)}, {0});
  calls.reset();
  while (!(*run)->finished()) REQUIRE((*run)->Next().ok());
  const TuneResult result = std::move(**run).Finish();
  REQUIRE(result.shapes.size() == reference->shapes.size());
  for (size_t s = 0; s < result.shapes.size(); ++s) {
    CHECK(result.shapes[s].key == reference->shapes[s].key);
  }
  CHECK(result.profile.proto().SerializeAsString() ==
        reference->profile.proto().SerializeAsString());
  CHECK(result.diff.SerializeAsString() == reference->diff.SerializeAsString());
}

// A class the simulated NPU has no kernel for (IRON's bit-exact resample):
// its shape is left untuned with the sim's reason, the others are tuned.
TEST_CASE("Autotune: a class the sim cannot run is left untuned, with why") {
  // 4032 -> 912 samples: a 19-tap window, 21 outputs a 256-word chunk, 48
  // chunks (resample/op.py).
  v1::Operator taps =
      testing::Op("ResampleTaps", {{"in_size", 4032}, {"out_size", 912}},
                  {{"num_aie_columns", 8}, {"num_channels", 2}});
  SetDomain(taps, "num_channels", {2, 1});
  testing::AddBuffer(taps, "table", v1::BUFFER_ROLE_OUT, {48, 256},
                     v1::DTYPE_I32);
  const v1::Calls calls = MakeCalls({taps, SearchGemv(2048, 2048)}, {0, 1});
  REQUIRE(ValidateRecording(calls).ok());
  Rig rig;
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  EstimateRecorder context(rig.device.get(), &rig.builder);
  auto result = Autotune(calls, Profile(), options, context);
  REQUIRE(result.ok());
  REQUIRE(result->diff.untuned_size() == 1);
  const v1::UntunedShape& untuned = result->diff.untuned(0);
  CHECK(absl::StartsWith(untuned.shape(), "ResampleTaps"));
  CHECK_THAT(untuned.reason(),
             Catch::Contains("the simulated NPU has no kernel for IRON's "
                             "bit-exact antialiased bicubic resample"));
  CHECK(Saw(context.lines, "left untuned: ResampleTaps"));
  REQUIRE(result->diff.added_size() == 1);
  CHECK(result->diff.added(0).operator_class() == "GEMV");
}

TEST_CASE("Autotune: a spent budget leaves the rest untuned, entries kept") {
  const v1::Calls calls = SmallGemmLargeGemv();
  Profile before;
  const v1::ProfileEntry gemm_entry =
      Entry("GEMM", Dims({{"M", 128}, {"K", 128}, {"N", 128}}),
            Dims({{"tile_m", 64}, {"tile_n", 64}, {"num_aie_columns", 1}}));
  before.Add(gemm_entry);
  Rig rig;
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  // Spent by the first shape's first run: the GEMV is tuned (a shape once
  // begun is finished), the GEMM never begins.
  options.budget_seconds = 1e-9;
  EstimateRecorder context(rig.device.get(), &rig.builder);
  auto result = Autotune(calls, before, options, context);
  REQUIRE(result.ok());
  REQUIRE(context.shapes.size() == 1);
  CHECK(absl::StartsWith(context.shapes[0], "GEMV"));
  REQUIRE(result->diff.untuned_size() == 1);
  const v1::UntunedShape& untuned = result->diff.untuned(0);
  CHECK(absl::StartsWith(untuned.shape(), "GEMM M=128"));
  CHECK_THAT(untuned.reason(), Catch::Contains("budget"));
  CHECK(untuned.planned_device_seconds() > 0);
  CHECK(Saw(context.lines, "1 of 2 shapes left untuned"));
  // The GEMM's entry is as submitted; the GEMV got one.
  REQUIRE(result->diff.kept_size() == 1);
  CHECK(result->diff.kept(0).SerializeAsString() ==
        gemm_entry.SerializeAsString());
  CHECK(result->diff.changed_size() == 0);
  REQUIRE(result->diff.added_size() == 1);
  CHECK(result->diff.added(0).operator_class() == "GEMV");
  CHECK(result->shapes[0].trials.empty());
  CHECK_FALSE(result->shapes[1].trials.empty());
  // The estimate ends at 0 with both shapes done; the untuned one's plan
  // was dropped from what remained.
  REQUIRE_FALSE(context.estimates.empty());
  CHECK(context.estimates.back().done == 2);
  CHECK(context.estimates.back().remaining_seconds == 0);

  // Without a budget both shapes are tuned.
  options.budget_seconds = 0;
  EstimateRecorder full(rig.device.get(), &rig.builder);
  auto all = Autotune(calls, before, options, full);
  REQUIRE(all.ok());
  CHECK(full.shapes.size() == 2);
  CHECK(all->diff.untuned_size() == 0);
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

// A GEMM (M = N = `m`, K = 256) searching tile_m, tile_k
// and columns with a gate its settings pass, then a GEMV: two shapes.
// An M x 256 x M GEMM whose tile_m, tile_k and columns are searched.
v1::Operator SearchGemm(int64_t m) {
  v1::Operator gemm = testing::Gemm(m, 256, m, 64, 64, 64, 1);
  SetDomain(gemm, "tile_m", {32, 64});
  SetDomain(gemm, "tile_k", {32, 64});
  SetDomain(gemm, "tile_n", {64});
  SetDomain(gemm, "num_aie_columns", {1, 2});
  gemm.mutable_tolerance()->mutable_close()->set_atol(1.0 / 32);
  gemm.mutable_tolerance()->mutable_close()->set_rtol(1.0 / 64);
  return gemm;
}

v1::Calls GemmAndGemv(int64_t m) {
  return MakeCalls({SearchGemm(m), SearchGemv(512, 256)}, {0, 1});
}

TEST_CASE("Autotune: a cached rerun builds, loads, seeds and judges nothing") {
  // A GEMM and a GEMV whose settings build, run and are judged afresh.
  const v1::Calls calls = GemmAndGemv(128);
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  int judged = 0;
  options.judge = testing::CountingJudge(&judged);
  auto cache = Cache::Open(TempPath("cached_rerun.db"), "NPU Strix",
                           PowerMode::kDefault);
  REQUIRE(cache.ok());

  Rig rig;
  SimBuilder first_sim;
  testing::CountingBuilder first_builder(first_sim);
  testing::CountingDevice first_device(rig.device.get());
  testing::LocalTuneContext first(&first_device, &first_builder, cache->get());
  auto timed = Autotune(calls, Profile(), options, first);
  REQUIRE(timed.ok());
  // The first run did each of the things the second must not.
  REQUIRE(first_builder.builds > 0);
  REQUIRE(first_device.loads > 0);
  REQUIRE(first.inputs_asked > 0);
  // The inputs made ahead for each shape were the ones its batches took.
  CHECK(first.inputs().prefetched() == 0);

  judged = 0;
  SimBuilder sim_builder;
  testing::CountingBuilder builder(sim_builder);
  testing::CountingDevice device(rig.device.get());
  testing::LocalTuneContext again(&device, &builder, cache->get());
  auto cached = Autotune(calls, Profile(), options, again);
  REQUIRE(cached.ok());
  CHECK(cached->stats.device_timed == 0);
  CHECK(cached->stats.cache_hits > 0);
  CHECK(builder.builds == 0);
  CHECK(builder.prefetches == 0);
  CHECK(builder.later_prefetches == 0);
  CHECK(device.loads == 0);
  CHECK(again.inputs_asked == 0);
  CHECK(judged == 0);
  // The same answer, trial for trial.
  CHECK(cached->profile.ToJson() == timed->profile.ToJson());
  CHECK(cached->diff.SerializeAsString() == timed->diff.SerializeAsString());
  REQUIRE(cached->shapes.size() == timed->shapes.size());
  for (size_t s = 0; s < timed->shapes.size(); ++s) {
    const ShapeResult& a = timed->shapes[s];
    const ShapeResult& b = cached->shapes[s];
    CHECK(a.best == b.best);
    REQUIRE(a.trials.size() == b.trials.size());
    for (size_t i = 0; i < a.trials.size(); ++i) {
      CHECK(a.trials[i].trial.delta_us == b.trials[i].trial.delta_us);
      CHECK(a.trials[i].trial.refused == b.trials[i].trial.refused);
    }
  }
  CHECK(again.trials == first.trials);
}

// Notes each build and each prefetch for later with the shape begun when
// it came (the context's OnShape count less one; -1 before the first).
class ShapeNotingBuilder : public Builder {
 public:
  explicit ShapeNotingBuilder(Builder& inner) : inner_(inner) {}
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    built.emplace_back(Now(), RequestKey(request));
    return inner_.Build(request);
  }
  void PrefetchAt(const BuildRequest& request, int rank) override {
    at.push_back({rank, request.op.class_name(), built.size()});
  }
  void PrefetchLater(const BuildRequest& request) override {
    later.emplace_back(Now(), RequestKey(request));
    queued += 'L';
  }
  void PrefetchSpare(const BuildRequest& request) override {
    spare.emplace_back(Now(), RequestKey(request));
    queued += 'S';
  }
  void Unprefetch(const BuildRequest& request) override {
    dropped.emplace_back(Now(), RequestKey(request));
  }
  // With `checks`, the inner builder's fit check; else Fit builds.
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override {
    return checks ? inner_.Fit(request) : Builder::Fit(request);
  }
  bool ChecksFit() const override { return checks && inner_.ChecksFit(); }
  bool Ready(const BuildRequest& request) override {
    return inner_.Ready(request);
  }
  std::string Environment() const override { return inner_.Environment(); }
  bool checks = false;
  // The OnShape keys of the context the run tells. REQUIRES: set.
  const std::vector<std::string>* shapes = nullptr;
  std::vector<std::pair<int, std::string>> built, later, spare, dropped;
  std::string queued;  // 'L' or 'S' for each PrefetchLater or PrefetchSpare
  // Each PrefetchAt: its rank, the operator's class, and how many builds
  // had been asked for before it.
  struct At {
    int rank;
    std::string class_name;
    size_t built_before;
  };
  std::vector<At> at;

 private:
  int Now() const { return static_cast<int>(shapes->size()) - 1; }
  Builder& inner_;
};

// What an Autotune of `calls` (the recording's space, the Quick Timing)
// asked a ShapeNotingBuilder over the sim's builder; with `checks`, its
// fit checks.
struct NotedBuilds {
  std::vector<std::pair<int, std::string>> built, later, spare, dropped;
  size_t shapes = 0;
  std::string queued;  // ShapeNotingBuilder::queued
};

// One shape at a time, so the shapes after the first are queued as shapes
// ahead (PrefetchLater), not as shapes starting with it (PrefetchAt).
NotedBuilds AutotuneNoted(const v1::Calls& calls, AutotuneOptions options,
                          bool checks) {
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  options.shapes_at_once = 1;
  Rig rig;
  SimBuilder sim;
  ShapeNotingBuilder noting(sim);
  noting.checks = checks;
  testing::LocalTuneContext run(rig.device.get(), &noting);
  noting.shapes = &run.shapes;
  auto tuned = Autotune(calls, Profile(), options, run);
  REQUIRE(tuned.ok());
  return {noting.built,   noting.later,      noting.spare,
          noting.dropped, run.shapes.size(), noting.queued};
}

TEST_CASE("Autotune: the next shape's designs are queued while one is timed") {
  // Two shapes whose recorded settings build; refusals learnt by building,
  // or by the sim's fit check.
  const NotedBuilds noted =
      AutotuneNoted(GemmAndGemv(256), {}, GENERATE(false, true));
  REQUIRE(noted.shapes == 2);
  REQUIRE_FALSE(noted.later.empty());
  std::set<std::string> queued, second_built, all_built;
  for (const auto& [shape, key] : noted.later) {
    CHECK(shape == 0);  // while the first shape was searched
    queued.insert(key);
  }
  for (const auto& [shape, key] : noted.built) {
    all_built.insert(key);
    if (shape == 1) second_built.insert(key);
  }
  // Every build the second shape asked for was queued before it began,
  // and nothing was queued that no shape built.
  REQUIRE_FALSE(second_built.empty());
  for (const std::string& key : second_built) CHECK(queued.count(key) == 1);
  for (const std::string& key : queued) CHECK(all_built.count(key) == 1);
}

TEST_CASE(
    "Autotune: a later shape's other settings are queued to spare, and "
    "dropped as it ends") {
  // Two GEMMs of three tunables each, searched by coordinate descent.
  AutotuneOptions options;
  options.exhaustive = 2;
  options.rank = false;  // this mechanism, not the ranked rounds
  const NotedBuilds noted =
      AutotuneNoted(MakeCalls({SearchGemm(512), SearchGemm(256)}, {0, 1}),
                    options, GENERATE(false, true));
  REQUIRE(noted.shapes == 2);
  REQUIRE_FALSE(noted.spare.empty());
  std::set<std::string> first, spare, dropped;
  for (const auto& [shape, key] : noted.later) first.insert(key);
  for (const auto& [shape, key] : noted.spare) {
    CHECK(shape == 0);             // queued while the first shape was searched
    CHECK(first.count(key) == 0);  // not among its first builds
    spare.insert(key);
  }
  for (const auto& [shape, key] : noted.dropped) {
    CHECK(shape == 1);  // as the second shape ended
    dropped.insert(key);
  }
  CHECK(dropped == spare);
  // The second shape asked only for designs queued before it began: its
  // first builds, or its other settings'.
  int beyond_first = 0;
  for (const auto& [shape, key] : noted.built) {
    if (shape != 1) continue;
    CHECK((first.count(key) + spare.count(key)) == 1);
    beyond_first += spare.count(key);
  }
  CHECK(beyond_first > 0);  // its search went past its first line
}

TEST_CASE("Autotune: every later shape's first builds go before any spare") {
  // Three GEMMs searched by coordinate descent: the first shape queues the
  // first builds of both after it, and only then their other settings'.
  AutotuneOptions options;
  options.exhaustive = 2;
  options.rank = false;  // this mechanism, not the ranked rounds
  const NotedBuilds noted = AutotuneNoted(
      MakeCalls({SearchGemm(512), SearchGemm(256), SearchGemm(128)}, {0, 1, 2}),
      options, GENERATE(false, true));
  REQUIRE(noted.shapes == 3);
  REQUIRE_FALSE(noted.spare.empty());
  std::set<int> laters;  // the shapes begun as first builds were queued
  for (const auto& [shape, key] : noted.later) laters.insert(shape);
  CHECK(laters == std::set<int>{0});
  const size_t first_spare = noted.queued.find('S');
  CHECK(first_spare > 0);
  CHECK(noted.queued.find('L', first_spare) == std::string::npos);
}

TEST_CASE(
    "Autotune: of the shapes that start together, the one with the longest "
    "timings per setting is built first") {
  // A small GEMM run often (the most weighted time: tuned first) and a
  // large GEMV run once (the longest timings per setting).
  std::vector<int> steps(60, 0);
  steps.push_back(1);
  const v1::Calls calls =
      MakeCalls({SearchGemm(256), SearchGemv(4096, 2048)}, steps);
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  Rig rig;
  auto platform = rig.device->GetPlatform();
  REQUIRE(platform.ok());
  auto shapes = Shapes(calls, options.space, platform->generation);
  REQUIRE(shapes.ok());
  auto costs = PlanShapes(*shapes, calls, *platform, options, KernelCycles());
  REQUIRE(costs.ok());
  REQUIRE(costs->size() == 2);
  const std::vector<size_t> order = TuneOrder(*costs);
  auto per_setting = [&](size_t s) {
    return (*costs)[s].device_seconds / (*costs)[s].settings;
  };
  // The premise: the shape tuned second has the longer timings.
  INFO((*costs)[0].weighted_us << " " << (*costs)[1].weighted_us << " "
                               << per_setting(0) << " " << per_setting(1));
  REQUIRE((*shapes)[order[0]].class_name == "GEMM");
  REQUIRE(per_setting(order[1]) > per_setting(order[0]));

  SimBuilder sim;
  ShapeNotingBuilder noting(sim);
  testing::LocalTuneContext run(rig.device.get(), &noting);
  noting.shapes = &run.shapes;
  REQUIRE(Autotune(calls, Profile(), options, run).ok());
  // Before anything was built, the GEMV's first designs were queued at
  // rank 1, all of them ahead of any of the GEMM's (at rank 2).
  std::string classes;
  for (const ShapeNotingBuilder::At& a : noting.at) {
    if (a.built_before > 0) break;
    CHECK(a.rank == (a.class_name == "GEMV" ? 1 : 2));
    if (classes.empty() || classes.back() != a.class_name[3]) {
      classes += a.class_name[3];
    }
  }
  CHECK(classes == "VM");
  // The turn still goes by the order: the GEMM was searched first.
  REQUIRE_FALSE(run.shapes.empty());
  CHECK(run.shapes[0].rfind("GEMM", 0) == 0);
}

// A builder whose builds take wall time: those of operators of class
// `gated` wait for the gate (at most a minute, then noted), the rest
// build at once. Nothing is Ready, so a lane gives up its turn to wait.
class GatedBuilder : public Builder {
 public:
  GatedBuilder(Builder& inner, std::string gated)
      : inner_(inner), gated_(std::move(gated)) {}
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    if (request.op.class_name() == gated_ &&
        !gate.WaitForNotificationWithTimeout(absl::Minutes(1))) {
      gate_timed_out = true;
    }
    return inner_.Build(request);
  }
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override {
    return inner_.Fit(request);
  }
  bool ChecksFit() const override { return inner_.ChecksFit(); }
  bool Ready(const BuildRequest& /*request*/) override { return false; }
  std::string Environment() const override { return inner_.Environment(); }
  absl::Notification gate;
  std::atomic<bool> gate_timed_out{false};

 private:
  Builder& inner_;
  const std::string gated_;
};

// Notes which shape each trial was of and the thread each shape began on,
// and opens `gate` (where set) at the first trial of shape `opens_at`.
struct LaneRecorder : testing::LocalTuneContext {
  using LocalTuneContext::LocalTuneContext;
  void OnTrial(int index, const Comparison& trial) override {
    LocalTuneContext::OnTrial(index, trial);
    told.push_back(index);
    if (index == opens_at && gate != nullptr && !gate->HasBeenNotified()) {
      gate->Notify();
    }
  }
  int opens_at = 1;
  void OnShape(int index, int total, const std::string& key) override {
    LocalTuneContext::OnShape(index, total, key);
    threads.push_back(std::this_thread::get_id());
  }
  absl::Notification* gate = nullptr;
  std::vector<int> told;
  std::vector<std::thread::id> threads;  // each shape began on
};

// The class of the shape tuned first, from a run one shape at a time.
std::string FirstClass(const v1::Calls& calls, AutotuneOptions options) {
  Rig rig;
  testing::LocalTuneContext context(rig.device.get(), &rig.builder);
  options.shapes_at_once = 1;
  REQUIRE(Autotune(calls, Profile(), options, context).ok());
  REQUIRE_FALSE(context.shapes.empty());
  return context.shapes[0].substr(0, context.shapes[0].find(' '));
}

// A GEMM and a GEMV (or `recorded`, its shapes of distinct classes) at
// Quick timing, the first shape's builds gated until the second shape has
// trials (GatedBuilder, LaneRecorder).
struct GatedLanes {
  explicit GatedLanes(v1::Calls recorded = GemmAndGemv(256))
      : calls(std::move(recorded)), options(QuickOptions()) {
    gated =
        std::make_unique<GatedBuilder>(rig.builder, FirstClass(calls, options));
    context = std::make_unique<LaneRecorder>(rig.device.get(), gated.get());
    context->gate = &gated->gate;
  }
  static AutotuneOptions QuickOptions() {
    AutotuneOptions o;
    o.space = RecordingSearchSpace();
    o.timing = Quick();
    return o;
  }
  const v1::Calls calls;
  AutotuneOptions options;
  Rig rig;
  std::unique_ptr<GatedBuilder> gated;
  std::unique_ptr<LaneRecorder> context;
};

TEST_CASE("Autotune: the next shape is timed while one waits for builds") {
  GatedLanes lanes;
  Rig serial_rig;
  testing::LocalTuneContext serial(serial_rig.device.get(),
                                   &serial_rig.builder);
  lanes.options.shapes_at_once = 1;
  auto one_at_a_time = Autotune(lanes.calls, Profile(), lanes.options, serial);
  REQUIRE(one_at_a_time.ok());

  // Only a lane searching the second shape meanwhile opens the gate.
  lanes.options.shapes_at_once = 2;
  auto at_once =
      Autotune(lanes.calls, Profile(), lanes.options, *lanes.context);
  REQUIRE(at_once.ok());
  CHECK_FALSE(lanes.gated->gate_timed_out);
  const std::vector<int>& told = lanes.context->told;
  REQUIRE_FALSE(told.empty());
  CHECK(told.front() == 1);
  CHECK(std::count(told.begin(), told.end(), 0) > 0);
  // The first on the caller's thread; the second on one of its own,
  // started when the first gave the device up.
  const std::vector<std::thread::id>& threads = lanes.context->threads;
  REQUIRE(threads.size() == 2);
  CHECK(threads[0] == std::this_thread::get_id());
  CHECK(threads[1] != std::this_thread::get_id());
  // The noise-free device gives each setting its figure whatever the
  // order: the same profile and counts as one shape at a time.
  CHECK(at_once->profile.ToJson() == one_at_a_time->profile.ToJson());
  CHECK(at_once->stats.settings_timed == one_at_a_time->stats.settings_timed);
  CHECK(at_once->stats.device_timed == one_at_a_time->stats.device_timed);
}

TEST_CASE("Autotune: a shape that waits long holds back no later shape") {
  // Three shapes, two at once: the first waits for its builds until the
  // third has trials, so the third begins as soon as the second ends.
  const v1::Calls two = GemmAndGemv(256);
  GatedLanes lanes(MakeCalls({two.operators(0), two.operators(1),
                              testing::Silu8192({512, 1024, 2048})},
                             {0, 1, 2}));
  lanes.context->opens_at = 2;
  lanes.options.shapes_at_once = 2;
  auto tuned = Autotune(lanes.calls, Profile(), lanes.options, *lanes.context);
  REQUIRE(tuned.ok());
  CHECK_FALSE(lanes.gated->gate_timed_out);
  REQUIRE(lanes.context->shapes.size() == 3);
  const std::vector<int>& told = lanes.context->told;
  const auto first_of = [&told](int shape) {
    return std::find(told.begin(), told.end(), shape) - told.begin();
  };
  // The first shape's trials come after the third's first.
  CHECK(first_of(2) < first_of(0));
  CHECK(first_of(0) < static_cast<ptrdiff_t>(told.size()));
  CHECK(tuned->shapes.size() == 3);
}

TEST_CASE("Autotune: a cancel ends every shape under way") {
  GatedLanes lanes;
  // Cancelled once the second shape has trials, while the first waits.
  GatedBuilder& gated = *lanes.gated;
  lanes.context->cancel_when = [&gated] {
    return gated.gate.HasBeenNotified();
  };
  auto tuned = Autotune(lanes.calls, Profile(), lanes.options, *lanes.context);
  CHECK(absl::IsCancelled(tuned.status()));
  CHECK_FALSE(gated.gate_timed_out);
}

TEST_CASE("Autotune: builds that take no time start no thread") {
  const v1::Calls calls = GemmAndGemv(256);
  const AutotuneOptions options = GatedLanes::QuickOptions();
  const std::thread::id caller = std::this_thread::get_id();
  // Builds that take no wall time: every shape on the caller's thread.
  Rig rig;
  LaneRecorder context(rig.device.get(), &rig.builder);
  REQUIRE(Autotune(calls, Profile(), options, context).ok());
  REQUIRE(context.threads.size() == 2);
  for (const std::thread::id& t : context.threads) CHECK(t == caller);
}

TEST_CASE(
    "Autotune: a shape's reference is computed once and its verdicts stay") {
  // One GEMM call: one point, whose settings write other bytes than the
  // recorded one (other tile orders), judged under a tight gate so some
  // are refused and some admitted.
  v1::Operator gemm = testing::Gemm(256, 256, 256, 64, 64, 64, 1);
  SetDomain(gemm, "tile_m", {32, 64});
  SetDomain(gemm, "tile_k", {32, 64, 128});
  SetDomain(gemm, "tile_n", {64});
  SetDomain(gemm, "num_aie_columns", {1});
  gemm.mutable_tolerance()->mutable_close()->set_atol(0);
  gemm.mutable_tolerance()->mutable_close()->set_rtol(1.0 / 512);
  const v1::Calls calls = MakeCalls({gemm}, {0});
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  int references = 0, judged = 0;
  options.reference = testing::CountingReference(&references);
  options.judge = testing::CountingJudge(&judged);
  Rig rig;
  auto shared = Autotune(calls, Profile(), options, rig.Context());
  REQUIRE(shared.ok());
  REQUIRE(judged >= 3);
  CHECK(references == 1);

  // Each judgement computing its own reference, as every judge did before
  // the memo: the same verdicts, the same search.
  options.reference = nullptr;
  options.judge = Judge;
  Rig alone_rig;
  auto alone = Autotune(calls, Profile(), options, alone_rig.Context());
  REQUIRE(alone.ok());
  REQUIRE(shared->shapes.size() == 1);
  REQUIRE(alone->shapes.size() == 1);
  const ShapeResult& a = shared->shapes[0];
  const ShapeResult& b = alone->shapes[0];
  CHECK(a.best == b.best);
  REQUIRE(a.trials.size() == b.trials.size());
  int refused = 0, admitted = 0;
  for (size_t i = 0; i < a.trials.size(); ++i) {
    CHECK(a.trials[i].trial.refused == b.trials[i].trial.refused);
    if (absl::StrContains(a.trials[i].trial.refused, "gate")) ++refused;
    if (a.trials[i].trial.refused.empty()) ++admitted;
  }
  // The tight gate refuses some outputs and admits others (the recorded
  // setting's among them).
  CHECK(refused > 0);
  CHECK(admitted > 1);
}

TEST_CASE("Settings: the default space's answer is kept, another's is not") {
  const Platform platform = testing::PlatformOf("npu2");
  v1::Operator op = testing::Gemm(256, 256, 256, 64, 64, 64, 1);
  std::vector<std::string> lines;
  const auto log = [&lines](const std::string& l) { lines.push_back(l); };
  auto first = Settings(op, platform, {}, DefaultSearchSpace(), log);
  REQUIRE(first.ok());
  REQUIRE(first->size() > 2);
  const size_t logged = lines.size();
  // Asked again (kept): the same settings, and the same line logged again.
  auto second = Settings(op, platform, {}, DefaultSearchSpace(), log);
  REQUIRE(second.ok());
  REQUIRE(second->size() == first->size());
  for (size_t i = 0; i < first->size(); ++i) {
    CHECK(SettingsEqual((*first)[i], (*second)[i]));
  }
  CHECK(lines.size() == 2 * logged);
  // Pins are part of what is kept.
  auto pinned = Settings(op, platform, {"tile_m"}, DefaultSearchSpace());
  REQUIRE(pinned.ok());
  CHECK(pinned->size() < first->size());
  // The default space with one member replaced is another space.
  SearchSpace coarse = DefaultSearchSpace();
  coarse.identity = [](const v1::Operator&, const TunableValues& s) {
    return absl::StrCat(IntOf(s, "num_aie_columns"));
  };
  auto merged = Settings(op, platform, {}, coarse);
  REQUIRE(merged.ok());
  CHECK(merged->size() < first->size());
}

// A fully cached Autotune in the default space (the shape memo keeps only
// those) of one GEMV, with the counts the memo must leave as they were.
struct CachedRun {
  TuneResult result;
  int64_t reads = 0;  // figures the run read from the cache file
  int trials = 0;
  std::vector<std::string> lines;
  int builds = 0;
};

CachedRun RunCached(Rig& rig, Cache& cache, const v1::Calls& calls,
                    const AutotuneOptions& options) {
  const int64_t hits = cache.Stats()->hits;
  SimBuilder sim_builder;
  testing::CountingBuilder builder(sim_builder);
  testing::LocalTuneContext context(rig.device.get(), &builder, &cache);
  auto run = Autotune(calls, Profile(), options, context);
  REQUIRE(run.ok());
  return {*std::move(run), cache.Stats()->hits - hits, context.trials,
          context.lines, builder.builds};
}

void CheckSameRun(const CachedRun& a, const CachedRun& b) {
  CHECK(a.result.profile.ToJson() == b.result.profile.ToJson());
  CHECK(a.result.diff.SerializeAsString() == b.result.diff.SerializeAsString());
  CHECK(a.result.stats.cache_hits == b.result.stats.cache_hits);
  CHECK(a.result.stats.measure_calls == b.result.stats.measure_calls);
  CHECK(a.result.stats.settings_timed == b.result.stats.settings_timed);
  CHECK(a.result.stats.device_timed == b.result.stats.device_timed);
  CHECK(a.trials == b.trials);
  CHECK(a.lines == b.lines);
  REQUIRE(a.result.shapes.size() == b.result.shapes.size());
  for (size_t s = 0; s < a.result.shapes.size(); ++s) {
    CHECK(a.result.shapes[s].best == b.result.shapes[s].best);
    CHECK(a.result.shapes[s].trials.size() == b.result.shapes[s].trials.size());
  }
}

TEST_CASE(
    "Autotune: a search that timed nothing is kept until the cache "
    "changes") {
  ForgetKeptShapes();
  const v1::Calls calls = MakeCalls({SearchGemv(512, 256)}, {0});
  AutotuneOptions options;
  options.timing = Quick();
  auto cache =
      Cache::Open(TempPath("shape_memo.db"), "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  Rig rig;
  const CachedRun timed = RunCached(rig, **cache, calls, options);
  REQUIRE(timed.result.stats.device_timed > 0);
  REQUIRE(timed.builds > 0);

  // The first cached run reads its figures from the file and is kept.
  const CachedRun read = RunCached(rig, **cache, calls, options);
  CHECK(read.result.stats.device_timed == 0);
  CHECK(read.reads > 0);
  CHECK(read.builds == 0);
  CHECK(read.result.profile.ToJson() == timed.result.profile.ToJson());
  // The next is answered from the memo: no figure read, the same answer,
  // stats, trials and lines.
  const CachedRun kept = RunCached(rig, **cache, calls, options);
  CHECK(kept.reads == 0);
  CheckSameRun(kept, read);

  // Another margin is another search: read from the file again.
  AutotuneOptions other = options;
  other.min_gain = 0.01;
  CHECK(RunCached(rig, **cache, calls, other).reads > 0);

  // Any write to the cache forgets what was kept.
  const v1::Measurement unrelated;
  CacheKey key;
  key.recipe_hash = std::string(64, 'a');
  key.artifact_hash = std::string(64, 'b');
  REQUIRE((*cache)->Put(key, unrelated).ok());
  const CachedRun after_write = RunCached(rig, **cache, calls, options);
  CHECK(after_write.reads > 0);
  CheckSameRun(after_write, read);

  // A remeasure is never answered from the memo.
  AutotuneOptions remeasure = options;
  remeasure.remeasure = true;
  const CachedRun again = RunCached(rig, **cache, calls, remeasure);
  CHECK(again.result.stats.device_timed > 0);
}

TEST_CASE("Cache: every write moves the generation on, unique per cache") {
  auto a = Cache::Open(TempPath("generation_a.db"), "NPU Strix",
                       PowerMode::kDefault);
  auto b = Cache::Open(TempPath("generation_b.db"), "NPU Strix",
                       PowerMode::kDefault);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK((*a)->generation() != (*b)->generation());
  uint64_t last = (*a)->generation();
  CacheKey key;
  key.recipe_hash = std::string(64, 'c');
  key.artifact_hash = std::string(64, 'd');
  REQUIRE((*a)->Put(key, v1::Measurement()).ok());
  CHECK((*a)->generation() != last);
  last = (*a)->generation();
  REQUIRE((*a)->PutVerdict({std::string(64, 'e'), "env"}, "fits").ok());
  CHECK((*a)->generation() != last);
  last = (*a)->generation();
  REQUIRE((*a)->Stats().ok());
  REQUIRE((*a)->Get(key).ok());
  CHECK((*a)->generation() == last);  // reads leave it
  REQUIRE((*a)->Clear().ok());
  CHECK((*a)->generation() != last);
}

// The sim builder with its fit check hidden: Fit builds, as with a
// builder command that has no fit check.
class NoFitCheck : public BuilderWrapper {
 public:
  using BuilderWrapper::BuilderWrapper;
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override {
    return Builder::Fit(request);
  }
  bool ChecksFit() const override { return false; }
};

// What an Autotune of `calls` did, with a builder that checks fits or not.
struct FitRun {
  TuneResult result;
  int builds = 0;
  int fits = 0;
  int prefetches = 0;  // of either priority
  int trials = 0;
  std::vector<std::string> lines;
};

FitRun RunFits(const v1::Calls& calls, const AutotuneOptions& options,
               bool checks) {
  Rig rig(/*noise=*/true);
  SimBuilder sim;
  NoFitCheck hidden(&sim);
  testing::CountingBuilder builder(checks ? static_cast<Builder&>(sim)
                                          : static_cast<Builder&>(hidden));
  testing::LocalTuneContext context(rig.device.get(), &builder);
  auto tuned = Autotune(calls, Profile(), options, context);
  REQUIRE(tuned.ok());
  return {*std::move(tuned), builder.builds,
          builder.fits,      builder.prefetches + builder.later_prefetches,
          context.trials,    context.lines};
}

TEST_CASE("Autotune: fit checks build only what is timed and decide the same") {
  // 36 combinations, 24 of which the sim builds: a descent above 8, which
  // leaves some settings untimed.
  v1::Operator op = WideGemm();
  const v1::Calls calls = MakeCalls({op}, {0});
  for (int exhaustive : {8, 1000}) {
    AutotuneOptions options;
    options.space = RecordingSearchSpace();
    options.timing = Quick();
    options.exhaustive = exhaustive;
    options.rank = false;  // this mechanism, not the ranked rounds
    const FitRun building = RunFits(calls, options, false);
    const FitRun checking = RunFits(calls, options, true);
    CHECK(building.fits == 0);
    CHECK(checking.fits > 0);
    CHECK(checking.builds < building.builds);
    // The same search: figures, trials, log and profile.
    CHECK(checking.result.profile.ToJson() == building.result.profile.ToJson());
    CHECK(checking.result.diff.SerializeAsString() ==
          building.result.diff.SerializeAsString());
    CHECK(checking.result.stats.settings_timed ==
          building.result.stats.settings_timed);
    CHECK(checking.result.stats.device_timed ==
          building.result.stats.device_timed);
    CHECK(checking.result.stats.builder_refused ==
          building.result.stats.builder_refused);
    CHECK(checking.trials == building.trials);
    CHECK(checking.lines == building.lines);
    REQUIRE(checking.result.shapes.size() == building.result.shapes.size());
    const ShapeResult& a = checking.result.shapes[0];
    const ShapeResult& b = building.result.shapes[0];
    CHECK(a.best == b.best);
    REQUIRE(a.trials.size() == b.trials.size());
    for (size_t i = 0; i < a.trials.size(); ++i) {
      CHECK(a.trials[i].trial.delta_us == b.trials[i].trial.delta_us);
      CHECK(a.trials[i].trial.refused == b.trials[i].trial.refused);
    }
  }
}

TEST_CASE("ShapeBuilds: with fit checks only what the search builds first") {
  // A descent (36 combinations, 24 build, exhaustive 8): its first Line.
  v1::Operator op = WideGemm();
  const v1::Calls calls = MakeCalls({op}, {0});
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  options.exhaustive = 8;
  auto shapes = Shapes(calls, options.space, "npu2");
  REQUIRE(shapes.ok());
  REQUIRE(shapes->size() == 1);
  Rig rig;
  SimBuilder sim;
  ShapeNotingBuilder noting(sim);
  noting.checks = true;
  testing::LocalTuneContext run(rig.device.get(), &noting);
  noting.shapes = &run.shapes;
  auto listed =
      ShapeBuilds({(*shapes)[0], calls, rig.platform(), options, {}, run});
  REQUIRE(listed.ok());
  CHECK(noting.built.empty());  // fits checked, nothing built
  // The recorded setting and a Line of a few others, each twice: each
  // 1-step design with its many-step one right behind it.
  CHECK(listed->size() >= 4);
  CHECK(listed->size() % 2 == 0);
  CHECK(listed->size() < 2 * 24);
  for (size_t k = 0; k + 1 < listed->size(); k += 2) {
    CHECK((*listed)[k].steps == 1);
    CHECK((*listed)[k + 1].steps == options.repeats);
    CHECK((*listed)[k + 1].op.SerializeAsString() ==
          (*listed)[k].op.SerializeAsString());
  }
  auto tuned = Autotune(calls, Profile(), options, run);
  REQUIRE(tuned.ok());
  std::set<std::string> built;
  for (const auto& [shape, key] : noting.built) built.insert(key);
  for (const BuildRequest& r : *listed) CHECK(built.count(RequestKey(r)) == 1);
}

TEST_CASE(
    "Autotune: a descent guesses its next lines and a rerun guesses none") {
  v1::Operator op = WideGemm();
  const v1::Calls calls = MakeCalls({op}, {0});
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  options.exhaustive = 8;
  options.rank = false;  // this mechanism, not the ranked rounds
  auto cache = Cache::Open(TempPath("descent_guesses.db"), "NPU Strix",
                           PowerMode::kDefault);
  REQUIRE(cache.ok());
  Rig rig;
  SimBuilder sim;
  testing::CountingBuilder first(sim);
  testing::LocalTuneContext first_run(rig.device.get(), &first, cache->get());
  auto timed = Autotune(calls, Profile(), options, first_run);
  REQUIRE(timed.ok());
  CHECK(first.prefetches > 0);
  // Before its first build, the descent has queued its first line and
  // its guess at the next: more than the shape's own first list.
  auto shapes = Shapes(calls, options.space, "npu2");
  REQUIRE(shapes.ok());
  Rig fresh;
  SimBuilder fresh_sim;
  testing::NotingBuilder noting(&fresh_sim);
  testing::LocalTuneContext context(fresh.device.get(), &noting);
  auto listed = ShapeBuilds(
      {(*shapes)[0], calls, fresh.platform(), options, {}, context});
  REQUIRE(listed.ok());
  REQUIRE(
      TimeShape({(*shapes)[0], calls, fresh.platform(), options, {}, context})
          .ok());
  std::set<std::string> before_first_build;
  for (const testing::NotingBuilder::Call& call : noting.calls) {
    if (call.what == 'B') break;
    before_first_build.insert(call.key);
  }
  CHECK(before_first_build.size() > listed->size());
  // Every many-step design is queued right behind a 1-step one (its own:
  // Measure waits for the two together).
  const testing::NotingBuilder::Call* previous = nullptr;
  for (const testing::NotingBuilder::Call& call : noting.calls) {
    if (call.what == 'B') continue;
    if (call.steps > 1) {
      REQUIRE(previous != nullptr);
      CHECK(previous->steps == 1);
    }
    previous = &call;
  }
  testing::CountingBuilder again(sim);
  testing::LocalTuneContext second_run(rig.device.get(), &again, cache->get());
  auto cached = Autotune(calls, Profile(), options, second_run);
  REQUIRE(cached.ok());
  CHECK(cached->stats.device_timed == 0);
  CHECK(again.builds == 0);
  CHECK(again.prefetches == 0);
  CHECK(again.later_prefetches == 0);
  CHECK(cached->profile.ToJson() == timed->profile.ToJson());
}

TEST_CASE("TimeShape: every member's designs are queued before one is built") {
  v1::Operator gemm = SearchGemm(256, 256, 256, 64, 64, 1);
  SetDomain(gemm, "tile_m", {32, 64});
  SetDomain(gemm, "num_aie_columns", {1, 2});
  v1::Operator other = gemm;
  other.mutable_buffers(0)->set_name("a2");  // another design, same shape
  const v1::Calls calls = MakeCalls({gemm, other}, {0, 1});
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  options.rank = false;  // this mechanism, not the ranked rounds
  auto shapes = Shapes(calls, options.space, "npu2");
  REQUIRE(shapes.ok());
  REQUIRE(shapes->size() == 1);
  REQUIRE((*shapes)[0].members.size() == 2);
  Rig rig;
  SimBuilder sim;
  testing::NotingBuilder noting(&sim);
  testing::LocalTuneContext context(rig.device.get(), &noting);
  auto result =
      TimeShape({(*shapes)[0], calls, rig.platform(), options, {}, context});
  REQUIRE(result.ok());
  REQUIRE(result->trials.size() > 1);
  std::set<std::string> queued_first, built;
  bool building = false;
  for (const testing::NotingBuilder::Call& call : noting.calls) {
    if (call.what == 'B') {
      building = true;
      built.insert(call.key);
    } else if (!building) {
      queued_first.insert(call.key);
    }
  }
  REQUIRE_FALSE(built.empty());
  // Both members' designs, 1-step and many-step, before the first build.
  for (const std::string& key : built) CHECK(queued_first.count(key) == 1);
}

// ------------------------------------------------------ ranked searches

// One Autotune of `calls` on a noise-free rig, counting builds.
struct RankedRun {
  TuneResult result;
  int builds = 0;
  std::vector<std::string> lines;
};

RankedRun RunRanked(const v1::Calls& calls, const AutotuneOptions& options,
                    CostKnowledge* knowledge, Cache* cache = nullptr) {
  Rig rig;
  SimBuilder sim_builder;
  testing::CountingBuilder builder(sim_builder);
  testing::LocalTuneContext context(rig.device.get(), &builder, cache);
  context.set_costs(knowledge);
  auto run = Autotune(calls, Profile(), options, context);
  REQUIRE(run.ok());
  return {*std::move(run), builder.builds, context.lines};
}

AutotuneOptions RankedOptions() {
  AutotuneOptions options;
  options.space = RecordingSearchSpace();
  options.timing = Quick();
  return options;
}

TEST_CASE("Autotune: a ranked search builds few settings, as well chosen") {
  // 36 combinations, 24 of which the sim builds.
  const v1::Operator op = WideGemm();
  const v1::Calls calls = MakeCalls({op}, {0});
  AutotuneOptions all = RankedOptions();
  all.rank = false;
  all.race = false;
  all.exhaustive = 1000;
  const RankedRun every = RunRanked(calls, all, nullptr);
  CostKnowledge knowledge;
  const RankedRun ranked = RunRanked(calls, RankedOptions(), &knowledge);
  CHECK(ranked.result.stats.rank_rounds >= 1);
  CHECK(every.result.stats.rank_rounds == 0);
  CHECK(ranked.result.stats.settings_timed < every.result.stats.settings_timed);
  CHECK(ranked.builds < every.builds);
  CHECK(Saw(ranked.lines, "ranked: "));
  // What it chose is as fast (the sim without noise is the truth).
  Rig truth;
  const auto true_us = [&](const RankedRun& r) {
    const ShapeResult& s = r.result.shapes[0];
    return TrueUs(truth, WithSetting(op, s.trials[s.best].trial.tunables));
  };
  CHECK(true_us(ranked) <= 1.01 * true_us(every));
  // The shape is learnt, for the class's next shapes.
  CHECK(knowledge.shapes() == 1);
  CHECK(knowledge.SamplesOf("GEMM", "").size() >=
        static_cast<size_t>(ranked.result.stats.settings_timed) - 1);
}

TEST_CASE("Autotune: a shape whose class was searched builds no more") {
  const v1::Operator other = SearchGemm(1024, 256, 512, 64, 64, 1);
  v1::Operator op = WideGemm();
  CostKnowledge knowledge;
  AutotuneOptions options = RankedOptions();
  v1::Operator taught = other;
  SetDomain(taught, "tile_m", {32, 64, 128});
  SetDomain(taught, "tile_n", {32, 64, 128});
  SetDomain(taught, "num_aie_columns", {1, 2, 4, 8});
  RunRanked(MakeCalls({taught}, {0}), options, &knowledge);
  REQUIRE(knowledge.shapes() == 1);
  const v1::Calls calls = MakeCalls({op}, {0});
  const RankedRun alone = RunRanked(calls, options, nullptr);
  const RankedRun after = RunRanked(calls, options, &knowledge);
  CHECK(after.result.stats.settings_timed <= alone.result.stats.settings_timed);
  CHECK(after.builds <= alone.builds);
}

TEST_CASE("Autotune: a ranked search is replayed from the cache as it ran") {
  ForgetKeptShapes();
  const v1::Calls calls = MakeCalls({WideGemm()}, {0});
  auto cache =
      Cache::Open(TempPath("ranked.db"), "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  CostKnowledge knowledge;
  AutotuneOptions options = RankedOptions();
  const RankedRun first = RunRanked(calls, options, &knowledge, cache->get());
  REQUIRE(first.result.stats.device_timed > 0);
  // Whatever the daemon learned since (here: the shape itself, under
  // another key), the same rounds are timed from the cache.
  knowledge.Learn("GEMM", "another shape",
                  knowledge.SamplesOf("GEMM", "no such shape"));
  ForgetKeptShapes();
  const RankedRun again = RunRanked(calls, options, &knowledge, cache->get());
  CHECK(again.result.stats.device_timed == 0);
  CHECK(again.builds == 0);
  CHECK(Saw(again.lines, "replayed"));
  CHECK(again.result.profile.ToJson() == first.result.profile.ToJson());
  CHECK(again.result.stats.settings_timed == first.result.stats.settings_timed);
  CHECK(again.result.stats.rank_rounds == first.result.stats.rank_rounds);
  // A remeasure times the same rounds afresh.
  options.remeasure = true;
  const RankedRun fresh = RunRanked(calls, options, &knowledge, cache->get());
  CHECK(fresh.result.stats.device_timed > 0);
  CHECK(fresh.result.stats.rank_rounds == first.result.stats.rank_rounds);
  const auto settings = [](const RankedRun& r) {
    std::set<std::string> out;
    for (const ShapeTrial& t : r.result.shapes[0].trials) {
      out.insert(SettingIdentity(t.trial.tunables));
    }
    return out;
  };
  CHECK(settings(fresh) == settings(first));
}

TEST_CASE("Autotune: a ranked search without fit checks builds no more") {
  // Without a fit check a ranked search learns refusals as it builds,
  // rather than building every setting first.
  const v1::Calls calls = MakeCalls({WideGemm()}, {0});
  AutotuneOptions options = RankedOptions();
  const FitRun ranked = RunFits(calls, options, false);
  options.rank = false;
  const FitRun descent = RunFits(calls, options, false);
  CHECK(ranked.fits == 0);
  REQUIRE(ranked.result.stats.rank_rounds >= 1);
  // The descent built each of the 35 other combinations' 1-step designs to
  // learn that 12 do not fit; the ranked search built what it timed.
  CHECK(descent.builds >= 35);
  CHECK(ranked.builds < descent.builds);
}

}  // namespace
}  // namespace irontune
