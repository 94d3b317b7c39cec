#include "daemon/tune/time_shape.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/base/stats.h"
#include "daemon/tune/measure.h"
#include "daemon/tune/verdicts.h"

namespace irontune {
namespace {

ShapeTrial Untimed(const TunableValues& s, size_t members) {
  ShapeTrial t;
  t.trial.tunables = s;
  t.trial.noise_us = 0;
  t.member_delta_us.assign(members, 0);
  t.member_noise_us.assign(members, 0.0);
  return t;
}

// The settings `todo` (the recorded setting first) timed at every point of
// every member: each one's trial, and the recorded setting's time (summed
// over members, weighted over points).
class SettingsTimer {
 public:
  SettingsTimer(const std::vector<TunableValues>& todo, size_t members)
      : trials_(todo.size()),
        noises_(todo.size(),
                std::vector<std::vector<std::optional<double>>>(members)) {
    for (size_t i = 0; i < todo.size(); ++i) {
      trials_[i].trial.tunables = todo[i];
      trials_[i].member_delta_us.assign(members, 0.0);
      trials_[i].member_noise_us.assign(members, std::nullopt);
    }
  }

  // Adds one Measure of member `m` at a point of weight `w`; `judge`
  // decides each admitted setting's output.
  absl::Status Add(size_t m, double w, const MeasurePlan& plan,
                   const MeasureOutcome& outcome, const OutputJudge& judge) {
    recorded_us_ += w * outcome.measurements.at(0).t_step_us();
    for (size_t i = 0; i < trials_.size(); ++i) {
      Comparison& trial = trials_[i].trial;
      auto it = outcome.measurements.find(static_cast<int>(i));
      if (it == outcome.measurements.end()) {
        if (trial.refused.empty()) trial.refused = WhyUnmeasured(outcome, i);
        noises_[i][m].push_back(std::nullopt);
        continue;
      }
      const Delta d = AgainstDefault(it->second);
      trials_[i].member_delta_us[m] += w * d.delta_us;
      noises_[i][m].push_back(
          d.noise_us ? std::optional<double>(w * *d.noise_us) : std::nullopt);
      if (i == 0 || !trial.refused.empty()) continue;
      ASSIGN_OR_RETURN(std::string why,
                       judge.Verdict(plan, outcome, static_cast<int>(i)));
      if (!why.empty()) trial.refused = std::move(why);
    }
    return absl::OkStatus();
  }

  std::pair<std::vector<ShapeTrial>, double> Finish() && {
    for (size_t i = 0; i < trials_.size(); ++i) {
      ShapeTrial& t = trials_[i];
      t.trial.delta_us = 0;
      for (size_t m = 0; m < t.member_delta_us.size(); ++m) {
        t.member_noise_us[m] = Quadrature(noises_[i][m]);
        t.trial.delta_us += t.member_delta_us[m];
      }
      t.trial.noise_us = Quadrature(t.member_noise_us);
    }
    return {std::move(trials_), recorded_us_};
  }

 private:
  static std::string WhyUnmeasured(const MeasureOutcome& outcome, size_t i) {
    auto why = outcome.refused.find(static_cast<int>(i));
    return why != outcome.refused.end()
               ? absl::StrCat("does not build: ", why->second)
               : "not measured";
  }

  std::vector<ShapeTrial> trials_;
  // By setting, member and point.
  std::vector<std::vector<std::vector<std::optional<double>>>> noises_;
  double recorded_us_ = 0;
};

// One TimeShape call: the search's state.
class ShapeSearch {
 public:
  ShapeSearch(const Shape& shape, const v1::Calls& calls,
              const Platform& platform, const AutotuneOptions& options,
              const KernelCycles& cycles, TuneContext& context,
              TuneStats& stats, int shape_index)
      : shape_(shape),
        calls_(calls),
        platform_(platform),
        options_(options),
        packaging_(PackagingFor(options, platform)),
        cycles_(cycles),
        context_(context),
        stats_(stats),
        shape_index_(shape_index) {}

