#include "daemon/tune/measure.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/value.h"
#include "daemon/base/stats.h"
#include "daemon/builder/build_pool.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "daemon/store/cache.h"
#include "daemon/tune/inputs.h"
#include "daemon/tune/judge.h"
#include "tests/testing/counting_fakes.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/tune_context.h"

namespace irontune {
namespace {

// A bf16 GEMM at one setting, with a tolerance.
v1::Operator Gemm(int64_t m, int64_t k, int64_t n, int64_t tile_m,
                  int64_t tile_k, int64_t tile_n, int64_t columns) {
  v1::Operator op = testing::IronGemm(m, k, n, tile_m, tile_k, tile_n, columns);
  op.mutable_tolerance()->mutable_close()->set_atol(0.03);
  op.mutable_tolerance()->mutable_close()->set_rtol(0.02);
  return op;
}

ResolvedTiming Quick() {
  v1::Timing t;
  t.set_rounds(6);
  t.set_calls(5);
  t.set_settle(2);
  t.set_cutoff(1.5);
  return ResolvedTiming(t);
}

struct Rig {
  explicit Rig(std::string_view spec = "sim:npu2", uint64_t seed = 7) {
    SimOptions options;
    options.seed = seed;
    device = *MakeSimDevice(spec, options);
  }
  std::unique_ptr<testing::LocalTuneContext> Context(Cache* cache = nullptr) {
    return std::make_unique<testing::LocalTuneContext>(device.get(), &builder,
                                                       cache);
  }
  std::unique_ptr<SimDevice> device;
  SimBuilder builder;
};

MeasurePlan Request(std::vector<v1::Operator> settings) {
  MeasurePlan r;
  r.settings = std::move(settings);
  r.timing = Quick();
  r.packaging = v1::PACKAGING_FULL_ELF;
  return r;
}

std::string TempDb(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "irontune-measure-test";
  std::filesystem::create_directories(dir);
  auto path = dir / (name + ".db");
  std::filesystem::remove(path);
  std::filesystem::remove(path.string() + "-wal");
  std::filesystem::remove(path.string() + "-shm");
  return path.string();
}

// The noise-free step time of `op` on `rig`'s device.
double TrueStep(Rig& rig, const v1::Operator& op) {
  auto platform = rig.device->GetPlatform();
  BuildRequest build{op, *platform, 1, true, v1::PACKAGING_FULL_ELF};
  auto outcome = rig.builder.Build(build);
  REQUIRE(outcome.ok());
  REQUIRE(outcome->artifact.has_value());
  auto us = rig.device->TrueStepUs(*outcome->artifact);
  REQUIRE(us.ok());
  return *us;
}

// One GEMM design at its default and two other settings.
std::vector<v1::Operator> ThreeSettings() {
  return {Gemm(256, 512, 512, 64, 64, 64, 8),
          Gemm(256, 512, 512, 32, 64, 64, 8),
          Gemm(256, 512, 512, 64, 32, 64, 4)};
}

TEST_CASE("every setting pairs with the default, round by round") {
  Rig rig;
  std::vector<v1::Operator> settings = ThreeSettings();
  auto result = Measure(Request(settings), *rig.Context());
  REQUIRE(result.ok());
  for (auto& [i, why] : result->refused) UNSCOPED_INFO(i << ": " << why);
  REQUIRE(result->measurements.size() == 3);
  const v1::Measurement& def = result->measurements.at(0);
  CHECK(def.default_round_us_size() == 0);
  CHECK(def.round_us_size() == 6);
  const double true_default = TrueStep(rig, settings[0]);
  CHECK(def.t_step_us() == Approx(true_default).epsilon(0.05));
  for (int i : {1, 2}) {
    const v1::Measurement& m = result->measurements.at(i);
    CHECK(m.run() == def.run());
    CHECK(m.output().size() == 64);
    CHECK(m.calls() == 5);
    CHECK(m.power_mode() == "default");
    REQUIRE(m.default_round_us_size() == def.round_us_size());
    for (int r = 0; r < def.round_us_size(); ++r) {
      CHECK(m.default_round_us(r) == def.round_us(r));
    }
    // The measured difference agrees with the model's, within four noises
    // plus 3% of the step (the sim's drift is shared, its jitter is not).
    Delta d = AgainstDefault(m);
    REQUIRE(d.noise_us.has_value());
    const double truth = TrueStep(rig, settings[i]) - true_default;
    CHECK(std::abs(d.delta_us - truth) <=
          4 * *d.noise_us + 0.03 * true_default);
  }
}

// Images that keep what they were handed: the bytes written (copied) and
// the inputs shared, by buffer name. Inputs shared are passed on to the
// sim, which keeps the pointer.
struct Handed {
  uint64_t written_bytes = 0;
  std::vector<std::pair<std::string, SharedBytes>> shared;
};

class HandingImage : public ImageWrapper {
 public:
  HandingImage(std::unique_ptr<Image> image, Handed* handed)
      : ImageWrapper(std::move(image)), handed_(handed) {}
  absl::Status WriteBuffer(std::string_view name,
                           std::string_view bytes) override {
    handed_->written_bytes += bytes.size();
    return ImageWrapper::WriteBuffer(name, bytes);
  }
  absl::Status ShareBuffer(std::string_view name, SharedBytes bytes) override {
    handed_->shared.emplace_back(std::string(name), bytes);
    return ImageWrapper::ShareBuffer(name, std::move(bytes));
  }

