// Benchmarks of Autotune's search on the simulated NPU (sim:npu2, virtual
// clock, default noise), judged against the sim's noise-free model
// (sim::ModelStepUs) as ground truth. Prints figures; never fails on time.
//
//   autotune_bench [quality|cost|false-gains|stability|ci|coverage|spaces|
//                  all]...
//                  [--shapes N] [--seeds S] [--ci-runs N] [--rounds R]
//                  [--calls C] [--example PATH] [--example-rules]
//                  [--no-rank] [--no-knowledge]
//                  [--only TEXT] [--part I/N]
//
// Shapes: the example recording's GEMM and GEMV shapes (each alone, with
// its points), then decode GEMVs (K -> M) and 256-row prompt GEMMs of real
// models (Llama 3.2 3B, Llama 3.1 8B, Qwen2.5 0.5B/1.5B/7B, Phi-3-mini,
// Gemma 2 2B; sizes from their public configs), each a one-operator
// recording with the catalogue's domain rules evaluated for it and the
// recorder's usual setting. --example-rules drops the example's recorded
// domains, so its shapes search the rules' spaces too.
// A shape's true time is what the search minimises: the sum over its
// members and points of weight x the model's step time.
//
//   quality      the chosen setting's true time against the true optimum
//                over every setting of the space the SimBuilder builds, and
//                over those whose output the accuracy gate also admits (as
//                timing every setting finds: the sim rounds GEMM's C to bf16
//                at every tile_k chunk, so small tile_k may fail the gate)
//   cost         settings timed / settings in the space, and device time
//                (sum of run times) against timing every setting
//   false-gains  the recorded setting made the (admitted) true optimum:
//                how often another is taken, and whether it is truly slower
//   stability    5 seeds (sim noise and inputs): how often the choices agree
//   ci           CI re-tunes: from the profile the first seed wrote, tuned
//                again with fresh figures (remeasured, another seed) 10
//                times: how often `submit --check` would pass (the same
//                profile), and what the confirmations cost
//   spaces       the example's settings per shape (Settings on sim:npu2),
//                with its recorded domains and with the catalogue's rules
//   coverage     how often +-2 reported noises cover the truth: every
//                exhaustive trial's delta, and the recorded setting's
//                absolute step time in every run
//
// For development, --shapes N takes the first N shapes, --seeds S the
// stability seeds and --ci-runs N the re-tunes; --only TEXT keeps the
// shapes whose name holds TEXT (before --shapes); --part I/N every N-th
// shape from the I-th (0-based), to split a run over processes.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/families.h"
#include "common/profile.h"
#include "common/recording.h"
#include "common/shape.h"
#include "common/value.h"
#include "daemon/npu/metered.h"
#include "daemon/sim/perf_model.h"
#include "daemon/sim/sim_builder.h"
#include "daemon/sim/sim_device.h"
#include "daemon/tune/autotune.h"
#include "daemon/tune/cost_model.h"
#include "daemon/tune/settings.h"
#include "spdlog/spdlog.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/tune_context.h"