  absl::StatusOr<ShapeResult> Run() {
    if (shape_.members.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(shape_.key, ": a shape with no operator"));
    }
    ShapeResult out;
    out.key = shape_.key;
    RETURN_IF_ERROR(FindCandidates());
    ASSIGN_OR_RETURN(std::string why, RecordedRefusal());
    if (!why.empty()) {
      context_.Log(absl::StrCat("    the recorded setting does not build (",
                                why, "); kept untimed"));
      ShapeTrial t = Untimed(found_[0], shape_.members.size());
      t.trial.refused =
          absl::StrCat("the recorded setting does not build: ", why);
      out.trials.push_back(std::move(t));
      return out;
    }
    RETURN_IF_ERROR(DropUnbuildable());
    if (found_.size() == 1) {
      out.trials.push_back(Untimed(found_[0], shape_.members.size()));
      ++stats_.settings_timed;
      return out;
    }
    PrepareSearch();
    if (static_cast<int>(found_.size()) <= options_.exhaustive) {
      RETURN_IF_ERROR(Exhaustive());
    } else {
      RETURN_IF_ERROR(CoordinateDescent());
    }
    Collect(out);
    return out;
  }

 private:
  const v1::Operator& OpOf(const ShapeMember& m) const {
    return calls_.operators(static_cast<int>(m.op));
  }

  // The settings every member has, the recorded one first.
  absl::Status FindCandidates() {
    auto log = [this](const std::string& line) { context_.Log("    " + line); };
    ASSIGN_OR_RETURN(found_, Settings(OpOf(shape_.members[0]), platform_,
                                      shape_.pinned, options_.space, log));
    for (size_t m = 1; m < shape_.members.size(); ++m) {
      ASSIGN_OR_RETURN(std::vector<TunableValues> others,
                       Settings(OpOf(shape_.members[m]), platform_,
                                shape_.pinned, options_.space, log));
      std::vector<TunableValues> shared = {found_[0]};
      for (size_t i = 1; i < found_.size(); ++i) {
        if (std::any_of(others.begin(), others.end(),
                        [&](const TunableValues& o) {
                          return SettingsEqual(o, found_[i]);
                        })) {
          shared.push_back(std::move(found_[i]));
        }
      }
      found_ = std::move(shared);
    }
    return absl::OkStatus();
  }

  // The builder's reason for refusing `s` for some member; "" where every
  // member builds.
  absl::StatusOr<std::string> RefusalOf(const TunableValues& s) {
    for (const ShapeMember& m : shape_.members) {
      ASSIGN_OR_RETURN(std::string why,
                       Refusal(WithSetting(OpOf(m), s), platform_, packaging_,
                               context_.builder(), context_.cache()));
      if (!why.empty()) return why;
    }
    return std::string();
  }

  absl::StatusOr<std::string> RecordedRefusal() { return RefusalOf(found_[0]); }

  // Settings the builder refuses are dropped before timing.
  absl::Status DropUnbuildable() {
    std::vector<TunableValues> fit = {found_[0]};
    for (size_t i = 1; i < found_.size(); ++i) {
      ASSIGN_OR_RETURN(std::string why, RefusalOf(found_[i]));
      if (why.empty()) {
        fit.push_back(std::move(found_[i]));
      } else {
        ++stats_.builder_refused;
      }
    }
    if (fit.size() < found_.size()) {
      context_.Log(absl::StrCat("    ", found_.size() - fit.size(), " of ",
                                found_.size(),
                                " settings the builder refuses"));
    }
    found_ = std::move(fit);
    return absl::OkStatus();
  }