 private:
  Handed* handed_;
};

class HandingDevice : public DeviceWrapper {
 public:
  using DeviceWrapper::DeviceWrapper;
  Handed handed;

 protected:
  std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                   const Artifact&) override {
    return std::make_unique<HandingImage>(std::move(image), &handed);
  }
};

// Images whose shared inputs are copied in, as the seam's default does: a
// device that cannot keep a pointer.
class CopyingImage : public ImageWrapper {
 public:
  using ImageWrapper::ImageWrapper;
  absl::Status ShareBuffer(std::string_view name, SharedBytes bytes) override {
    return ImageWrapper::WriteBuffer(name, *bytes);
  }
};

class CopyingDevice : public DeviceWrapper {
 public:
  using DeviceWrapper::DeviceWrapper;

 protected:
  std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                   const Artifact&) override {
    return std::make_unique<CopyingImage>(std::move(image));
  }
};

TEST_CASE(
    "seeded inputs are shared with every image and the judge and not copied") {
  Rig rig;
  HandingDevice device(rig.device.get());
  testing::LocalTuneContext context(&device, &rig.builder);
  auto result = Measure(Request(ThreeSettings()), context);
  REQUIRE(result.ok());
  REQUIRE(result->measurements.size() == 3);
  // Nothing was copied in through the seam: every input was shared.
  CHECK(device.handed.written_bytes == 0);
  // Step 0's A of every image is one object, the input cache's; the judge
  // keeps that very object as the default's A.
  const SharedBytes cached =
      context.inputs().Get(v1::DTYPE_BF16, 256 * 512 * 2, InputSeed(0, 0, 0));
  int fed_a = 0;
  for (const auto& [name, bytes] : device.handed.shared) {
    if (name != "s0.a" && name != "s0.A") continue;
    ++fed_a;
    CHECK(bytes.get() == cached.get());
  }
  CHECK(fed_a == 6);  // three settings, two images each
  const SettingOutput& def = result->outputs.at(0);
  CHECK(def.inputs.size() == 2);
  CHECK(def.inputs.at("A").get() == cached.get());
}

TEST_CASE("the steps of a distinct runlist read one copy of each input") {
  Rig rig;
  HandingDevice device(rig.device.get());
  testing::LocalTuneContext context(&device, &rig.builder);
  const MeasurePlan plan = Request(ThreeSettings());
  auto result = Measure(plan, context);
  REQUIRE(result.ok());
  REQUIRE(result->measurements.size() == 3);
  // Each input buffer of every step, of every image, is handed the one
  // object the input cache keeps for its operator buffer.
  std::map<std::string, std::set<const std::string*>> by_buffer;
  std::set<std::string> steps;
  for (const auto& [name, bytes] : device.handed.shared) {
    const size_t dot = name.find('.');
    REQUIRE(dot != std::string::npos);
    steps.insert(name.substr(0, dot));
    by_buffer[absl::AsciiStrToLower(name.substr(dot + 1))].insert(bytes.get());
  }
  CHECK(steps.size() == static_cast<size_t>(plan.repeats));  // distinct
  REQUIRE(by_buffer.size() == 2);                            // A and B
  uint64_t one_copy = 0;
  for (const auto& [buffer, objects] : by_buffer) {
    CHECK(objects.size() == 1);
    one_copy += (*objects.begin())->size();
  }
  CHECK(context.inputs().bytes() == one_copy);
}

// Autotune prefetches a shape's inputs from its operator before any design
// is built (AddDeclaredWants): they must be the ones Measure then asks for.
TEST_CASE("the inputs guessed from an operator are those its designs take") {
  Rig rig;
  auto platform = rig.device->GetPlatform();
  REQUIRE(platform.ok());
  const v1::Operator op = Gemm(256, 512, 512, 32, 64, 64, 8);
  using Wants = std::set<std::tuple<int, uint64_t, uint64_t>>;
  auto keys = [](const std::vector<InputCache::Want>& wants) {
    Wants out;
    for (const InputCache::Want& w : wants) {
      out.insert({w.dtype, w.nbytes, w.seed});
    }
    return out;
  };
  for (const std::map<std::string, std::string>& given :
       {std::map<std::string, std::string>{},
        std::map<std::string, std::string>{{"B", "given"}}}) {
    std::vector<InputCache::Want> declared;
    AddDeclaredWants(op, given, /*seed=*/11, declared);
    CHECK(declared.size() == 2 - given.size());
    for (int steps : {1, 9}) {
      auto built = rig.builder.Build(
          {op, *platform, steps, true, v1::PACKAGING_FULL_ELF});
      REQUIRE(built.ok());
      REQUIRE(built->artifact.has_value());
      std::vector<InputCache::Want> taken;
      AddArtifactWants(op, *built->artifact, given, 11, taken);
      CHECK(taken.size() == steps * declared.size());
      CHECK(keys(taken) == keys(declared));
    }
  }
}