namespace irontune {
namespace {

constexpr v1::Packaging kPackaging = v1::PACKAGING_FULL_ELF;
constexpr int64_t kChunk = 256;  // prompt rows

// ---------------------------------------------------------------- shapes

// `op` as the recorder writes it: its family's defaults on its params and,
// on its tunables, the catalogue's domain rules evaluated for it on npu2
// (OperatorDomain: IRON's recorder writes the rule's values).
v1::Operator WithFamily(v1::Operator op) {
  const Family* f = FindFamily(op.class_name());
  if (f == nullptr) return op;
  for (v1::Param& p : *op.mutable_params()) {
    for (const Dim& d : f->dims) {
      if (d.name == p.name() &&
          d.default_value.kind_case() != v1::Value::KIND_NOT_SET) {
        *p.mutable_default_value() = d.default_value;
      }
    }
  }
  const v1::Operator resolved = op;
  for (v1::Tunable& t : *op.mutable_tunables()) {
    for (const v1::Value& v : OperatorDomain(resolved, t.name(), "npu2")) {
      *t.add_domain() = v;
    }
  }
  return op;
}

// The reduction gate of the example (atol 2^-5, rtol 2^-6).
v1::Tolerance ReductionGate() {
  v1::Tolerance t;
  t.mutable_close()->set_atol(1.0 / 32);
  t.mutable_close()->set_rtol(1.0 / 64);
  return t;
}

// C[M, N] = A[M, K] B, B in PyTorch's [out, in] layout, as the example.
v1::Operator Gemm(int64_t m, int64_t k, int64_t n, int64_t tm, int64_t tk,
                  int64_t tn, int64_t cols) {
  v1::Operator op = testing::GemmParams(m, k, n, tm, tk, tn, cols);
  testing::AddParam(op, "b_col_maj", BoolValue(true));
  testing::AddParam(op, "c_col_maj", BoolValue(false));
  testing::AddParam(op, "dtype_in", StringValue("bf16"));
  testing::AddParam(op, "dtype_out", StringValue("bf16"));
  testing::AddBuffer(op, "A", v1::BUFFER_ROLE_IN, {uint64_t(m), uint64_t(k)});
  testing::AddBuffer(op, "B", v1::BUFFER_ROLE_IN, {uint64_t(n), uint64_t(k)});
  testing::AddBuffer(op, "C", v1::BUFFER_ROLE_OUT, {uint64_t(m), uint64_t(n)});
  *op.mutable_tolerance() = ReductionGate();
  return WithFamily(std::move(op));
}

// y[M] = A[M, K] x[K], as the example.
v1::Operator Gemv(int64_t m, int64_t k, int64_t cols, int64_t tin, int64_t tout,
                  int64_t vec) {
  v1::Operator op = testing::GemvParams(m, k, tin, tout, vec, cols);
  testing::AddParam(op, "num_batches", 1);
  testing::AddBuffer(op, "A", v1::BUFFER_ROLE_IN, {uint64_t(m), uint64_t(k)});
  testing::AddBuffer(op, "x", v1::BUFFER_ROLE_IN, {uint64_t(k)});
  testing::AddBuffer(op, "y", v1::BUFFER_ROLE_OUT, {uint64_t(m)});
  *op.mutable_tolerance() = ReductionGate();
  return WithFamily(std::move(op));
}

bool Builds(const v1::Operator& op, const Platform& platform,
            SimBuilder& builder) {
  auto outcome = builder.Build({op, platform, 1, true, kPackaging});
  return outcome.ok() && outcome->artifact.has_value();
}

// The setting a recorder would write: IRON's defaults (GEMM 64-tiles on
// every column; GEMV 8 columns, 2-element input tiles, M/8 output rows up to
// 256, 64-wide vectors), with fewer columns or smaller tiles where the shape
// refuses them.
v1::Operator RecordedGemm(int64_t m, int64_t k, int64_t n,
                          const Platform& platform, SimBuilder& builder) {
  for (int64_t tile : {64, 32}) {
    for (int64_t cols : {8, 4, 2, 1}) {
      v1::Operator op = Gemm(m, k, n, tile, tile, tile, cols);
      if (ConstraintViolation(op, "npu2", platform.columns).empty() &&
          Builds(op, platform, builder)) {
        return op;
      }
    }
  }
  return Gemm(m, k, n, 64, 64, 64, 8);
}

v1::Operator RecordedGemv(int64_t m, int64_t k, const Platform& platform,
                          SimBuilder& builder) {
  for (int64_t cols : {8, 4, 2, 1}) {
    for (int64_t tin : {2, 1}) {
      int64_t tout = std::min<int64_t>(256, m / cols);
      while (tout > 32 && (m % (tout * cols) != 0)) tout /= 2;
      v1::Operator op = Gemv(m, k, cols, tin, std::max<int64_t>(tout, 32), 64);
      if (ConstraintViolation(op, "npu2", platform.columns).empty() &&
          Builds(op, platform, builder)) {
        return op;
      }
    }
  }
  return Gemv(m, k, 8, 2, 32, 64);
}

uint64_t Bytes(const v1::Buffer& b) {
  uint64_t n = DTypeSize(b.dtype());
  for (uint64_t e : b.shape()) n *= e;
  return n;
}

// One call running `op` once, on graph buffers of its own.
v1::Calls OneOperator(v1::Operator op) {
  v1::Calls calls;
  calls.set_format_version(1);
  *calls.add_operators() = std::move(op);
  v1::Timed* call = calls.add_calls();
  v1::Recording* rec = call->mutable_recording();
  rec->set_name("call");
  v1::Step* step = rec->add_steps();
  step->set_op(0);
  for (const v1::Buffer& b : calls.operators(0).buffers()) {
    v1::GraphBuffer* g = rec->add_buffers();
    g->set_name(b.name());
    g->set_nbytes(Bytes(b));
    step->add_refs()->set_buffer(b.name());
  }
  return calls;
}

struct Case {
  std::string name;  // "<model> <role>: <shape key>"
  v1::Calls calls;
};

// The largest buffer of the operators the calls' steps run, bytes.
uint64_t LargestBuffer(const v1::Calls& calls) {
  uint64_t most = 0;
  for (const v1::Timed& call : calls.calls()) {
    for (const v1::Step& step : call.recording().steps()) {
      for (const v1::Buffer& b : calls.operators(step.op()).buffers()) {
        most = std::max(most, Bytes(b));
      }
    }
  }
  return most;
}

struct Model {
  const char* name;
  int64_t hidden, intermediate, q_dim, kv_dim, vocab;
};

// Public configs (config.json on Hugging Face). Phi-3-mini's fused qkv and
// gate_up projections are taken as IRON runs them, one GEMM each part.
const Model kModels[] = {
    {"Llama-3.2-3B", 3072, 8192, 3072, 1024, 128256},
    {"Qwen2.5-0.5B", 896, 4864, 896, 128, 151936},
    {"Qwen2.5-1.5B", 1536, 8960, 1536, 256, 151936},
    {"Gemma-2-2B", 2304, 9216, 2048, 1024, 256000},
    {"Phi-3-mini", 3072, 8192, 3072, 3072, 32064},
    {"Llama-3.1-8B", 4096, 14336, 4096, 1024, 128256},
    {"Qwen2.5-7B", 3584, 18944, 3584, 512, 152064},
};

// The example's GEMM and GEMV shapes, each alone: its calls with only the
// steps that run the shape's operators. With `rules`, its recorded domains
// are dropped, so the catalogue's rules (OperatorDomain) give the spaces.
std::vector<Case> ExampleCases(const std::string& path, bool rules) {
  auto calls = LoadRecording(path);
  if (!calls.ok()) {
    std::fprintf(stderr, "example: %s\n", calls.status().ToString().c_str());
    return {};
  }
  if (rules) {
    for (v1::Operator& op : *calls->mutable_operators()) {
      for (v1::Tunable& t : *op.mutable_tunables()) t.clear_domain();
    }
  }
  auto shapes = Shapes(*calls, DefaultSearchSpace(), "npu2");
  if (!shapes.ok()) return {};
  std::vector<Case> out;
  for (const Shape& shape : *shapes) {
    if (shape.class_name != "GEMM" && shape.class_name != "GEMV") continue;
    std::set<uint32_t> ops;
    for (const ShapeMember& m : shape.members) ops.insert(m.op);
    v1::Calls one = *calls;
    for (v1::Timed& call : *one.mutable_calls()) {
      auto* steps = call.mutable_recording()->mutable_steps();
      google::protobuf::RepeatedPtrField<v1::Step> kept;
      for (const v1::Step& s : *steps) {
        if (ops.count(s.op())) *kept.Add() = s;
      }
      steps->Swap(&kept);
    }
    // Calls left with no step are dropped.
    auto* cs = one.mutable_calls();
    for (int i = cs->size() - 1; i >= 0; --i) {
      if (cs->Get(i).recording().steps_size() == 0) cs->DeleteSubrange(i, 1);
    }
    out.push_back({absl::StrCat("Llama-3.2-1B example: ", shape.key), one});
  }
  return out;
}

std::vector<Case> ModelCases(const Platform& platform, SimBuilder& builder,
                             std::set<std::string>& seen) {
  std::vector<Case> out;
  for (const Model& m : kModels) {
    struct Proj {
      const char* role;
      int64_t in, out;
    };
    const Proj projs[] = {
        {"q", m.hidden, m.q_dim},
        {"kv", m.hidden, m.kv_dim},
        {"o", m.q_dim, m.hidden},
        {"gate/up", m.hidden, m.intermediate},
        {"down", m.intermediate, m.hidden},
        {"lm head", m.hidden, m.vocab},
    };
    for (const Proj& p : projs) {
      v1::Operator gemv = RecordedGemv(p.out, p.in, platform, builder);
      std::string key = ShapeKey(gemv);
      if (seen.insert(key).second) {
        out.push_back({absl::StrCat(m.name, " ", p.role, ": ", key),
                       OneOperator(std::move(gemv))});
      }
      if (std::string(p.role) == "lm head") continue;  // the last row only
      v1::Operator gemm = RecordedGemm(kChunk, p.in, p.out, platform, builder);
      key = ShapeKey(gemm);
      if (seen.insert(key).second) {
        out.push_back({absl::StrCat(m.name, " ", p.role, ": ", key),
                       OneOperator(std::move(gemm))});
      }
    }
  }
  return out;
}

// ---------------------------------------------------------- ground truth

// A shape's true time at `setting`: what its trials' delta sums, per member
// and point, weighted.
struct Truth {
  std::vector<TunableValues> space;  // the settings that build, recorded first
  std::vector<double> us;            // true time of each
  int best = 0;                      // index of the fastest
  // The fastest whose output the judge admits (as the exhaustive run found,
  // against the recorded setting's output); `best` until that run.
  int admitted_best = 0;
  int64_t combinations = 0;  // Settings() before the builder's refusals
};

absl::StatusOr<double> TrueUs(const v1::Calls& calls, const Shape& shape,
                              const TunableValues& setting,
                              const Platform& platform) {
  double total = 0;
  for (const ShapeMember& m : shape.members) {
    v1::Operator op = WithSetting(calls.operators(m.op), setting);
    for (const WeightedValues& w : m.points) {
      sim::CallValues by_symbol;
      for (const v1::CallValue& v : op.values()) {
        auto it = w.values.find(v.name());
        if (it != w.values.end()) by_symbol[v.symbol()] = it->second;
      }
      absl::StatusOr<double> us = sim::ModelStepUs(op, platform, by_symbol);
      if (!us.ok()) return us.status();
      total += w.weight * *us;
    }
  }
  return total;
}

absl::StatusOr<Truth> GroundTruth(const v1::Calls& calls, const Shape& shape,
                                  const Platform& platform,
                                  SimBuilder& builder) {
  const v1::Operator& first = calls.operators(shape.members[0].op);
  auto settings =
      Settings(first, platform, shape.pinned, DefaultSearchSpace(), nullptr);
  if (!settings.ok()) return settings.status();
  Truth t;
  t.combinations = static_cast<int64_t>(settings->size());
  for (const TunableValues& s : *settings) {
    bool ok = true;
    for (const ShapeMember& m : shape.members) {
      if (!Builds(WithSetting(calls.operators(m.op), s), platform, builder)) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    absl::StatusOr<double> us = TrueUs(calls, shape, s, platform);
    if (!us.ok()) return us.status();
    t.space.push_back(s);
    t.us.push_back(*us);
    if (*us < t.us[t.best]) t.best = static_cast<int>(t.us.size()) - 1;
  }
  if (t.space.empty()) {
    return absl::FailedPreconditionError("the recorded setting does not build");
  }
  return t;
}

// ---------------------------------------------------------------- tuning

struct Run {
  TunableValues
      chosen;  // the taken setting's tunables (recorded where none gains)
  bool moved = false;   // another setting than the incumbent taken
  std::string profile;  // the tuned profile, as JSON
  Profile tuned;
  int64_t confirmations = 0, confirmed = 0, confirm_timed = 0;
  int64_t device_timed = 0;
  // Settings whose design was built (distinct 1-step builds: each case is
  // one operator), and rounds of the ranked search.
  int64_t settings_built = 0;
  int64_t rank_rounds = 0;
  // The recorded setting's step time and its reported noise.
  double recorded_us = 0;
  std::optional<double> recorded_noise_us;
  int64_t settings_timed = 0;
  int64_t screened = 0, screened_out = 0;  // raced: screened, left out
  double device_us = 0;
  int64_t runs = 0;
  // What became of `watch` (the true optimum): its trial, or "not timed".
  std::string watched;
  // The settings the judge (or anything but the builder) refused, by
  // SettingIdentity, with the reason.
  std::map<std::string, std::string> refused;
  // Each timed trial other than the recorded one: its setting, delta and
  // noise, to set against the true delta.
  struct Timed {
    TunableValues setting;
    double delta_us;
    double noise_us;
  };
  std::vector<Timed> timed;
};

struct Config {
  v1::Timing timing;
  int seeds = 5;     // stability
  int ci_runs = 10;  // ci
  // The example's shapes on the catalogue's domain rules rather than the
  // domains its recording declares (--example-rules).
  bool example_rules = false;
  // Rank before building (AutotuneOptions.rank); --no-rank for the search
  // without it.
  bool rank = true;
  // What the ranked searches learn is kept for the later shapes, as a
  // daemon keeps it (CostKnowledge); --no-knowledge: each shape alone.
  bool knowledge = true;
};

// What the ranked searches of this run learned, shape by shape.
CostKnowledge g_knowledge;

// Counts the distinct 1-step designs built: the settings built.
class CountingBuilder : public BuilderWrapper {
 public:
  using BuilderWrapper::BuilderWrapper;
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    if (request.steps == 1) built_.insert(RequestKey(request));
    return BuilderWrapper::Build(request);
  }
  absl::StatusOr<BuildOutcome> Await(
      const BuildRequest& request,
      const std::function<bool()>& cancelled) override {
    if (request.steps == 1) built_.insert(RequestKey(request));
    return BuilderWrapper::Await(request, cancelled);
  }
  int64_t built() const { return static_cast<int64_t>(built_.size()); }

 private:
  std::set<std::string> built_;
};

// Where a Tune starts from: the submitted profile (none: empty) and whether
// the cache may answer (there is none: every figure is timed anyway).
struct From {
  const Profile* profile = nullptr;
  bool remeasure = false;
};

// Settings judged and CPU references computed by every Autotune this run
// (the judge runs on a helper thread).
std::atomic<int64_t> g_judged{0};
std::atomic<int64_t> g_references{0};

// The default judge and reference, counted.
void CountJudging(AutotuneOptions& options) {
  options.judge =
      [](const v1::Operator& d, const v1::Operator& op, const SharedInputs& in,
         const std::map<std::string, std::string>& out,
         const CallValues& values, const ReferenceLookup& reference) {
        ++g_judged;
        return Judge(d, op, in, out, values, reference);
      };
  options.reference = [](const v1::Operator& op, const SharedInputs& in,
                         const CallValues& values) {
    ++g_references;
    return ReferenceOutputs(op, in, values);
  };
}

absl::StatusOr<Run> Tune(const v1::Calls& calls, const Config& config,
                         uint64_t seed, int exhaustive,
                         const TunableValues* watch = nullptr, From from = {}) {
  SimOptions sim_options;
  sim_options.seed = seed;
  auto sim = MakeSimDevice("sim:npu2", sim_options);
  if (!sim.ok()) return sim.status();
  MeteredDevice device(sim->get());
  SimBuilder sim_builder;
  CountingBuilder builder(&sim_builder);
  testing::LocalTuneContext deps(&device, &builder);
  if (config.knowledge) deps.set_costs(&g_knowledge);
  AutotuneOptions options;
  options.timing = ResolvedTiming(config.timing);
  options.seed = seed;
  options.exhaustive = exhaustive;
  // Timing every setting means the full Timing for each: no race.
  options.race = exhaustive < (1 << 30);
  options.rank = options.race && config.rank;
  options.remeasure = from.remeasure;
  CountJudging(options);
  const Profile empty;
  auto result =
      Autotune(calls, from.profile ? *from.profile : empty, options, deps);
  if (!result.ok()) return result.status();
  if (result->shapes.size() != 1) {
    return absl::InternalError(
        absl::StrCat(result->shapes.size(), " shapes tuned, expected 1"));
  }
  const ShapeResult& shape = result->shapes[0];
  Run run;
  run.chosen = shape.trials[shape.best].trial.tunables;
  run.moved = shape.best != shape.incumbent;
  run.profile = result->profile.ToJson();
  run.tuned = result->profile;
  run.confirmations = result->stats.confirmations;
  run.confirmed = result->stats.confirmed;
  run.confirm_timed = result->stats.confirm_timed;
  run.device_timed = result->stats.device_timed;
  run.settings_built = builder.built();
  run.rank_rounds = result->stats.rank_rounds;
  run.recorded_us = shape.recorded_us;
  run.recorded_noise_us = shape.recorded_noise_us;
  run.settings_timed = result->stats.settings_timed;
  run.screened = result->stats.screened;
  run.screened_out = result->stats.screened_out;
  run.device_us = device.device_us();
  run.runs = device.runs();
  for (size_t i = 1; i < shape.trials.size(); ++i) {
    const Comparison& t = shape.trials[i].trial;
    if (t.noise_us) run.timed.push_back({t.tunables, t.delta_us, *t.noise_us});
  }
  for (const ShapeTrial& t : shape.trials) {
    if (!t.trial.refused.empty()) {
      run.refused[SettingIdentity(t.trial.tunables)] = t.trial.refused;
    }
  }
  if (watch != nullptr) {
    run.watched = "not timed";
    for (const ShapeTrial& t : shape.trials) {
      if (SettingIdentity(t.trial.tunables) != SettingIdentity(*watch)) {
        continue;
      }
      run.watched = absl::StrCat(
          "timed: ", t.trial.delta_us, " us",
          t.trial.noise_us ? absl::StrCat(" +- ", *t.trial.noise_us) : "",
          t.trial.refused.empty()
              ? ""
              : absl::StrCat(", refused: ", t.trial.refused));
    }
  }
  return run;
}

// `calls` with every operator at `setting`.
v1::Calls AtSetting(v1::Calls calls, const TunableValues& setting) {
  for (v1::Operator& op : *calls.mutable_operators()) {
    if (op.class_name() != "GEMM" && op.class_name() != "GEMV") continue;
    op = WithSetting(op, setting);
  }
  return calls;
}

double TruthOf(const Truth& t, const TunableValues& s) {
  for (size_t i = 0; i < t.space.size(); ++i) {
    if (SettingIdentity(t.space[i]) == SettingIdentity(s)) return t.us[i];
  }
  return NAN;
}

// Trials' z-scores, z = (measured delta - true delta) / reported noise,
// against the gain threshold kGainZ.
struct ZTally {
  int64_t n = 0, below = 0, beyond = 0;  // z < -kGainZ; |z| > kGainZ
  double sum_z2 = 0;

