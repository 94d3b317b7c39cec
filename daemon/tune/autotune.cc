#include "daemon/tune/autotune.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/base/sha256.h"
#include "common/shape.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/store/cache.h"
#include "daemon/tune/measure.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace irontune {
namespace {

// Verdict texts in the cache's verdict store.
constexpr char kFits[] = "fits";
constexpr char kRefusedPrefix[] = "refused: ";
constexpr size_t kRefusedPrefixSize = sizeof(kRefusedPrefix) - 1;
constexpr char kAdmitted[] = "admitted";

// What one search needs besides the shape, for the helpers below.
struct Ctx {
  const v1::Calls& calls;
  const Platform& platform;
  const AutotuneOptions& options;
  v1::Packaging packaging;
  const KernelCycles& cycles;
  const AutotuneDeps& deps;
  TuneStats* stats;
  int shape_index = 0;
  // Seeded inputs shared by every Measure of the search.
  std::shared_ptr<InputCache> inputs = std::make_shared<InputCache>();

  void Log(const std::string& line) const {
    spdlog::info("autotune: {}", line);
    if (deps.progress != nullptr) deps.progress->OnLog(line);
  }
};

const v1::Operator& OpOf(const Ctx& ctx, const ShapeMember& m) {
  return ctx.calls.operators(static_cast<int>(m.op));
}

// The design part of `op`: what a build follows.
v1::Operator DesignOf(const v1::Operator& op) {
  v1::Operator out = op;
  out.clear_pinned();
  out.clear_tolerance();
  for (v1::Tunable& t : *out.mutable_tunables()) t.clear_domain();
  return out;
}

std::string Serialized(const v1::Operator& op) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  op.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

std::string ValuesText(const CallValues& values) {
  std::string out;
  for (const auto& [name, value] : values) {
    absl::StrAppend(&out, name.size(), ":", name, "=", value, ";");
  }
  return out;
}

// Where a judgement of `op`'s output against `default_op`'s is kept.
VerdictKey JudgementKey(const Ctx& ctx, const v1::Operator& default_op,
                        const v1::Operator& op,
                        const std::string& default_output,
                        const std::string& output, const CallValues& values,
                        const std::map<std::string, std::string>& inputs) {
  std::string text = absl::StrCat(
      "judge\n", RecipeKeyHash(default_op, ctx.platform, ctx.packaging), "\n",
      RecipeKeyHash(op, ctx.platform, ctx.packaging), "\n", default_output,
      "\n", output, "\n", ValuesText(values), "\n", ctx.options.seed, "\n",
      Sha256Hex(op.tolerance().SerializeAsString()));
  for (const auto& [name, bytes] : inputs) {
    absl::StrAppend(&text, "\n", name, "=", Sha256Hex(bytes));
  }
  return VerdictKey{Sha256Hex(text),
                    absl::StrCat("judge:", ctx.options.judge_id)};
}

// Why setting `i`'s output may not replace the recorded setting's at one
// point of one member; "" where it may.
absl::StatusOr<std::string> JudgeOutput(const Ctx& ctx,
                                        const v1::Operator& default_op,
                                        const v1::Operator& op,
                                        const MeasurePlan& request,
                                        const MeasureOutcome& result, int i) {
  const std::string& want = result.measurements.at(0).output();
  const std::string& got = result.measurements.at(i).output();
  if (want == got) return std::string();
  const VerdictKey key = JudgementKey(ctx, default_op, op, want, got,
                                      request.values, request.inputs);
  Cache* cache = ctx.deps.cache;
  if (cache != nullptr) {
    ASSIGN_OR_RETURN(std::optional<std::string> kept, cache->GetVerdict(key));
    if (kept) {
      if (*kept == kAdmitted) return std::string();
      if (kept->starts_with(kRefusedPrefix)) {
        return kept->substr(kRefusedPrefixSize);
      }
    }
  }
  auto def = result.outputs.find(0);
  auto own = result.outputs.find(i);
  if (def == result.outputs.end() || own == result.outputs.end()) {
    // A figure from the cache carries its output's digest, not the output:
    // with no judgement kept, it cannot be judged. Refused, conservatively.
    return std::string(
        "its output differs from the recorded setting's and, its figure "
        "coming from the cache, there is no output to judge (remeasure to "
        "judge it)");
  }
  const JudgeFn judge =
      ctx.options.judge ? ctx.options.judge : BitIdenticalJudge();
  std::optional<std::string> why = judge(default_op, op, def->second.inputs,
                                         own->second.written, request.values);
  if (cache != nullptr) {
    RETURN_IF_ERROR(
        cache->PutVerdict(key, why ? absl::StrCat(kRefusedPrefix, *why)
                                   : std::string(kAdmitted)));
  }
  return why.value_or("");
}

std::optional<double> Quadrature(const std::vector<std::optional<double>>& v) {
  double sum = 0;
  for (const std::optional<double>& x : v) {
    if (!x) return std::nullopt;
    sum += *x * *x;
  }
  return std::sqrt(sum);
}

// Times `todo` (the recorded setting first) at every member's every point;
// returns their trials (in `todo` order) and the recorded setting's time
// (summed over members, weighted over points).
absl::StatusOr<std::pair<std::vector<ShapeTrial>, double>> TimeSettings(
    const Ctx& ctx, const Shape& shape, const std::vector<TunableValues>& todo) {
  const size_t n = todo.size();
  const size_t members = shape.members.size();
  std::vector<ShapeTrial> trials(n);
  std::vector<std::vector<std::vector<std::optional<double>>>> noises(
      n, std::vector<std::vector<std::optional<double>>>(members));
  for (size_t i = 0; i < n; ++i) {
    trials[i].trial.tunables = todo[i];
    trials[i].member_delta_us.assign(members, 0.0);
    trials[i].member_noise_us.assign(members, std::nullopt);
  }
  double recorded_us = 0;
  MeasureDeps mdeps;
  mdeps.device = ctx.deps.device;
  mdeps.builder = ctx.deps.builder;
  mdeps.cache = ctx.deps.cache;
  mdeps.inputs = ctx.inputs.get();
  mdeps.env = ctx.deps.env;
  mdeps.env.cancelled = ctx.deps.cancelled;
  mdeps.env.log = [&ctx](const std::string& line) { ctx.Log(line); };
  for (size_t m = 0; m < members; ++m) {
    const ShapeMember& member = shape.members[m];
    const v1::Operator& op = OpOf(ctx, member);
    MeasurePlan request;
    for (const TunableValues& s : todo)
      request.settings.push_back(WithSetting(op, s));
    request.timing = ctx.options.timing;
    request.repeats = ctx.options.repeats;
    request.packaging = ctx.packaging;
    request.inputs = member.inputs;
    request.remeasure = ctx.options.remeasure;
    request.seed = ctx.options.seed;
    for (const WeightedValues& point : member.points) {
      if (ctx.deps.cancelled && ctx.deps.cancelled()) {
        return absl::CancelledError("autotune cancelled");
      }
      request.values = point.values;
      ASSIGN_OR_RETURN(MeasureOutcome result, Measure(request, mdeps));
      ++ctx.stats->measure_calls;
      ctx.stats->cache_hits += static_cast<int64_t>(result.cached.size());
      ctx.stats->device_timed += static_cast<int64_t>(
          result.measurements.size() - result.cached.size());
      const double w = point.weight;
      recorded_us += w * result.measurements.at(0).t_step_us();
      for (size_t i = 0; i < n; ++i) {
        Comparison& trial = trials[i].trial;
        auto it = result.measurements.find(static_cast<int>(i));
        if (it == result.measurements.end()) {
          if (trial.refused.empty()) {
            auto why = result.refused.find(static_cast<int>(i));
            trial.refused = why != result.refused.end()
                                ? absl::StrCat("does not build: ", why->second)
                                : "not measured";
          }
          noises[i][m].push_back(std::nullopt);
          continue;
        }
        const Delta d = AgainstDefault(it->second);
        trials[i].member_delta_us[m] += w * d.delta_us;
        noises[i][m].push_back(
            d.noise_us ? std::optional<double>(w * *d.noise_us) : std::nullopt);
        if (i == 0 || !trial.refused.empty()) continue;
        ASSIGN_OR_RETURN(
            std::string why,
            JudgeOutput(ctx, request.settings[0], request.settings[i], request,
                        result, static_cast<int>(i)));
        if (!why.empty()) trial.refused = std::move(why);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    ShapeTrial& t = trials[i];
    t.trial.delta_us = 0;
    for (size_t m = 0; m < members; ++m) {
      t.member_noise_us[m] = Quadrature(noises[i][m]);
      t.trial.delta_us += t.member_delta_us[m];
    }
    t.trial.noise_us = Quadrature(t.member_noise_us);
  }
  return std::make_pair(std::move(trials), recorded_us);
}

// The least step time `s` could take, summed and weighted as a delta is;
// nullopt where any member or point has no bound.
std::optional<double> ShapeLeastUs(const Ctx& ctx, const Shape& shape,
                                   const TunableValues& s) {
  double sum = 0;
  for (const ShapeMember& m : shape.members) {
    const v1::Operator op = WithSetting(OpOf(ctx, m), s);
    for (const WeightedValues& p : m.points) {
      std::optional<double> least =
          LeastUs(op, p.values, ctx.cycles, ctx.platform.generation,
                  ctx.platform.columns, ctx.platform.core_mhz);
      if (!least) return std::nullopt;
      sum += p.weight * *least;
    }
  }
  return sum;
}

bool DimsMatch(const std::vector<v1::Field>& entry_dims,
               const std::vector<v1::Field>& shape_dims) {
  for (const v1::Field& d : entry_dims) {
    auto it =
        std::find_if(shape_dims.begin(), shape_dims.end(),
                     [&](const v1::Field& s) { return s.name() == d.name(); });
    if (it == shape_dims.end() || !ValuesEqual(it->value(), d.value())) {
      return false;
    }
  }
  return true;
}

// `fields` with `over`'s fields replacing those of the same name, new names
// appended.
void Overlay(std::vector<v1::Field>& fields,
             const google::protobuf::RepeatedPtrField<v1::Field>& over) {
  for (const v1::Field& f : over) {
    auto it =
        std::find_if(fields.begin(), fields.end(),
                     [&](const v1::Field& g) { return g.name() == f.name(); });
    if (it == fields.end()) {
      fields.push_back(f);
    } else {
      *it = f;
    }
  }
}

}  // namespace

JudgeFn BitIdenticalJudge() {
  return [](const v1::Operator&, const v1::Operator&,
            const std::map<std::string, std::string>&,
            const std::map<std::string, std::string>&,
            const CallValues&) -> std::optional<std::string> {
    return std::string("only a bit-identical output is admitted");
  };
}

std::string RecipeKeyHash(const v1::Operator& op, const Platform& platform,
                          v1::Packaging packaging) {
  return Sha256Hex(absl::StrCat("recipe\n", platform.generation, "\n",
                                static_cast<int>(packaging), "\n",
                                Serialized(DesignOf(op))));
}

absl::StatusOr<std::vector<Shape>> Shapes(const v1::Calls& calls,
                                          const SearchSpace& space,
                                          const std::string& generation) {
  std::map<uint32_t, int64_t> steps;
  for (const v1::Timed& call : calls.calls()) {
    for (const v1::Step& step : call.recording().steps()) ++steps[step.op()];
  }
  std::vector<Shape> found;
  std::unordered_map<std::string, size_t> by_key;
  std::set<uint32_t> seen;
  for (int c = 0; c < calls.calls_size(); ++c) {
    const v1::Timed& call = calls.calls(c);
    for (const v1::Step& step : call.recording().steps()) {
      const uint32_t index = step.op();
      if (static_cast<int>(index) >= calls.operators_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("calls[", c, "]: no operator ", index));
      }
      if (!seen.insert(index).second) continue;
      const v1::Operator& op = calls.operators(static_cast<int>(index));
      const std::string key = ShapeKey(op);
      auto [it, inserted] = by_key.try_emplace(key, found.size());
      if (inserted) {
        Shape shape;
        shape.key = key;
        shape.class_name = op.class_name();
        shape.dims = ShapeDims(op);
        found.push_back(std::move(shape));
      }
      Shape& shape = found[it->second];
      shape.pinned.insert(op.pinned().begin(), op.pinned().end());
      ShapeMember member;
      member.op = index;
      member.call = c;
      ASSIGN_OR_RETURN(member.points, OpPoints(call, index, op));
      member.inputs = OpInputs(call, index, op);
      member.steps = steps[index];
      shape.steps += member.steps;
      shape.members.push_back(std::move(member));
    }
  }
  const SearchSpace fallback = DefaultSearchSpace();
  const auto& domain_of = space.domain ? space.domain : fallback.domain;
  std::vector<Shape> out;
  for (Shape& shape : found) {
    const v1::Operator& op =
        calls.operators(static_cast<int>(shape.members[0].op));
    bool searchable = false;
    for (const v1::Tunable& t : op.tunables()) {
      if (shape.pinned.contains(t.name())) continue;
      for (const v1::Value& v : domain_of(op, t.name(), generation)) {
        if (!ValuesEqual(v, t.value())) searchable = true;
      }
    }
    if (searchable) out.push_back(std::move(shape));
  }
  return out;
}

absl::StatusOr<std::string> Refusal(const v1::Operator& op,
                                    const Platform& platform,
                                    v1::Packaging packaging, Builder& builder,
                                    Cache* cache) {
  const VerdictKey key{RecipeKeyHash(op, platform, packaging),
                       builder.Environment()};
  if (cache != nullptr) {
    ASSIGN_OR_RETURN(std::optional<std::string> kept, cache->GetVerdict(key));
    if (kept) {
      if (*kept == kFits) return std::string();
      if (kept->starts_with(kRefusedPrefix)) {
        return kept->substr(kRefusedPrefixSize);
      }
    }
  }
  BuildRequest request;
  request.op = op;
  request.platform = platform;
  request.steps = 1;
  request.packaging = packaging;
  ASSIGN_OR_RETURN(BuildOutcome outcome, builder.Build(request));
  std::string why = outcome.artifact ? std::string() : outcome.refusal;
  if (!outcome.artifact && why.empty()) why = "refused without a reason";
  if (cache != nullptr) {
    RETURN_IF_ERROR(cache->PutVerdict(
        key,
        why.empty() ? std::string(kFits) : absl::StrCat(kRefusedPrefix, why)));
  }
  return why;
}

absl::StatusOr<ShapeResult> TimeShape(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const AutotuneOptions& options, const KernelCycles& cycles,
    const AutotuneDeps& deps, TuneStats* stats, int shape_index) {
  TuneStats own_stats;
  if (stats == nullptr) stats = &own_stats;
  const v1::Packaging packaging = options.packaging.value_or(
      platform.full_elf ? v1::PACKAGING_FULL_ELF : v1::PACKAGING_XCLBIN_CHAIN);
  Ctx ctx{calls,  platform, options, packaging,
          cycles, deps,     stats,   shape_index};
  if (shape.members.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(shape.key, ": a shape with no operator"));
  }
  auto log = [&ctx](const std::string& line) { ctx.Log("    " + line); };
  ASSIGN_OR_RETURN(std::vector<TunableValues> found,
                   Settings(OpOf(ctx, shape.members[0]), platform, shape.pinned,
                            options.space, log));
  for (size_t m = 1; m < shape.members.size(); ++m) {
    ASSIGN_OR_RETURN(std::vector<TunableValues> others,
                     Settings(OpOf(ctx, shape.members[m]), platform,
                              shape.pinned, options.space, log));
    std::vector<TunableValues> shared = {found[0]};
    for (size_t i = 1; i < found.size(); ++i) {
      if (std::any_of(others.begin(), others.end(), [&](const TunableValues& o) {
            return SettingsEqual(o, found[i]);
          })) {
        shared.push_back(std::move(found[i]));
      }
    }
    found = std::move(shared);
  }
  ShapeResult out;
  out.key = shape.key;
  // The builder's verdicts: the recorded setting must build; others that do
  // not are dropped before timing.
  for (const ShapeMember& m : shape.members) {
    ASSIGN_OR_RETURN(std::string why,
                     Refusal(WithSetting(OpOf(ctx, m), found[0]), platform,
                             packaging, *deps.builder, deps.cache));
    if (!why.empty()) {
      ctx.Log(absl::StrCat("    the recorded setting does not build (", why,
                           "); kept untimed"));
      ShapeTrial t;
      t.trial.tunables = found[0];
      t.trial.noise_us = 0;
      t.trial.refused =
          absl::StrCat("the recorded setting does not build: ", why);
      t.member_delta_us.assign(shape.members.size(), 0);
      t.member_noise_us.assign(shape.members.size(), 0.0);
      out.trials.push_back(std::move(t));
      return out;
    }
  }
  {
    std::vector<TunableValues> fit = {found[0]};
    for (size_t i = 1; i < found.size(); ++i) {
      bool fits = true;
      for (const ShapeMember& m : shape.members) {
        ASSIGN_OR_RETURN(std::string why,
                         Refusal(WithSetting(OpOf(ctx, m), found[i]), platform,
                                 packaging, *deps.builder, deps.cache));
        if (!why.empty()) fits = false;
        if (!fits) break;
      }
      if (fits) {
        fit.push_back(std::move(found[i]));
      } else {
        ++stats->builder_refused;
      }
    }
    if (fit.size() < found.size()) {
      ctx.Log(absl::StrCat("    ", found.size() - fit.size(), " of ",
                           found.size(), " settings the builder refuses"));
    }
    found = std::move(fit);
  }
  auto zero = [&](const TunableValues& s) {
    ShapeTrial t;
    t.trial.tunables = s;
    t.trial.noise_us = 0;
    t.member_delta_us.assign(shape.members.size(), 0);
    t.member_noise_us.assign(shape.members.size(), 0.0);
    return t;
  };
  if (found.size() == 1) {
    out.trials.push_back(zero(found[0]));
    ++stats->settings_timed;
    return out;
  }