TEST_CASE("outputs are dropped once digested unless a judge needs them") {
  Rig rig;
  std::vector<v1::Operator> settings = ThreeSettings();
  auto result = Measure(Request(settings), *rig.Context());
  REQUIRE(result.ok());
  const auto& m = result->measurements;
  REQUIRE(m.size() == 3);
  // Setting 1 differs from the default in tile_m only: the same output.
  // Setting 2 sums K in other chunks: another output, to be judged.
  REQUIRE(m.at(1).output() == m.at(0).output());
  REQUIRE(m.at(2).output() != m.at(0).output());
  // The default keeps its inputs and no output; setting 1 keeps nothing;
  // setting 2 keeps what it wrote.
  REQUIRE(result->outputs.count(0) == 1);
  CHECK(result->outputs.at(0).written.empty());
  CHECK(result->outputs.count(1) == 0);
  REQUIRE(result->outputs.count(2) == 1);
  CHECK(result->outputs.at(2).inputs.empty());
  REQUIRE(result->outputs.at(2).written.size() == 1);
  CHECK(result->outputs.at(2).written.at("C").size() == 256 * 512 * 2);
  // What it kept is what it wrote: its digest is the measurement's.
  CHECK(OutputDigest(settings[2], result->outputs.at(2).written, {}) ==
        m.at(2).output());
}

// Images that count how outputs are read.
struct Reads {
  int read = 0;
  int taken = 0;
};

class ReadCountingImage : public ImageWrapper {
 public:
  ReadCountingImage(std::unique_ptr<Image> image, Reads* reads)
      : ImageWrapper(std::move(image)), reads_(reads) {}
  absl::StatusOr<std::string> ReadBuffer(std::string_view name) override {
    ++reads_->read;
    return ImageWrapper::ReadBuffer(name);
  }
  absl::StatusOr<std::string> TakeBuffer(std::string_view name) override {
    ++reads_->taken;
    return ImageWrapper::TakeBuffer(name);
  }

 private:
  Reads* reads_;
};

class ReadCountingDevice : public DeviceWrapper {
 public:
  using DeviceWrapper::DeviceWrapper;
  Reads reads;

 protected:
  std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                   const Artifact&) override {
    return std::make_unique<ReadCountingImage>(std::move(image), &reads);
  }
};

TEST_CASE("outputs read once the batch is timed are taken, not copied") {
  Rig rig;
  ReadCountingDevice device(rig.device.get());
  testing::LocalTuneContext context(&device, &rig.builder);
  const std::vector<v1::Operator> settings = ThreeSettings();
  auto result = Measure(Request(settings), context);
  REQUIRE(result.ok());
  REQUIRE(result->measurements.size() == 3);
  CHECK(device.reads.read == 0);
  CHECK(device.reads.taken == 3);  // C of each setting's 1-step image
  // What setting 2 kept for the judge is its output, whole.
  REQUIRE(result->outputs.count(2) == 1);
  CHECK(OutputDigest(settings[2], result->outputs.at(2).written, {}) ==
        result->measurements.at(2).output());
}

TEST_CASE("sharing inputs or copying them gives the same results bit for bit") {
  // Nine settings: two batches on npu2, so outputs are digested beside the
  // next batch.
  std::vector<v1::Operator> settings;
  for (int64_t tile_m : {64, 32, 16}) {
    for (int64_t tile_k : {64, 32, 16}) {
      settings.push_back(Gemm(256, 512, 512, tile_m, tile_k, 64, 8));
    }
  }
  Rig shared("sim:npu2", 5), copied("sim:npu2", 5);
  CopyingDevice copying(copied.device.get());
  testing::LocalTuneContext copy_context(&copying, &copied.builder);
  auto a = Measure(Request(settings), *shared.Context());
  auto b = Measure(Request(settings), copy_context);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->measurements.size() == settings.size());
  REQUIRE(b->measurements.size() == settings.size());
  for (const auto& [i, x] : a->measurements) {
    const v1::Measurement& y = b->measurements.at(i);
    CHECK(x.t_step_us() == y.t_step_us());
    CHECK(x.t_step_noise_us() == y.t_step_noise_us());
    CHECK(x.output() == y.output());
    CHECK(std::vector<double>(x.round_us().begin(), x.round_us().end()) ==
          std::vector<double>(y.round_us().begin(), y.round_us().end()));
    CHECK(std::vector<double>(x.default_round_us().begin(),
                              x.default_round_us().end()) ==
          std::vector<double>(y.default_round_us().begin(),
                              y.default_round_us().end()));
  }
  REQUIRE(a->outputs.size() == b->outputs.size());
  for (const auto& [i, out] : a->outputs) {
    CHECK(out.written == b->outputs.at(i).written);
  }
  // Each digest is its own setting's, whichever helper made it: the
  // settings of one tile_k write alike, those of another differ.
  for (size_t i = 0; i < settings.size(); ++i) {
    for (size_t j = 0; j < settings.size(); ++j) {
      const bool same_k = i % 3 == j % 3;
      CHECK((a->measurements.at(i).output() ==
             a->measurements.at(j).output()) == same_k);
    }
  }
  for (const auto& [i, out] : a->outputs) {
    if (i == 0) continue;
    CHECK(OutputDigest(settings[i], out.written, {}) ==
          a->measurements.at(i).output());
  }
}