  void Add(double z) {
    ++n;
    if (z < -kGainZ) ++below;
    if (std::abs(z) > kGainZ) ++beyond;
    sum_z2 += z * z;
  }
  // "z < -G in P%, |z| > G in Q%, rms z R", with a normal distribution's
  // figures beside them when `normal`.
  std::string Text(bool normal) const {
    const auto percent = [&](int64_t k) { return n ? 100.0 * k / n : 0.0; };
    return absl::StrFormat(
        "z < -%.0f in %.2f%%%s, |z| > %.0f in %.2f%%%s, rms z %.2f%s", kGainZ,
        percent(below), normal ? " (normal: 2.28%)" : "", kGainZ,
        percent(beyond), normal ? " (4.55%)" : "",
        n ? std::sqrt(sum_z2 / n) : 0.0, normal ? " (1)" : "");
  }
};

// ------------------------------------------------------------------ main

struct Parts {
  bool quality = false, cost = false, false_gains = false, stability = false;
  bool ci = false, coverage = false;
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}
// The fastest setting of `t` that the exhaustive run `all` did not see
// refused.
int AdmittedBest(const Truth& t, const Run& all) {
  int best = 0;
  for (size_t i = 0; i < t.space.size(); ++i) {
    if (all.refused.count(SettingIdentity(t.space[i]))) continue;
    if (t.us[i] < t.us[best]) best = static_cast<int>(i);
  }
  return best;
}

// A case's figures: its ground truth and the runs the parts need.
struct Row {
  std::string name;
  Truth truth;
  std::optional<Run> seed1, exhaustive, false_gain;
  std::vector<Run> seeds;
  std::vector<Run> ci;  // re-tunes from seed1's profile
  std::string error;
};

// One line of a row's figures, so a run cut short still tells them:
// whether the seeds agree, whether the false-gain run moved, the CI
// re-tunes that pass, the device time against the exhaustive run, and the
// coverage counts.
std::string RowSummary(const Row& r) {
  std::string out;
  if (!r.seeds.empty()) {
    bool same = true;
    for (const Run& s : r.seeds) {
      same = same &&
             SettingIdentity(s.chosen) == SettingIdentity(r.seeds[0].chosen);
    }
    absl::StrAppend(&out, "seeds ", same ? "agree" : "DIFFER", "; ");
  }
  if (r.false_gain) {
    absl::StrAppend(&out, "false gain ", r.false_gain->moved ? "MOVED" : "no",
                    "; ");
  }
  if (!r.ci.empty() && r.seed1) {
    int pass = 0;
    for (const Run& c : r.ci) pass += c.profile == r.seed1->profile;
    absl::StrAppend(&out, "ci ", pass, "/", r.ci.size(), "; ");
  }
  if (r.seed1 && r.exhaustive) {
    absl::StrAppend(
        &out, absl::StrFormat("device %.3f of exhaustive (%lld confirmation "
                              "figures of %lld); ",
                              r.seed1->device_us / r.exhaustive->device_us,
                              static_cast<long long>(r.seed1->confirm_timed),
                              static_cast<long long>(r.seed1->device_timed)));
  }
  if (r.seed1) {
    absl::StrAppend(&out, "built ", r.seed1->settings_built, "/",
                    r.truth.space.size(), " in ", r.seed1->rank_rounds,
                    " rounds; ");
    absl::StrAppend(
        &out, absl::StrFormat("gap to the admitted optimum %+.2f%%; ",
                              100 * (TruthOf(r.truth, r.seed1->chosen) /
                                         r.truth.us[r.truth.admitted_best] -
                                     1)));
  }
  if (r.exhaustive) {
    int n = 0, in = 0;
    for (const Run::Timed& t : r.exhaustive->timed) {
      if (!(t.noise_us > 0)) continue;
      ++n;
      in += std::abs(t.delta_us - (TruthOf(r.truth, t.setting) -
                                   r.truth.us[0])) <= 2 * t.noise_us;
    }
    absl::StrAppend(&out, "deltas covered ", in, "/", n, "; ");
  }
  return out;
}

// Tunes case `c` as `parts` need; once it gets past its ground truth,
// prints a progress line to stderr.
Row TuneCase(const Case& c, const Parts& parts, const Config& config,
             const Platform& platform, SimBuilder& builder,
             std::chrono::steady_clock::time_point start) {
  const auto t0 = std::chrono::steady_clock::now();
  Row row;
  row.name = c.name;
  auto shapes = Shapes(c.calls, DefaultSearchSpace(), "npu2");
  if (!shapes.ok() || shapes->size() != 1) {
    row.error =
        shapes.ok() ? "no single shape to search" : shapes.status().ToString();
    return row;
  }
  auto truth = GroundTruth(c.calls, (*shapes)[0], platform, builder);
  if (!truth.ok()) {
    row.error = truth.status().ToString();
    return row;
  }
  row.truth = *truth;
  auto fail = [&](const absl::Status& s) {
    if (row.error.empty()) row.error = s.ToString();
  };
  Truth& t = row.truth;
  t.admitted_best = t.best;
  // Every setting timed and judged: which the judge admits.
  if (parts.quality || parts.cost || parts.false_gains || parts.coverage) {
    auto r = Tune(c.calls, config, 1, 1 << 30, &t.space[t.best]);
    r.ok() ? void(row.exhaustive = *r) : fail(r.status());
    if (r.ok()) t.admitted_best = AdmittedBest(t, *r);
  }
  if (parts.quality || parts.cost || parts.stability || parts.ci ||
      parts.coverage) {
    auto r = Tune(c.calls, config, 1, kExhaustive, &t.space[t.best]);
    r.ok() ? void(row.seed1 = *r) : fail(r.status());
  }
  if (parts.false_gains) {
    v1::Calls best = AtSetting(c.calls, t.space[t.admitted_best]);
    auto r = Tune(best, config, 1, kExhaustive);
    r.ok() ? void(row.false_gain = *r) : fail(r.status());
  }
  if (parts.ci && row.seed1) {
    for (int k = 0; k < config.ci_runs; ++k) {
      auto r = Tune(c.calls, config, 1001 + k, kExhaustive, nullptr,
                    {&row.seed1->tuned, true});
      if (!r.ok()) {
        fail(r.status());
        break;
      }
      row.ci.push_back(*r);
    }
  }
  if (parts.stability && row.seed1) {
    row.seeds.push_back(*row.seed1);
    for (uint64_t seed = 2; seed <= static_cast<uint64_t>(config.seeds);
         ++seed) {
      auto r = Tune(c.calls, config, seed, kExhaustive);
      if (!r.ok()) {
        fail(r.status());
        break;
      }
      row.seeds.push_back(*r);
    }
  }
  std::fprintf(stderr, "  [%.0f s] %s: %zu settings build, %.1f s%s%s\n",
               Seconds(start), c.name.c_str(), row.truth.space.size(),
               Seconds(t0), row.error.empty() ? "" : " ERROR ",
               row.error.c_str());
  std::fprintf(stderr, "    %s\n", RowSummary(row).c_str());
  return row;
}

// 1. quality: the chosen settings against the true optimum.
void PrintQuality(const std::vector<Row>& rows) {
  std::printf("\n1. quality: chosen setting's true time / true optimum\n");
  int n = 0, within = 0, optimal = 0, within_built = 0, judged_out = 0;
  std::vector<std::pair<double, const Row*>> gaps;
  double recorded_gap = 0, mean = 0;
  for (const Row& r : rows) {
    if (!r.seed1) continue;
    const double built = r.truth.us[r.truth.best];
    const double opt = r.truth.us[r.truth.admitted_best];
    const double got = TruthOf(r.truth, r.seed1->chosen);
    const double gap = got / opt - 1;
    ++n;
    if (gap <= 0.01) ++within;
    if (gap <= 1e-9) ++optimal;
    if (got <= 1.01 * built) ++within_built;
    if (r.truth.admitted_best != r.truth.best) ++judged_out;
    recorded_gap += r.truth.us[0] / opt - 1;
    mean += gap;
    gaps.push_back({gap, &r});
  }
  std::sort(gaps.begin(), gaps.end(),
            [](auto& a, auto& b) { return a.first > b.first; });
  std::printf(
      "  optimum over every setting that builds: %d of %d shapes within "
      "1%% (%.1f%%, goal >= 95%%)\n",
      within_built, n, n ? 100.0 * within_built / n : 0.0);
  std::printf(
      "    (in %d shapes that optimum's output fails the accuracy gate "
      "against the recorded one's, so no search may take it)\n",
      judged_out);
  std::printf(
      "  optimum over the settings that build and the judge admits: %d of "
      "%d within 1%% (%.1f%%), %d exactly optimal\n",
      within, n, n ? 100.0 * within / n : 0.0, optimal);
  if (n > 0) {
    std::printf(
        "  mean gap to the admitted optimum %.2f%%; the recorded "
        "settings' was %.2f%%\n",
        100 * mean / n, 100 * recorded_gap / n);
  }
  std::printf(
      "  worst shapes (gap to the admitted optimum; true us per step):\n");
  for (size_t i = 0; i < gaps.size() && i < 6; ++i) {
    const Row& r = *gaps[i].second;
    const Truth& t = r.truth;
    std::printf(
        "    %+6.2f%%  %s\n      chosen   %s  %.2f us (recorded %.2f "
        "us)\n      admitted %s  %.2f us\n",
        100 * gaps[i].first, r.name.c_str(),
        SettingText(r.seed1->chosen).c_str(), TruthOf(t, r.seed1->chosen),
        t.us[0], SettingText(t.space[t.admitted_best]).c_str(),
        t.us[t.admitted_best]);
    if (t.admitted_best != t.best) {
      std::printf("      built    %s  %.2f us: %s\n",
                  SettingText(t.space[t.best]).c_str(), t.us[t.best],
                  r.seed1->watched.c_str());
    }
  }
}

// Noise calibration over every exhaustive trial, z = (measured delta -
// true delta) / reported noise: over every trial, and over the near ties
// that decide choices (true delta within 1% of the recorded setting's
// time).
void PrintNoiseCalibration(const std::vector<Row>& rows) {
  ZTally all, near;
  for (const Row& r : rows) {
    if (!r.exhaustive) continue;
    for (const Run::Timed& t : r.exhaustive->timed) {
      if (!(t.noise_us > 0)) continue;
      const double truth = TruthOf(r.truth, t.setting) - r.truth.us[0];
      const double z = (t.delta_us - truth) / t.noise_us;
      if (std::getenv("BENCH_DEBUG")) {
        std::fprintf(stderr, "%s | %s: delta %.3f true %.3f noise %.3f\n",
                     r.name.substr(0, 30).c_str(),
                     SettingText(t.setting).c_str(), t.delta_us, truth,
                     t.noise_us);
      }
      all.Add(z);
      if (std::abs(truth) <= 0.01 * r.truth.us[0]) near.Add(z);
    }
  }
  std::printf(
      "  noise calibration over %lld exhaustive trials, z = (delta - true "
      "delta) / noise: %s\n",
      static_cast<long long>(all.n), all.Text(true).c_str());
  std::printf(
      "  the same over the %lld trials within 1%% of the recorded "
      "setting's time: %s\n",
      static_cast<long long>(near.n), near.Text(false).c_str());
}

// 2. cost: the default search against timing every setting, and the
// noise calibration.
void PrintCost(const std::vector<Row>& rows) {
  std::printf(
      "\n2. cost: the default search (descent above %d settings) "
      "against timing every setting, same run\n",
      kExhaustive);
  int n = 0, ex_within = 0;
  int64_t timed = 0, space = 0, ex_timed = 0;
  double dev = 0, ex_dev = 0;
  std::vector<double> ratios;
  int64_t confirmations = 0, confirmed = 0, confirm_timed = 0, dev_timed = 0;
  int64_t screened = 0, screened_out = 0, built = 0, ex_built = 0;
  int64_t rounds = 0;
  for (const Row& r : rows) {
    if (!r.seed1 || !r.exhaustive) continue;
    ++n;
    built += r.seed1->settings_built;
    ex_built += r.exhaustive->settings_built;
    rounds += r.seed1->rank_rounds;
    screened += r.seed1->screened;
    screened_out += r.seed1->screened_out;
    confirmations += r.seed1->confirmations;
    confirmed += r.seed1->confirmed;
    confirm_timed += r.seed1->confirm_timed;
    dev_timed += r.seed1->device_timed;
    timed += r.seed1->settings_timed;
    space += static_cast<int64_t>(r.truth.space.size());
    ex_timed += r.exhaustive->settings_timed;
    dev += r.seed1->device_us;
    ex_dev += r.exhaustive->device_us;
    ratios.push_back(r.seed1->device_us / r.exhaustive->device_us);
    if (TruthOf(r.truth, r.exhaustive->chosen) <=
        1.01 * r.truth.us[r.truth.admitted_best]) {
      ++ex_within;
    }
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("  %d shapes, %lld settings that build in all\n", n,
              static_cast<long long>(space));
  std::printf(
      "  settings timed: default %lld (%.1f%% of the space), "
      "exhaustive %lld (%.1f%%)\n",
      static_cast<long long>(timed), 100.0 * timed / space,
      static_cast<long long>(ex_timed), 100.0 * ex_timed / space);
  std::printf(
      "  settings built: default %lld (%.3f of the settings that build; "
      "%lld ranked rounds), exhaustive %lld\n",
      static_cast<long long>(built), static_cast<double>(built) / space,
      static_cast<long long>(rounds), static_cast<long long>(ex_built));
  std::printf(
      "  raced: %lld settings screened at the short Timing, %lld of them "
      "given no full Timing\n",
      static_cast<long long>(screened), static_cast<long long>(screened_out));
  std::printf(
      "  device time: default %.2f s, exhaustive %.2f s: ratio "
      "%.3f (per shape: median %.3f, min %.3f, max %.3f)\n",
      dev / 1e6, ex_dev / 1e6, dev / ex_dev,
      ratios.empty() ? 0 : ratios[ratios.size() / 2],
      ratios.empty() ? 0 : ratios.front(), ratios.empty() ? 0 : ratios.back());
  std::printf(
      "  confirmation: %lld challengers re-timed against the incumbent, %lld "
      "won again; %lld of the default search's %lld device figures (%.1f%%) "
      "were confirmations\n",
      static_cast<long long>(confirmations), static_cast<long long>(confirmed),
      static_cast<long long>(confirm_timed), static_cast<long long>(dev_timed),
      dev_timed ? 100.0 * confirm_timed / dev_timed : 0.0);
  std::printf(
      "  exhaustive choices within 1%% of the admitted optimum: %d of %d\n",
      ex_within, n);
  std::printf(
      "  judging (every search this run): %lld settings judged, %lld CPU "
      "references computed\n",
      static_cast<long long>(g_judged.load()),
      static_cast<long long>(g_references.load()));
  PrintNoiseCalibration(rows);
}

// 3. false gains: cases whose recorded setting is the optimum.
void PrintFalseGains(const std::vector<Row>& rows) {
  std::printf(
      "\n3. false gains: the recorded setting is the true optimum; "
      "another taken\n");
  int n = 0, moved = 0, slower = 0, tied_shapes = 0;
  for (const Row& r : rows) {
    if (!r.false_gain) continue;
    ++n;
    const double opt = r.truth.us[r.truth.admitted_best];
    int ties = 0;  // other settings within 0.1% of the optimum
    for (size_t i = 0; i < r.truth.space.size(); ++i) {
      if (static_cast<int>(i) != r.truth.admitted_best &&
          r.truth.us[i] <= 1.001 * opt) {
        ++ties;
      }
    }
    if (ties > 0) ++tied_shapes;
    if (!r.false_gain->moved) continue;
    ++moved;
    const double got = TruthOf(r.truth, r.false_gain->chosen);
    if (got > 1.001 * opt) ++slower;
    std::printf(
        "    %s: took %s (%+.3f%% true; %d settings tie the "
        "optimum within 0.1%%)\n",
        r.name.c_str(), SettingText(r.false_gain->chosen).c_str(),
        100 * (got / opt - 1), ties);
  }
  std::printf(
      "  %d of %d shapes took another setting (%.1f%%, goal <= "
      "1%%); %d of them truly slower by > 0.1%%\n",
      moved, n, n ? 100.0 * moved / n : 0.0, slower);
  std::printf(
      "  (%d of %d shapes have other settings within 0.1%% of the "
      "optimum)\n",
      tied_shapes, n);
}

// 4. stability: the choices of 5 seeds.
void PrintStability(const std::vector<Row>& rows, int seeds) {
  std::printf("\n4. stability: %d seeds (sim noise and inputs) per shape\n",
              seeds);
  int n = 0, all_same = 0, pairs = 0, agree = 0, all_near = 0;
  int agree_tie = 0, all_tie = 0;
  for (const Row& r : rows) {
    if (static_cast<int>(r.seeds.size()) != seeds) continue;
    ++n;
    bool same = true, near = true, tie = true;
    const double opt = r.truth.us[r.truth.best];
    for (size_t i = 0; i < r.seeds.size(); ++i) {
      if (TruthOf(r.truth, r.seeds[i].chosen) >
          1.01 * r.truth.us[r.truth.admitted_best]) {
        near = false;
      }
      for (size_t j = i + 1; j < r.seeds.size(); ++j) {
        ++pairs;
        const double a = TruthOf(r.truth, r.seeds[i].chosen);
        const double b = TruthOf(r.truth, r.seeds[j].chosen);
        if (std::abs(a - b) <= 0.001 * std::min(a, b)) {
          ++agree_tie;
        } else {
          tie = false;
        }
        if (SettingIdentity(r.seeds[i].chosen) ==
            SettingIdentity(r.seeds[j].chosen)) {
          ++agree;
        } else {
          same = false;
        }
      }
    }
    if (same) ++all_same;
    if (tie) ++all_tie;
    if (near) ++all_near;
    if (!same) {
      std::printf("    differ: %s:", r.name.c_str());
      for (const Run& s : r.seeds) {
        std::printf(" [%s %+.1f%%]", SettingText(s.chosen).c_str(),
                    100 * (TruthOf(r.truth, s.chosen) / opt - 1));
      }
      std::printf("\n");
    }
  }
  std::printf(
      "  %d shapes: identical choice under all %d seeds %d (%.1f%%, goal >= "
      "90%%); pairwise agreement %d of %d (%.1f%%)\n",
      n, seeds, all_same, n ? 100.0 * all_same / n : 0.0, agree, pairs,
      pairs ? 100.0 * agree / pairs : 0.0);
  std::printf(
      "  counting settings whose true times agree within 0.1%% as the "
      "same: all agree %d (%.1f%%); pairwise %d of %d (%.1f%%)\n",
      all_tie, n ? 100.0 * all_tie / n : 0.0, agree_tie, pairs,
      pairs ? 100.0 * agree_tie / pairs : 0.0);
  std::printf("  all choices within 1%% of the admitted optimum: %d of %d\n",
              all_near, n);
}

// 5. CI: re-tunes of the tuned profile with fresh figures.
void PrintCi(const std::vector<Row>& rows) {
  std::printf(
      "\n5. CI re-tune: seed 1's profile tuned again, remeasured, with "
      "another seed\n");
  int64_t runs = 0, pass = 0;
  int shapes = 0, all_pass = 0;
  for (const Row& r : rows) {
    if (r.ci.empty() || !r.seed1) continue;
    ++shapes;
    int own = 0;
    for (const Run& c : r.ci) {
      ++runs;
      if (c.profile == r.seed1->profile) {
        ++pass;
        ++own;
      }
    }
    if (own == static_cast<int>(r.ci.size())) {
      ++all_pass;
    } else {
      std::printf(
          "    %s: %d of %zu re-tunes changed the profile:", r.name.c_str(),
          static_cast<int>(r.ci.size()) - own, r.ci.size());
      for (const Run& c : r.ci) {
        if (c.profile != r.seed1->profile) {
          std::printf(" [%s %+.2f%%]", SettingText(c.chosen).c_str(),
                      100 * (TruthOf(r.truth, c.chosen) /
                                 TruthOf(r.truth, r.seed1->chosen) -
                             1));
        }
      }
      std::printf(" (from %s)\n", SettingText(r.seed1->chosen).c_str());
    }
  }
  std::printf(
      "  --check would pass in %lld of %lld re-tunes (%.1f%%, goal >= 95%%); "
      "every re-tune passes for %d of %d shapes\n",
      static_cast<long long>(pass), static_cast<long long>(runs),
      runs ? 100.0 * pass / runs : 0.0, all_pass, shapes);
}

// 6. coverage of +-2 reported noises.
void PrintCoverage(const std::vector<Row>& rows) {
  std::printf("\n6. coverage: |figure - truth| <= 2 reported noises\n");
  int64_t n = 0, in = 0, an = 0, ain = 0;
  for (const Row& r : rows) {
    if (r.exhaustive) {
      for (const Run::Timed& t : r.exhaustive->timed) {
        if (!(t.noise_us > 0)) continue;
        const double truth = TruthOf(r.truth, t.setting) - r.truth.us[0];
        ++n;
        if (std::abs(t.delta_us - truth) <= 2 * t.noise_us) ++in;
      }
    }
    std::vector<const Run*> runs;
    if (r.exhaustive) runs.push_back(&*r.exhaustive);
    if (r.seed1) runs.push_back(&*r.seed1);
    for (const Run& s : r.seeds) runs.push_back(&s);
    for (const Run& s : r.ci) runs.push_back(&s);
    for (const Run* s : runs) {
      if (!s->recorded_noise_us) continue;
      ++an;
      if (std::abs(s->recorded_us - r.truth.us[0]) <=
          2 * *s->recorded_noise_us) {
        ++ain;
      }
    }
  }
  std::printf(
      "  deltas (every exhaustive trial): %lld of %lld (%.1f%%, goal 90 to "
      "98%%)\n",
      static_cast<long long>(in), static_cast<long long>(n),
      n ? 100.0 * in / n : 0.0);
  std::printf(
      "  absolute: the recorded setting's step time over a run's batches, "
      "every run: %lld of %lld (%.1f%%, goal 90 to 98%%)\n",
      static_cast<long long>(ain), static_cast<long long>(an),
      an ? 100.0 * ain / an : 0.0);
}

// spaces: each of the example's shapes' settings on sim:npu2 (Settings in
// the default space: after constraints and resolved-design dedup), with the
// domains its recording declares and with the catalogue's rules alone.
int Spaces(const std::string& example) {
  auto calls = LoadRecording(example);
  if (!calls.ok()) {
    std::fprintf(stderr, "example: %s\n", calls.status().ToString().c_str());
    return 1;
  }
  v1::Calls open = *calls;
  for (v1::Operator& op : *open.mutable_operators()) {
    for (v1::Tunable& t : *op.mutable_tunables()) t.clear_domain();
  }
  auto sim = MakeSimDevice("sim:npu2");
  const Platform platform = *(*sim)->GetPlatform();
  auto shapes = Shapes(*calls, DefaultSearchSpace(), "npu2");
  if (!shapes.ok()) return 1;
  std::printf(
      "spaces: the example's settings per shape on sim:npu2 "
      "(recorded domains -> the catalogue's rules)\n");
  int64_t total[2] = {0, 0};
  for (const Shape& shape : *shapes) {
    int64_t n[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const v1::Operator& op =
          (k == 0 ? *calls : open)
              .operators(static_cast<int>(shape.members[0].op));
      auto settings =
          Settings(op, platform, shape.pinned, DefaultSearchSpace());
      n[k] = settings.ok() ? static_cast<int64_t>(settings->size()) : -1;
      total[k] += std::max<int64_t>(n[k], 0);
    }
    std::printf("  %5lld -> %5lld  %s\n", static_cast<long long>(n[0]),
                static_cast<long long>(n[1]), shape.key.c_str());
  }
  std::printf("  %5lld -> %5lld  over %zu shapes\n",
              static_cast<long long>(total[0]),
              static_cast<long long>(total[1]), shapes->size());
  return 0;
}

int Main(const Parts& parts, int max_shapes, uint64_t max_mib,
         const Config& config, const std::string& example,
         const std::string& only, std::pair<int, int> part) {
  const auto start = std::chrono::steady_clock::now();
  auto sim = MakeSimDevice("sim:npu2");
  const Platform platform = *(*sim)->GetPlatform();
  SimBuilder builder;

  std::vector<Case> cases = ExampleCases(example, config.example_rules);
  std::set<std::string> seen;
  for (const Case& c : cases) seen.insert(c.name.substr(c.name.find(": ") + 2));
  for (Case& c : ModelCases(platform, builder, seen)) {
    cases.push_back(std::move(c));
  }
  int too_big = 0;
  std::erase_if(cases, [&](const Case& c) {
    const bool big = LargestBuffer(c.calls) > max_mib * (uint64_t{1} << 20);
    too_big += big;
    return big;
  });
  if (!only.empty()) {
    std::erase_if(cases, [&](const Case& c) {
      return c.name.find(only) == std::string::npos;
    });
  }
  if (max_shapes >= 0 && static_cast<int>(cases.size()) > max_shapes) {
    cases.resize(max_shapes);
  }
  if (part.second > 1) {
    std::vector<Case> mine;
    for (size_t i = 0; i < cases.size(); ++i) {
      if (static_cast<int>(i) % part.second == part.first) {
        mine.push_back(std::move(cases[i]));
      }
    }
    cases = std::move(mine);
  }
  std::printf(
      "autotune_bench: %zu GEMM/GEMV shapes on sim:npu2 (virtual clock, "
      "default noise), Timing rounds %d calls %d, repeats 9, no kernel "
      "cycles\n",
      cases.size(), config.timing.rounds(), config.timing.calls());
  std::printf(
      "  (%d shapes with a buffer above %llu MiB left out: "
      "--max-mib; each batch holds 8 settings x 10 steps of it)\n",
      too_big, static_cast<unsigned long long>(max_mib));

  std::vector<Row> rows;
  for (const Case& c : cases) {
    rows.push_back(TuneCase(c, parts, config, platform, builder, start));
  }

  int errors = 0;
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      ++errors;
      std::printf("  error: %s: %s\n", r.name.c_str(), r.error.c_str());
    }
  }