  // Design identities, and the kernel bound of each setting where there is
  // one.
  void PrepareSearch() {
    identity_of_ = CompleteSearchSpace(options_.space).identity;
    recorded_id_ = Id(found_[0]);
    if (cycles_.empty() || platform_.core_mhz <= 0 ||
        shape_.class_name != "GEMM") {
      return;
    }
    for (size_t i = 1; i < found_.size(); ++i) {
      least_[Id(found_[i])] = LeastUsOf(found_[i]);
    }
  }

  std::string Id(const TunableValues& s) const {
    return identity_of_(OpOf(shape_.members[0]), s);
  }

  // The least step time `s` could take, summed and weighted as a delta is;
  // nullopt where any member or point has no bound.
  std::optional<double> LeastUsOf(const TunableValues& s) const {
    double sum = 0;
    for (const ShapeMember& m : shape_.members) {
      const v1::Operator op = WithSetting(OpOf(m), s);
      for (const WeightedValues& p : m.points) {
        std::optional<double> least =
            LeastUs(op, p.values, cycles_, platform_.generation,
                    platform_.columns, platform_.core_mhz);
        if (!least) return std::nullopt;
        sum += p.weight * *least;
      }
    }
    return sum;
  }

  // Whether the kernel bound shows `s` cannot beat the best so far.
  bool Slower(const TunableValues& s) const {
    auto it = least_.find(Id(s));
    if (it == least_.end() || !it->second || !recorded_us_) return false;
    double best = 0;
    for (const auto& [key, t] : tried_) {
      if (t.trial.Gains()) best = std::min(best, t.trial.delta_us);
    }
    return *it->second >= *recorded_us_ + best;
  }