TEST_CASE("the same seed gives the same measurements") {
  std::vector<v1::Operator> settings = {Gemm(256, 512, 512, 64, 64, 64, 8),
                                        Gemm(256, 512, 512, 32, 64, 64, 8)};
  Rig a(/*spec=*/"sim:npu2", /*seed=*/11), b("sim:npu2", 11), c("sim:npu2", 12);
  auto ra = Measure(Request(settings), *a.Context());
  auto rb = Measure(Request(settings), *b.Context());
  auto rc = Measure(Request(settings), *c.Context());
  REQUIRE(ra.ok());
  REQUIRE(rb.ok());
  REQUIRE(rc.ok());
  for (int i : {0, 1}) {
    const v1::Measurement& x = ra->measurements.at(i);
    const v1::Measurement& y = rb->measurements.at(i);
    CHECK(x.t_step_us() == y.t_step_us());
    CHECK(std::vector<double>(x.round_us().begin(), x.round_us().end()) ==
          std::vector<double>(y.round_us().begin(), y.round_us().end()));
    CHECK(x.output() == y.output());
  }
  CHECK(ra->measurements.at(0).t_step_us() !=
        rc->measurements.at(0).t_step_us());
}

TEST_CASE(
    "measure: a slow setting is cut after settle rounds, never the default") {
  Rig rig;
  // One column and 32-wide tiles: far slower than the default.
  auto result = Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 8),
                                 Gemm(256, 512, 512, 32, 32, 32, 1)}),
                        *rig.Context());
  REQUIRE(result.ok());
  CHECK(result->measurements.at(0).round_us_size() == 6);
  CHECK(result->measurements.at(1).round_us_size() == 2);
}

TEST_CASE("batches follow the device's hardware contexts") {
  // npu1 holds 6 contexts: 2 settings and the default a batch. npu2 holds
  // 16: 7 and the default.
  std::vector<v1::Operator> settings = {
      Gemm(256, 512, 512, 64, 64, 64, 4), Gemm(256, 512, 512, 32, 64, 64, 4),
      Gemm(256, 512, 512, 64, 32, 64, 4), Gemm(256, 512, 512, 32, 32, 64, 4),
      Gemm(256, 512, 512, 64, 64, 32, 4)};
  auto runs = [&](std::string_view spec) {
    Rig rig(spec);
    MeasurePlan request = Request(settings);
    request.packaging = v1::PACKAGING_XCLBIN_CHAIN;
    v1::Timing timing = request.timing.proto();
    timing.set_cutoff(100);  // nothing cut: every batch is full
    request.timing = ResolvedTiming(timing);
    auto result = Measure(request, *rig.Context());
    REQUIRE(result.ok());
    for (auto& [i, why] : result->refused) UNSCOPED_INFO(i << ": " << why);
    REQUIRE(result->measurements.size() == settings.size());
    std::set<std::string> ids;
    for (const auto& [i, m] : result->measurements) ids.insert(m.run());
    return ids.size();
  };
  CHECK(runs("sim:npu1") == 2);
  CHECK(runs("sim:npu2") == 1);
}

TEST_CASE("a setting that does not build is reported and skipped") {
  Rig rig;
  // tile_m 128: M 256 is not a multiple of 4 * 128.
  auto result = Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 8),
                                 Gemm(256, 512, 512, 128, 64, 64, 8),
                                 Gemm(256, 512, 512, 32, 64, 64, 8)}),
                        *rig.Context());
  REQUIRE(result.ok());
  CHECK(result->measurements.count(1) == 0);
  REQUIRE(result->refused.count(1) == 1);
  CHECK_THAT(result->refused.at(1), Catch::Contains("tile_m"));
  CHECK(result->measurements.count(2) == 1);
}

TEST_CASE("the default not building is an error") {
  Rig rig;
  auto result = Measure(Request({Gemm(256, 512, 512, 128, 64, 64, 8),
                                 Gemm(256, 512, 512, 64, 64, 64, 8)}),
                        *rig.Context());
  REQUIRE(absl::IsFailedPrecondition(result.status()));
  CHECK_THAT(std::string(result.status().message()),
             Catch::Contains("recorded setting"));
}

// Fails the n-th Load.
class FailingLoad : public DeviceWrapper {
 public:
  FailingLoad(Device* target, int fail_at)
      : DeviceWrapper(target), fail_at_(fail_at) {}
  absl::StatusOr<std::unique_ptr<Image>> Load(const Artifact& a) override {
    if (++loads_ == fail_at_) {
      return absl::UnavailableError("injected: the device refused the load");
    }
    return DeviceWrapper::Load(a);
  }

 private:
  int fail_at_;
  int loads_ = 0;
};

TEST_CASE("a failed load is a device error, not the setting's") {
  Rig rig;
  FailingLoad device(rig.device.get(), 3);
  auto context = rig.Context();
  context->set_device(&device);
  auto result = Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 8),
                                 Gemm(256, 512, 512, 32, 64, 64, 8)}),
                        *context);
  REQUIRE(absl::IsUnavailable(result.status()));
}

TEST_CASE("rounds while another process holds the NPU are discarded") {
  Rig rig;
  sim::InterferenceScript script;
  // Each holders query takes 100 ms of virtual time: the query before the
  // first round (at ~0.1 s) sees the NPU free, the one after it (~0.2 s)
  // sees it held.
  script.start_us = 150'000;
  script.duration_us = 100'000;
  rig.device->ScriptInterference(script);
  auto result = Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 8),
                                 Gemm(256, 512, 512, 32, 64, 64, 8)}),
                        *rig.Context());
  REQUIRE(result.ok());
  CHECK(result->measurements.at(0).round_us_size() == 6);
  CHECK(result->measurements.at(0).discarded_rounds() >= 1);
}