  if (parts.quality) PrintQuality(rows);
  if (parts.cost) PrintCost(rows);
  if (parts.false_gains) PrintFalseGains(rows);
  if (parts.stability) PrintStability(rows, config.seeds);
  if (parts.ci) PrintCi(rows);
  if (parts.coverage) PrintCoverage(rows);
  std::printf(
      "\nwall time %.1f s%s\n", Seconds(start),
      errors ? absl::StrCat(", ", errors, " shapes failed").c_str() : "");
  return 0;
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  // Keep freed images' buffers in the heap: every batch loads images of the
  // same sizes, and fresh mmaps fault every page in again.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  irontune::Parts parts;
  int max_shapes = -1;
  uint64_t max_mib = 16;
  irontune::Config config;
  config.timing.set_rounds(8);
  config.timing.set_calls(50);
  std::string only;
  std::pair<int, int> part = {0, 1};
  std::string example = (std::filesystem::path(IRONTUNE_SOURCE_DIR) /
                         "examples" / "llama-3.2-1b.rec")
                            .string();
  bool any = false, spaces = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "quality") {
      parts.quality = any = true;
    } else if (a == "cost") {
      parts.cost = any = true;
    } else if (a == "false-gains") {
      parts.false_gains = any = true;
    } else if (a == "stability") {
      parts.stability = any = true;
    } else if (a == "ci") {
      parts.ci = any = true;
    } else if (a == "coverage") {
      parts.coverage = any = true;
    } else if (a == "all") {
      parts = {true, true, true, true, true, true};
      any = true;
    } else if (a == "--seeds") {
      config.seeds = std::max(2, std::atoi(next().c_str()));
    } else if (a == "--ci-runs") {
      config.ci_runs = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--shapes") {
      max_shapes = std::atoi(next().c_str());
    } else if (a == "--max-mib") {
      max_mib = std::strtoull(next().c_str(), nullptr, 10);
    } else if (a == "--rounds") {
      config.timing.set_rounds(std::atoi(next().c_str()));
    } else if (a == "--calls") {
      config.timing.set_calls(std::atoi(next().c_str()));
    } else if (a == "--example") {
      example = next();
    } else if (a == "--example-rules") {
      config.example_rules = true;
    } else if (a == "--no-rank") {
      config.rank = false;
    } else if (a == "--no-knowledge") {
      config.knowledge = false;
    } else if (a == "spaces") {
      spaces = true;
    } else if (a == "--verbose") {
      spdlog::set_level(spdlog::level::info);  // the searches' log lines
    } else if (a == "--only") {
      only = next();
    } else if (a == "--part") {
      // I/N: every N-th shape from the I-th (0-based), to split a run.
      const std::string v = next();
      part = {std::atoi(v.c_str()),
              std::max(1, std::atoi(v.substr(v.find('/') + 1).c_str()))};
    } else {
      std::fprintf(
          stderr,
          "usage: autotune_bench [quality|cost|false-gains|"
          "stability|ci|coverage|all]... [--shapes N] [--seeds S] "
          "[--ci-runs N] [--max-mib M] [--rounds R] [--calls C] "
          "[--example PATH] [--example-rules] [--no-rank] [--no-knowledge] "
          "[--only TEXT] [--part I/N] [--verbose]\n");
      return 2;
    }
  }
  if (spaces && !any) return irontune::Spaces(example);
  if (spaces) irontune::Spaces(example);
  if (!any) parts = {true, true, true, true, true, true};
  return irontune::Main(parts, max_shapes, max_mib, config, example, only,
                        part);
}