  // Times the settings of `batch` not yet tried (and not ruled out by the
  // bound) beside the recorded setting; with `recorded_alone`, the recorded
  // setting even when nothing else is left.
  absl::Status TimeBatch(const std::vector<TunableValues>& batch,
                         bool recorded_alone) {
    std::vector<TunableValues> todo = {found_[0]};
    int skipped = 0;
    for (const TunableValues& s : batch) {
      const std::string key = Id(s);
      if (key == recorded_id_ || tried_.contains(key)) continue;
      if (Slower(s)) {
        ++skipped;
        continue;
      }
      todo.push_back(s);
    }
    if (skipped > 0) {
      stats_.skipped_by_bound += skipped;
      context_.Log(absl::StrCat("    ", skipped,
                                " slower by their kernel alone, not timed"));
    }
    if (todo.size() == 1 && !recorded_alone && tried_.contains(recorded_id_)) {
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(auto timed, TimeSettings(todo));
    recorded_us_ = timed.second;
    for (ShapeTrial& t : timed.first) {
      const std::string key = Id(t.trial.tunables);
      if (!tried_.contains(key)) ++stats_.settings_timed;
      context_.OnTrial(shape_index_, t.trial);
      tried_.insert_or_assign(key, std::move(t));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::pair<std::vector<ShapeTrial>, double>> TimeSettings(
      const std::vector<TunableValues>& todo) {
    SettingsTimer timer(todo, shape_.members.size());
    const OutputJudge judge{platform_,         packaging_,
                            options_.seed,     options_.judge,
                            options_.judge_id, context_.cache()};
    for (size_t m = 0; m < shape_.members.size(); ++m) {
      const ShapeMember& member = shape_.members[m];
      MeasurePlan plan = PlanFor(member, todo);
      for (const WeightedValues& point : member.points) {
        if (context_.cancelled()) {
          return absl::CancelledError("autotune cancelled");
        }
        plan.values = point.values;
        ASSIGN_OR_RETURN(MeasureOutcome outcome, Measure(plan, context_));
        Count(outcome);
        RETURN_IF_ERROR(timer.Add(m, point.weight, plan, outcome, judge));
      }
    }
    return std::move(timer).Finish();
  }

  MeasurePlan PlanFor(const ShapeMember& member,
                      const std::vector<TunableValues>& todo) const {
    MeasurePlan plan;
    for (const TunableValues& s : todo) {
      plan.settings.push_back(WithSetting(OpOf(member), s));
    }
    plan.timing = options_.timing;
    plan.repeats = options_.repeats;
    plan.packaging = packaging_;
    plan.inputs = member.inputs;
    plan.remeasure = options_.remeasure;
    plan.seed = options_.seed;
    plan.idle = options_.idle;
    return plan;
  }

  void Count(const MeasureOutcome& outcome) {
    ++stats_.measure_calls;
    stats_.cache_hits += static_cast<int64_t>(outcome.cached.size());
    stats_.device_timed += static_cast<int64_t>(outcome.measurements.size() -
                                                outcome.cached.size());
  }

  absl::Status Exhaustive() {
    const bool bounded = std::any_of(least_.begin(), least_.end(),
                                     [](const auto& l) { return l.second; });
    // The recorded setting's own time first, which a bound is held to.
    if (bounded) RETURN_IF_ERROR(TimeBatch({}, true));
    return TimeBatch(found_, false);
  }

  // Passes over the tunables, each timing the Line() through the best
  // setting so far, until a pass moves nothing.
  absl::Status CoordinateDescent() {
    TunableValues best = found_[0];
    bool moved = true;
    while (moved) {
      moved = false;
      for (const v1::Field& tunable : found_[0]) {
        RETURN_IF_ERROR(TimeBatch(Line(found_, best, tunable.name()), false));
        const ShapeTrial* fastest = FastestTaken();
        if (fastest != nullptr && Id(fastest->trial.tunables) != Id(best)) {
          best = fastest->trial.tunables;
          moved = true;
        }
      }
    }
    return absl::OkStatus();
  }

  // The fastest setting tried that gains, or the recorded one.
  const ShapeTrial* FastestTaken() const {
    const ShapeTrial* fastest = nullptr;
    for (const auto& [key, t] : tried_) {
      if (!t.trial.Gains() && key != recorded_id_) continue;
      if (fastest == nullptr || t.trial.delta_us < fastest->trial.delta_us) {
        fastest = &t;
      }
    }
    return fastest;
  }

  // The trials in Settings order, and the best of them.
  void Collect(ShapeResult& out) {
    for (const TunableValues& s : found_) {
      auto it = tried_.find(Id(s));
      if (it != tried_.end()) out.trials.push_back(it->second);
    }
    for (size_t i = 1; i < out.trials.size(); ++i) {
      const Comparison& t = out.trials[i].trial;
      if (t.Gains() &&
          (out.best == 0 || t.delta_us < out.trials[out.best].trial.delta_us)) {
        out.best = static_cast<int>(i);
      }
    }
  }

  const Shape& shape_;
  const v1::Calls& calls_;
  const Platform& platform_;
  const AutotuneOptions& options_;
  const v1::Packaging packaging_;
  const KernelCycles& cycles_;
  TuneContext& context_;
  TuneStats& stats_;
  const int shape_index_;

  std::vector<TunableValues> found_;  // the candidates, recorded first
  std::function<std::string(const v1::Operator&, const TunableValues&)>
      identity_of_;
  std::string recorded_id_;
  std::map<std::string, std::optional<double>> least_;  // by identity
  std::map<std::string, ShapeTrial> tried_;             // by identity
  std::optional<double> recorded_us_;
};

}  // namespace

v1::Packaging PackagingFor(const AutotuneOptions& options,
                           const Platform& platform) {
  return options.packaging.value_or(DefaultPackaging(platform));
}

absl::StatusOr<ShapeResult> TimeShape(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const AutotuneOptions& options, const KernelCycles& cycles,
    TuneContext& context, TuneStats* stats, int shape_index) {
  TuneStats own_stats;
  return ShapeSearch(shape, calls, platform, options, cycles, context,
                     stats != nullptr ? *stats : own_stats, shape_index)
      .Run();
}

}  // namespace irontune