  const SearchSpace fallback = DefaultSearchSpace();
  const auto& identity_of =
      options.space.identity ? options.space.identity : fallback.identity;
  const v1::Operator& first = OpOf(ctx, shape.members[0]);
  auto id = [&](const TunableValues& s) { return identity_of(first, s); };
  const std::string recorded_id = id(found[0]);

  std::map<std::string, std::optional<double>> least;
  if (!cycles.empty() && platform.core_mhz > 0 && shape.class_name == "GEMM") {
    for (size_t i = 1; i < found.size(); ++i) {
      least[id(found[i])] = ShapeLeastUs(ctx, shape, found[i]);
    }
  }
  std::map<std::string, ShapeTrial> tried;
  std::optional<double> recorded_us;
  auto slower = [&](const TunableValues& s) {
    auto it = least.find(id(s));
    if (it == least.end() || !it->second || !recorded_us) return false;
    double best = 0;
    for (const auto& [key, t] : tried) {
      if (t.trial.Gains()) best = std::min(best, t.trial.delta_us);
    }
    return *it->second >= *recorded_us + best;
  };
  auto run = [&](const std::vector<TunableValues>& batch,
                 bool recorded_alone) -> absl::Status {
    std::vector<TunableValues> todo = {found[0]};
    int skipped = 0;
    for (const TunableValues& s : batch) {
      const std::string key = id(s);
      if (key == recorded_id || tried.contains(key)) continue;
      if (slower(s)) {
        ++skipped;
        continue;
      }
      todo.push_back(s);
    }
    if (skipped > 0) {
      stats->skipped_by_bound += skipped;
      ctx.Log(absl::StrCat("    ", skipped,
                           " slower by their kernel alone, not timed"));
    }
    if (todo.size() == 1 && !recorded_alone && tried.contains(recorded_id)) {
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(auto timed, TimeSettings(ctx, shape, todo));
    recorded_us = timed.second;
    for (ShapeTrial& t : timed.first) {
      const std::string key = id(t.trial.tunables);
      if (!tried.contains(key)) ++stats->settings_timed;
      if (deps.progress != nullptr) {
        deps.progress->OnTrial(ctx.shape_index, t.trial);
      }
      tried.insert_or_assign(key, std::move(t));
    }
    return absl::OkStatus();
  };

  if (static_cast<int>(found.size()) <= options.exhaustive) {
    const bool bounded = std::any_of(least.begin(), least.end(),
                                     [](const auto& l) { return l.second; });
    // The recorded setting's own time first, which a bound is held to.
    if (bounded) RETURN_IF_ERROR(run({}, true));
    RETURN_IF_ERROR(run(found, false));
  } else {
    TunableValues best = found[0];
    bool moved = true;
    while (moved) {
      moved = false;
      for (const v1::Field& tunable : found[0]) {
        RETURN_IF_ERROR(run(Line(found, best, tunable.name()), false));
        const ShapeTrial* fastest = nullptr;
        for (const auto& [key, t] : tried) {
          if (!t.trial.Gains() && key != recorded_id) continue;
          if (fastest == nullptr ||
              t.trial.delta_us < fastest->trial.delta_us) {
            fastest = &t;
          }
        }
        if (fastest != nullptr && id(fastest->trial.tunables) != id(best)) {
          best = fastest->trial.tunables;
          moved = true;
        }
      }
    }
  }
  for (const TunableValues& s : found) {
    auto it = tried.find(id(s));
    if (it != tried.end()) out.trials.push_back(it->second);
  }
  for (size_t i = 1; i < out.trials.size(); ++i) {
    const Comparison& t = out.trials[i].trial;
    if (t.Gains() &&
        (out.best == 0 || t.delta_us < out.trials[out.best].trial.delta_us)) {
      out.best = static_cast<int>(i);
    }
  }
  return out;
}

absl::StatusOr<TuneResult> Autotune(const v1::Calls& calls,
                                        const Profile& profile,
                                        const AutotuneOptions& options,
                                        const AutotuneDeps& deps) {
  if (deps.device == nullptr || deps.builder == nullptr) {
    return absl::InvalidArgumentError("autotune needs a device and a builder");
  }
  ASSIGN_OR_RETURN(Platform platform, deps.device->GetPlatform());
  TuneResult result;
  const v1::Packaging packaging = options.packaging.value_or(
      platform.full_elf ? v1::PACKAGING_FULL_ELF : v1::PACKAGING_XCLBIN_CHAIN);
  KernelCycles cycles;
  Ctx ctx{calls, platform, options, packaging, cycles, deps, &result.stats};
  if (!options.cycles_path.empty()) {
    cycles = LoadKernelCycles(options.cycles_path,
                              [&ctx](const std::string& l) { ctx.Log(l); });
  }
  ASSIGN_OR_RETURN(std::vector<Shape> shapes,
                   Shapes(calls, options.space, platform.generation));

  // Per shape: the entries covering it (their dims) and what they set.
  std::vector<std::vector<std::vector<v1::Field>>> covering(shapes.size());
  std::vector<std::vector<v1::Field>> held(shapes.size());
  Profile out;
  for (const v1::ProfileEntry& entry : profile.proto().entries()) {
    const std::vector<v1::Field> dims(entry.dims().begin(), entry.dims().end());
    bool covered = false;
    for (size_t s = 0; s < shapes.size(); ++s) {
      if (shapes[s].class_name != entry.operator_class() ||
          !DimsMatch(dims, shapes[s].dims)) {
        continue;
      }
      covered = true;
      covering[s].push_back(dims);
      Overlay(held[s], entry.tunables());
    }
    if (!covered) out.Add(entry);
  }

  // The new entries' identities, for the diff's gains.
  std::vector<std::pair<v1::ProfileEntry, size_t>> made;
  double model_gain = 0;
  std::vector<std::optional<double>> model_noise;
  for (size_t s = 0; s < shapes.size(); ++s) {
    const Shape& shape = shapes[s];
    ctx.shape_index = static_cast<int>(s);
    if (deps.progress != nullptr) {
      deps.progress->OnShape(static_cast<int>(s),
                             static_cast<int>(shapes.size()), shape.key);
    }
    ctx.Log(absl::StrCat("[", s + 1, "/", shapes.size(), "] ", shape.key));
    ASSIGN_OR_RETURN(ShapeResult timed,
                     TimeShape(shape, calls, platform, options, cycles, deps,
                               &result.stats, static_cast<int>(s)));
    const ShapeTrial& best = timed.trials[timed.best];
    if (timed.best != 0) {
      ctx.Log(absl::StrFormat(
          "    %s: %+.1f ± %.1f us", SettingText(best.trial.tunables),
          best.trial.delta_us, best.trial.noise_us.value_or(0)));
      for (size_t m = 0; m < shape.members.size(); ++m) {
        const double steps = static_cast<double>(shape.members[m].steps);
        model_gain += -steps * best.member_delta_us[m];
        const std::optional<double>& noise = best.member_noise_us[m];
        model_noise.push_back(noise ? std::optional<double>(steps * *noise)
                                    : std::nullopt);
      }
    }
    v1::ProfileEntry entry;
    entry.set_operator_class(shape.class_name);
    for (v1::Field& d :
         NamedDims(calls.operators(static_cast<int>(shape.members[0].op)),
                   covering[s])) {
      *entry.add_dims() = std::move(d);
    }
    std::vector<v1::Field> tunables = held[s];
    google::protobuf::RepeatedPtrField<v1::Field> chosen(
        best.trial.tunables.begin(), best.trial.tunables.end());
    Overlay(tunables, chosen);
    for (v1::Field& f : tunables) *entry.add_tunables() = std::move(f);
    made.emplace_back(entry, s);
    out.Add(std::move(entry));
    result.shapes.push_back(std::move(timed));
  }

  result.diff = DiffProfiles(profile, out);
  for (v1::EntryChange& change : *result.diff.mutable_changed()) {
    const std::vector<v1::Field> dims(change.dims().begin(),
                                      change.dims().end());
    for (const auto& [entry, s] : made) {
      const std::vector<v1::Field> own(entry.dims().begin(),
                                       entry.dims().end());
      if (entry.operator_class() != change.operator_class() ||
          !SettingsEqual(own, dims)) {
        continue;
      }
      const ShapeResult& shape = result.shapes[s];
      if (shape.best == 0) break;
      const Comparison& t = shape.trials[shape.best].trial;
      change.set_has_gain(true);
      change.set_gain_us(-t.delta_us);
      change.set_noise_us(t.noise_us.value_or(0));
      break;
    }
  }
  const std::optional<double> noise = Quadrature(model_noise);
  result.diff.set_has_model_gain(noise.has_value());
  result.diff.set_model_gain_us(noise ? model_gain : 0);
  result.diff.set_model_noise_us(noise.value_or(0));
  result.profile = std::move(out);
  return result;
}

}  // namespace irontune