TEST_CASE("calls that waited for a CPU are refused and their rounds redone") {
  Rig rig;
  sim::CpuWaitScript script;
  script.start_call = 40;
  script.calls = 3;
  script.wait_us = 5000;
  rig.device->ScriptCpuWait(script);
  auto result = Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 8),
                                 Gemm(256, 512, 512, 32, 64, 64, 8)}),
                        *rig.Context());
  REQUIRE(result.ok());
  CHECK(result->measurements.at(0).refused_calls() >= 1);
  CHECK(result->measurements.at(0).round_us_size() == 6);
}

// Switches the sim's power mode at the n-th run of any image.
class SwitchingImage : public ImageWrapper {
 public:
  SwitchingImage(std::unique_ptr<Image> image, SimDevice* sim, int* runs)
      : ImageWrapper(std::move(image)), sim_(sim), runs_(runs) {}
  absl::StatusOr<RunResult> Run() override {
    if (++*runs_ == 30) (void)sim_->SetPowerMode(PowerMode::kPowersaver);
    return ImageWrapper::Run();
  }

 private:
  SimDevice* sim_;
  int* runs_;
};

class Switching : public DeviceWrapper {
 public:
  explicit Switching(SimDevice* sim) : DeviceWrapper(sim), sim_(sim) {}

 protected:
  std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                   const Artifact&) override {
    return std::make_unique<SwitchingImage>(std::move(image), sim_, &runs_);
  }

 private:
  SimDevice* sim_;
  int runs_ = 0;
};

TEST_CASE("a power mode change mid-batch discards the batch") {
  Rig rig;
  Switching device(rig.device.get());
  auto context = rig.Context();
  context->set_device(&device);
  auto result = Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 8),
                                 Gemm(256, 512, 512, 32, 64, 64, 8)}),
                        *context);
  REQUIRE(absl::IsFailedPrecondition(result.status()));
  CHECK_THAT(std::string(result.status().message()),
             Catch::Contains("powersaver"));
}

TEST_CASE("the cache serves what was timed and misses what was not") {
  Rig rig;
  const std::string path = TempDb("hits");
  auto cache = Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  std::vector<v1::Operator> settings = {Gemm(256, 512, 512, 64, 64, 64, 8),
                                        Gemm(256, 512, 512, 32, 64, 64, 8)};
  auto first = Measure(Request(settings), *rig.Context(cache->get()));
  REQUIRE(first.ok());
  CHECK(first->cached.empty());
  const int64_t calls = rig.device->calls();

  auto second = Measure(Request(settings), *rig.Context(cache->get()));
  REQUIRE(second.ok());
  CHECK(second->cached.size() == 2);
  CHECK(rig.device->calls() == calls);  // nothing ran
  CHECK(second->measurements.at(1).t_step_us() ==
        first->measurements.at(1).t_step_us());

  // Other per-call values: a miss.
  MeasurePlan other = Request(settings);
  other.values["rows"] = 128;
  // GEMM here has no CallValue "rows": the request is refused, nothing
  // cached under it.
  auto refused = Measure(other, *rig.Context(cache->get()));
  CHECK(absl::IsInvalidArgument(refused.status()));

  // Remeasure times again.
  MeasurePlan again = Request(settings);
  again.remeasure = true;
  auto third = Measure(again, *rig.Context(cache->get()));
  REQUIRE(third.ok());
  CHECK(third->cached.empty());
  CHECK(rig.device->calls() > calls);
}

TEST_CASE("a cache of another power mode is refused") {
  Rig rig;
  auto cache =
      Cache::Open(TempDb("pmode"), "NPU Strix", PowerMode::kPerformance);
  REQUIRE(cache.ok());
  auto result = Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 8)}),
                        *rig.Context(cache->get()));
  REQUIRE(absl::IsFailedPrecondition(result.status()));
}

TEST_CASE("npu1 has no full-ELF dispatch") {
  Rig rig("sim:npu1");
  auto result =
      Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 4)}), *rig.Context());
  REQUIRE(absl::IsFailedPrecondition(result.status()));
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

// Seeded pairs on the virtual clock with the sim's default noise (jitter,
// outliers, drift) and scripted interference: how often |figure - truth|
// <= 2 reported noises, for the delta (AgainstDefault) and for the step
// time (t_step_us +- t_step_noise_us). docs/statistics.md quotes the
// estimator_bench figures this pins.
TEST_CASE("+-2 noises cover the true delta and the true step time") {
  const std::vector<std::pair<v1::Operator, v1::Operator>> pairs = {
      {Gemm(256, 512, 512, 64, 64, 64, 8), Gemm(256, 512, 512, 64, 64, 64, 4)},
      {Gemm(256, 512, 512, 64, 64, 64, 8), Gemm(256, 512, 512, 32, 64, 64, 8)},
      // A large delta: the batch's drift scales it, beyond the rounds' SE.
      {Gemm(256, 512, 512, 64, 64, 64, 8), Gemm(256, 512, 512, 64, 64, 64, 1)},
  };
  const ResolvedTiming timing = ResolvedTiming().WithRounds(8).WithCalls(20);
  // Each seed's device twice: alone, and with a cache that learns from the
  // repeats of the recorded setting how far a repeat moves (one cache over
  // every seed, as a daemon's over its runs).
  const std::string path = TempDb("coverage");
  auto cache = Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  int n = 0, delta_in = 0, step_in = 0, learned_in = 0, wider = 0;
  double z2 = 0, alone_z2 = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Rig rig("sim:npu2", seed), twin("sim:npu2", seed);
    for (Rig* r : {&rig, &twin}) {
      r->device->ScriptInterference({20e6, 2e6, 4242});
    }
    auto context = rig.Context();
    auto learning = twin.Context(cache->get());
    for (const auto& [a, b] : pairs) {
      const double ta = TrueStep(rig, a);
      const double tb = TrueStep(rig, b);
      for (int k = 0; k < 6; ++k) {
        // Idle a seeded while (100 ms a query), so batches see the drift at
        // many phases.
        for (uint64_t q = (seed * 7 + k * 13) % 50; q > 0; --q) {
          REQUIRE(rig.device->OtherHolders().ok());
          REQUIRE(twin.device->OtherHolders().ok());
        }
        MeasurePlan plan = Request({a, b});
        plan.timing = timing;
        plan.remeasure = true;
        auto outcome = Measure(plan, *context);
        auto twin_outcome = Measure(plan, *learning);
        REQUIRE(outcome.ok());
        REQUIRE(twin_outcome.ok());
        REQUIRE(outcome->measurements.size() == 2);
        const v1::Measurement& ma = outcome->measurements.at(0);
        const v1::Measurement& la = twin_outcome->measurements.at(0);
        const Delta d = AgainstDefault(outcome->measurements.at(1));
        const Delta ld = AgainstDefault(twin_outcome->measurements.at(1));
        REQUIRE(d.noise_us.has_value());
        REQUIRE(ma.has_t_step_noise_us());
        // The same timings; the deltas and their noises exactly as alone.
        REQUIRE(la.t_step_us() == ma.t_step_us());
        CHECK(ld.delta_us == d.delta_us);
        CHECK(ld.noise_us == d.noise_us);
        ++n;
        if (std::abs(d.delta_us - (tb - ta)) <= 2 * *d.noise_us) ++delta_in;
        const double alone_z = (ma.t_step_us() - ta) / ma.t_step_noise_us();
        alone_z2 += alone_z * alone_z;
        if (std::abs(alone_z) <= 2) ++step_in;
        const double z = (la.t_step_us() - ta) / la.t_step_noise_us();
        z2 += z * z;
        if (std::abs(z) <= 2) ++learned_in;
        if (la.t_step_noise_us() > ma.t_step_noise_us()) ++wider;
      }
    }
  }
  const double delta_coverage = static_cast<double>(delta_in) / n;
  const double step_coverage = static_cast<double>(step_in) / n;
  const double learned_coverage = static_cast<double>(learned_in) / n;
  const double rms_z = std::sqrt(z2 / n);
  const std::optional<double> share = (*cache)->Spread()->share();
  REQUIRE(share.has_value());
  INFO("delta coverage " << delta_coverage << ", step coverage "
                         << step_coverage << ", learned " << learned_coverage
                         << " (rms z " << rms_z << ", alone "
                         << std::sqrt(alone_z2 / n) << ", " << wider
                         << " wider, repeats spread " << *share << ") over "
                         << n);
  CHECK(delta_coverage >= 0.88);
  CHECK(delta_coverage <= 0.995);
  CHECK(step_coverage >= 0.90);
  CHECK(step_coverage <= 0.99);
  // The sim drifts by 1% (an sd of 0.71% over its period): the cache sees
  // more than the floor's 0.5%, and the step times' noise follows it.
  CHECK(*share > kDriftFloor);
  CHECK(wider > n / 2);
  CHECK(learned_coverage >= step_coverage);
  CHECK(learned_coverage <= 0.995);
  CHECK(rms_z >= 0.7);
  CHECK(rms_z <= 1.3);
}

// GEMM 256x512x512 settings that build on `rig`'s device, the recorded
// setting first: more than one batch holds.
std::vector<v1::Operator> ManySettings(Rig& rig, size_t n) {
  auto platform = rig.device->GetPlatform();
  std::vector<v1::Operator> out;
  for (int64_t cols : {8, 4, 2}) {
    for (int64_t tm : {64, 32, 16}) {
      for (int64_t tk : {64, 32}) {
        for (int64_t tn : {64, 32}) {
          const v1::Operator op = Gemm(256, 512, 512, tm, tk, tn, cols);
          auto built = rig.builder.Build(
              {op, *platform, 1, true, v1::PACKAGING_FULL_ELF});
          if (built.ok() && built->artifact && out.size() < n) {
            out.push_back(op);
          }
        }
      }
    }
  }
  REQUIRE(out.size() == n);
  return out;
}

// The cache's export, one line each.
std::set<std::string> Exported(Cache& cache) {
  std::ostringstream out;
  REQUIRE(cache.Export(out).ok());
  std::set<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.insert(line);
  return lines;
}

size_t CountWith(const std::set<std::string>& lines, const std::string& text) {
  return std::count_if(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.find(text) != std::string::npos;
  });
}

TEST_CASE("a remeasure at a shorter Timing keeps the better figures") {
  Rig rig;
  auto cache = Cache::Open(TempDb("shorter"), "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  const std::vector<v1::Operator> settings = ThreeSettings();
  const MeasurePlan full = Request(settings);  // 6 rounds x 5 calls
  MeasurePlan shorter = Request(settings);
  shorter.timing = Quick().WithRounds(2).WithCalls(2);
  shorter.remeasure = true;
  auto first = Measure(full, *rig.Context(cache->get()));
  REQUIRE(first.ok());
  const std::set<std::string> before = Exported(**cache);
  const std::string at_full = "\"timing\":{\"calls\":5,\"rounds\":6}";
  const std::string at_shorter = "\"timing\":{\"calls\":2,\"rounds\":2}";
  REQUIRE(CountWith(before, at_full) == 3);

  auto again = Measure(shorter, *rig.Context(cache->get()));
  REQUIRE(again.ok());
  CHECK(again->cached.empty());
  const std::set<std::string> after = Exported(**cache);
  // Every line kept as it was, and the shorter figures added beside them.
  CHECK(
      std::includes(after.begin(), after.end(), before.begin(), before.end()));
  CHECK(after.size() == before.size() + 3);
  CHECK(CountWith(after, at_shorter) == 3);

  // Asked at the full Timing, or the shorter one: the full figures.
  const int64_t calls = rig.device->calls();
  const MeasurePlan replay = [&] {
    MeasurePlan p = shorter;
    p.remeasure = false;
    return p;
  }();
  for (const MeasurePlan* plan : {&full, &replay}) {
    auto found = Measure(*plan, *rig.Context(cache->get()));
    REQUIRE(found.ok());
    CHECK(found->cached.size() == 3);
    for (const auto& [i, m] : first->measurements) {
      CHECK(found->measurements.at(i).SerializeAsString() ==
            m.SerializeAsString());
    }
  }
  CHECK(rig.device->calls() == calls);
  // Asked at a longer Timing than any kept: timed.
  MeasurePlan longer = Request(settings);
  longer.timing = Quick().WithRounds(7);
  auto timed = Measure(longer, *rig.Context(cache->get()));
  REQUIRE(timed.ok());
  CHECK(timed->cached.empty());
}

TEST_CASE("a cancelled remeasure leaves every stored figure as it was") {
  Rig rig;
  auto cache = Cache::Open(TempDb("cancel"), "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  const std::vector<v1::Operator> settings = ManySettings(rig, 10);
  auto first = Measure(Request(settings), *rig.Context(cache->get()));
  REQUIRE(first.ok());
  const std::set<std::string> before = Exported(**cache);
  REQUIRE(CountWith(before, "\"kind\":\"measurement\"") == 10);

  SECTION("at a shorter Timing, cancelled as its second batch begins") {
    MeasurePlan shorter = Request(settings);
    shorter.timing = Quick().WithRounds(2).WithCalls(2);
    shorter.remeasure = true;
    auto context = rig.Context(cache->get());
    context->cancel_when = [&] {
      return CountWith({context->lines.begin(), context->lines.end()},
                       "timing") >= 2;
    };
    auto cancelled = Measure(shorter, *context);
    CHECK(absl::IsCancelled(cancelled.status()));
    const std::set<std::string> after = Exported(**cache);
    CHECK(std::includes(after.begin(), after.end(), before.begin(),
                        before.end()));
    // The first batch finished (the recorded setting and 7 others): its
    // figures are added at their Timing; the rest of the call's are not.
    CHECK(after.size() == before.size() + 8);
    CHECK(CountWith(after, "\"timing\":{\"calls\":2,\"rounds\":2}") == 8);
  }
  SECTION("at the same Timing, cancelled within its first batch") {
    MeasurePlan same = Request(settings);
    same.remeasure = true;
    auto context = rig.Context(cache->get());
    const int64_t start = rig.device->calls();
    context->cancel_when = [&] { return rig.device->calls() > start + 40; };
    auto cancelled = Measure(same, *context);
    CHECK(absl::IsCancelled(cancelled.status()));
    CHECK(rig.device->calls() > start);
    CHECK(Exported(**cache) == before);
  }
}

// Counts builds, and fails those of tile_m 16 with an error.
class CountingBuilder : public Builder {
 public:
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    ++builds;
    for (const v1::Tunable& t : request.op.tunables()) {
      if (t.name() == "tile_m" && t.value().int_value() == 16) {
        return absl::InternalError("the build command crashed");
      }
    }
    return inner.Build(request);
  }
  std::string Environment() const override { return inner.Environment(); }
  SimBuilder inner;
  int builds = 0;
};

TEST_CASE("a fully cached Measure builds nothing, even in a new daemon") {
  Rig rig;
  const std::string path = TempDb("built");
  auto cache = Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  std::vector<v1::Operator> settings = {Gemm(256, 512, 512, 64, 64, 64, 8),
                                        Gemm(256, 512, 512, 32, 64, 64, 8),
                                        Gemm(256, 512, 512, 64, 32, 64, 8)};
  CountingBuilder counting;
  testing::LocalTuneContext first_context(rig.device.get(), &counting,
                                          cache->get());
  auto first = Measure(Request(settings), first_context);
  REQUIRE(first.ok());
  CHECK(counting.builds == 6);  // 1-step and many-step of each

  // A fresh builder (as after a restart) with nothing in memory.
  CountingBuilder fresh;
  BuildPool pool(&fresh, BuildPoolOptions{2});
  testing::LocalTuneContext second_context(rig.device.get(), &pool,
                                           cache->get());
  auto second = Measure(Request(settings), second_context);
  REQUIRE(second.ok());
  CHECK(second->cached.size() == 3);
  CHECK(fresh.builds == 0);
  CHECK(second->measurements.at(2).t_step_us() ==
        first->measurements.at(2).t_step_us());
}

TEST_CASE("a Measure queues every design it builds before it waits for one") {
  Rig rig;
  SimBuilder sim;
  testing::NotingBuilder noting(&sim);
  testing::LocalTuneContext context(rig.device.get(), &noting);
  MeasurePlan plan = Request({Gemm(256, 512, 512, 64, 64, 64, 8),
                              Gemm(256, 512, 512, 32, 64, 64, 8),
                              Gemm(256, 512, 512, 64, 32, 64, 8)});
  auto result = Measure(plan, context);
  REQUIRE(result.ok());
  // Each setting's 1-step design with its many-step one, in timing order.
  const std::string many = absl::StrCat("P", plan.repeats);
  const std::vector<std::string> queued = {"P1", many, "P1", many, "P1", many};
  std::vector<std::string> calls;
  for (const testing::NotingBuilder::Call& call : noting.calls) {
    calls.push_back(absl::StrCat(std::string(1, call.what), call.steps));
  }
  REQUIRE(calls.size() >= queued.size());
  CHECK(std::vector<std::string>(calls.begin(),
                                 calls.begin() + queued.size()) == queued);
}

// Notes each Load in the NotingBuilder's calls, as 'D'.
class LoadNoting : public DeviceWrapper {
 public:
  LoadNoting(Device* target, testing::NotingBuilder& noting)
      : DeviceWrapper(target), noting_(noting) {}
  absl::StatusOr<std::unique_ptr<Image>> Load(const Artifact& a) override {
    noting_.calls.push_back({'D', a.steps, ""});
    return DeviceWrapper::Load(a);
  }

 private:
  testing::NotingBuilder& noting_;
};

TEST_CASE("a Measure's first batch is timed before a later one is built") {
  Rig rig;
  SimBuilder sim;
  testing::NotingBuilder noting(&sim);
  LoadNoting device(rig.device.get(), noting);
  testing::LocalTuneContext context(&device, &noting);
  std::vector<v1::Operator> settings;
  for (int m : {64, 32}) {
    for (int n : {64, 32}) {
      for (int k : {64, 32})
        settings.push_back(Gemm(256, 512, 512, m, n, k, 8));
    }
  }
  settings.push_back(Gemm(256, 512, 512, 16, 64, 64, 8));
  auto result = Measure(Request(settings), context);
  REQUIRE(result.ok());
  // More settings timed than one batch holds (npu2: 7 beside the default).
  REQUIRE(result->measurements.size() > 8);
  const auto first = [&](char what, int steps) {
    for (size_t i = 0; i < noting.calls.size(); ++i) {
      if (noting.calls[i].what == what && noting.calls[i].steps == steps) {
        return i;
      }
    }
    return noting.calls.size();
  };
  std::vector<size_t> one_step_waits;
  for (size_t i = 0; i < noting.calls.size(); ++i) {
    if (noting.calls[i].what == 'B' && noting.calls[i].steps == 1) {
      one_step_waits.push_back(i);
    }
  }
  REQUIRE(one_step_waits.size() == settings.size());
  // Everything queued before the first wait; the last setting's 1-step
  // design waited for only after the first batch was loaded.
  CHECK(first('P', 1) < first('B', 1));
  CHECK(first('D', 1) < one_step_waits.back());
}

TEST_CASE("a build that fails is the setting's verdict, not the call's") {
  Rig rig;
  CountingBuilder counting;
  BuildPool pool(&counting, BuildPoolOptions{1});
  testing::LocalTuneContext context(rig.device.get(), &pool);
  auto result = Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 8),
                                 Gemm(256, 512, 512, 16, 64, 64, 8),
                                 Gemm(256, 512, 512, 32, 64, 64, 8)}),
                        context);
  REQUIRE(result.ok());
  REQUIRE(result->refused.count(1) == 1);
  CHECK_THAT(result->refused.at(1), Catch::Contains("crashed"));
  CHECK(result->measurements.count(2) == 1);
}

TEST_CASE("cancelling stops a Measure waiting for its builds") {
  Rig rig;
  SimBuildCost cost;
  cost.per_design = absl::Seconds(1);  // far longer than 5 looks
  cost.spend = SimBuildCost::Spend::kSleep;
  SimBuilder slow(cost);
  BuildPool pool(&slow, BuildPoolOptions{1});
  testing::LocalTuneContext context(rig.device.get(), &pool);
  int looks = 0;
  context.cancel_when = [&] { return ++looks > 5; };
  auto result = Measure(Request({Gemm(256, 512, 512, 64, 64, 64, 8),
                                 Gemm(256, 512, 512, 32, 64, 64, 8)}),
                        context);
  CHECK(absl::IsCancelled(result.status()));
  CHECK(rig.device->calls() == 0);
}

}  // namespace
}  // namespace irontune
