#include "daemon/tune/time_shape.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/defaults.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/base/sha256.h"
#include "daemon/base/stats.h"
#include "daemon/store/cache.h"
#include "daemon/tune/measure.h"
#include "daemon/tune/verdicts.h"
namespace irontune {
namespace {

// Whether a search of `shape` bounds settings by their kernel cycles (and
// may leave some untimed): a GEMM shape, with cycles and a core clock.
bool MayBeBounded(const Shape& shape, const Platform& platform,
                  const KernelCycles& cycles) {
  return !cycles.empty() && platform.core_mhz > 0 && shape.class_name == "GEMM";
}

// Which of `all` (ShapeSettings: the recorded setting first) a search
// times first, before any figure can steer it, where it searches those
// that `fits` (the recorded one always): all of those where there are at
// most options.exhaustive and no kernel bound may leave some untimed; else
// the recorded one and, for a coordinate descent, its first Line (the
// first tunable's, through `incumbent` where it is among them, else
// through the recorded setting). Where `fits` holds settings the builder
// refuses, the search's own lists are shorter: then this is a forecast.
std::vector<bool> FirstTimed(const std::vector<TunableValues>& all,
                             const std::vector<bool>& fits, const Shape& shape,
                             const Platform& platform,
                             const AutotuneOptions& options,
                             const KernelCycles& cycles,
                             const TunableValues* incumbent) {
  std::vector<bool> out(all.size(), false);
  if (all.empty()) return out;
  std::vector<TunableValues> found = {all[0]};
  for (size_t i = 1; i < all.size(); ++i) {
    if (fits[i]) found.push_back(all[i]);
  }
  out[0] = true;
  if (static_cast<int>(found.size()) <= options.exhaustive) {
    if (MayBeBounded(shape, platform, cycles)) return out;
    for (size_t i = 1; i < all.size(); ++i) out[i] = fits[i];
    return out;
  }
  if (found[0].empty()) return out;
  const auto index_of = [&all](const TunableValues& s) {
    return std::find_if(
               all.begin(), all.end(),
               [&s](const TunableValues& f) { return SettingsEqual(f, s); }) -
           all.begin();
  };
  TunableValues through = found[0];
  if (incumbent != nullptr) {
    const auto i = index_of(*incumbent);
    if (i < std::ssize(all) && (i == 0 || fits[i])) through = *incumbent;
  }
  for (const TunableValues& s : Line(found, through, found[0][0].name())) {
    const auto i = index_of(s);
    if (i < std::ssize(all)) out[i] = true;
  }
  return out;
}

// Whether `cache` (may be null: none) keeps the built identity
// (BuiltIdentityKey) of each of the 1-step requests `one_step`: a setting
// whose figure the search then finds without a build.
absl::StatusOr<std::vector<bool>> KnownBuilt(
    const std::vector<BuildRequest>& one_step, const std::string& environment,
    Cache* cache) {
  std::vector<bool> out(one_step.size(), false);
  if (cache == nullptr || one_step.empty()) return out;
  std::vector<VerdictKey> ids;
  for (const BuildRequest& r : one_step) {
    ids.push_back(BuiltIdentityKey(r, environment));
  }
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> kept,
                   cache->GetVerdicts(ids));
  for (size_t k = 0; k < kept.size(); ++k) out[k] = kept[k].has_value();
  return out;
}

ShapeTrial Untimed(const TunableValues& s, size_t members) {
  ShapeTrial t;
  t.trial.tunables = s;
  t.trial.noise_us = 0;
  t.member_delta_us.assign(members, 0);
  t.member_noise_us.assign(members, 0.0);
  return t;
}

// What one batch of settings gave: each one's trial, and the recorded
// setting's time (summed over members, weighted over points) with its
// standard error.
struct TimedBatch {
  std::vector<ShapeTrial> trials;
  double recorded_us = 0;
  std::optional<double> recorded_noise_us;
};

// The settings `todo` (the recorded setting first) timed at every point of
// every member.
class SettingsTimer {
 public:
  // `base`: the setting each trial is against (0, the recorded one, whose
  // outputs are judged; else no judging).
  SettingsTimer(const std::vector<TunableValues>& todo, size_t members,
                int base = 0)
      : base_(base),
        trials_(todo.size()),
        noises_(todo.size(),
                std::vector<std::vector<std::optional<double>>>(members)) {
    for (size_t i = 0; i < todo.size(); ++i) {
      trials_[i].trial.tunables = todo[i];
      trials_[i].member_delta_us.assign(members, 0.0);
      trials_[i].member_noise_us.assign(members, std::nullopt);
    }
  }

  // Adds one Measure of member `m` at a point of weight `w`; the outputs
  // are judged apart (ToJudge, Refuse).
  void Add(size_t m, double w, const MeasureOutcome& outcome) {
    const v1::Measurement& recorded = outcome.measurements.at(0);
    recorded_us_ += w * recorded.t_step_us();
    recorded_noise_.push_back(
        recorded.has_t_step_noise_us()
            ? std::optional<double>(w * recorded.t_step_noise_us())
            : std::nullopt);
    for (size_t i = 0; i < trials_.size(); ++i) {
      Comparison& trial = trials_[i].trial;
      auto it = outcome.measurements.find(static_cast<int>(i));
      if (it == outcome.measurements.end()) {
        if (trial.refused.empty()) trial.refused = WhyUnmeasured(outcome, i);
        noises_[i][m].push_back(std::nullopt);
        continue;
      }
      const auto base = outcome.measurements.find(base_);
      if (base_ != 0 && base == outcome.measurements.end()) {
        if (trial.refused.empty())
          trial.refused = WhyUnmeasured(outcome, base_);
        noises_[i][m].push_back(std::nullopt);
        continue;
      }
      const Delta d = base_ == 0
                          ? AgainstDefault(it->second)
                          : MeasurementDifference(it->second, base->second);
      trials_[i].member_delta_us[m] += w * d.delta_us;
      noises_[i][m].push_back(
          d.noise_us ? std::optional<double>(w * *d.noise_us) : std::nullopt);
    }
  }

  // The settings of `outcome` (as Add took it) whose output is to be
  // judged: against the recorded setting, measured, not refused so far.
  std::vector<int> ToJudge(const MeasureOutcome& outcome) const {
    std::vector<int> out;
    if (base_ != 0) return out;
    for (size_t i = 1; i < trials_.size(); ++i) {
      if (outcome.measurements.count(static_cast<int>(i)) > 0 &&
          trials_[i].trial.refused.empty()) {
        out.push_back(static_cast<int>(i));
      }
    }
    return out;
  }

  // Takes the judge's verdicts, by setting ("" admitted).
  void Refuse(const std::map<int, std::string>& verdicts) {
    for (const auto& [i, why] : verdicts) {
      if (!why.empty()) trials_[i].trial.refused = why;
    }
  }

  TimedBatch Finish() && {
    for (size_t i = 0; i < trials_.size(); ++i) {
      ShapeTrial& t = trials_[i];
      t.trial.delta_us = 0;
      for (size_t m = 0; m < t.member_delta_us.size(); ++m) {
        t.member_noise_us[m] = Quadrature(noises_[i][m]);
        t.trial.delta_us += t.member_delta_us[m];
      }
      t.trial.noise_us = Quadrature(t.member_noise_us);
    }
    return {std::move(trials_), recorded_us_, Quadrature(recorded_noise_)};
  }

 private:
  static std::string WhyUnmeasured(const MeasureOutcome& outcome, size_t i) {
    auto why = outcome.refused.find(static_cast<int>(i));
    return why != outcome.refused.end()
               ? absl::StrCat("does not build: ", why->second)
               : "not measured";
  }

  const int base_;
  std::vector<ShapeTrial> trials_;
  // By setting, member and point.
  std::vector<std::vector<std::vector<std::optional<double>>>> noises_;
  double recorded_us_ = 0;
  std::vector<std::optional<double>> recorded_noise_;
};

// One TimeShape call: the search's state.
class ShapeSearch {
 public:
  ShapeSearch(const Shape& shape, const v1::Calls& calls,
              const Platform& platform, const AutotuneOptions& options,
              const KernelCycles& cycles, TuneContext& context,
              TuneStats& stats, int shape_index, const TunableValues* incumbent)
      : shape_(shape),
        calls_(calls),
        platform_(platform),
        options_(options),
        packaging_(PackagingFor(options, platform)),
        judge_({platform, packaging_, options.seed, options.judge,
                options.judge_id, options.reference, context.cache()}),
        cycles_(cycles),
        context_(context),
        stats_(stats),
        shape_index_(shape_index),
        incumbent_(incumbent) {}

  absl::StatusOr<ShapeResult> Run() {
    if (shape_.members.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(shape_.key, ": a shape with no operator"));
    }
    ShapeResult out;
    out.key = shape_.key;
    RETURN_IF_ERROR(FindCandidates());
    out.against_incumbent = Untimed(found_[0], shape_.members.size());
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
    RETURN_IF_ERROR(Choose(out));
    return out;
  }

 private:
  const v1::Operator& OpOf(const ShapeMember& m) const {
    return calls_.operators(static_cast<int>(m.op));
  }

  // The settings every member has, the recorded one first.
  absl::Status FindCandidates() {
    ASSIGN_OR_RETURN(found_,
                     ShapeSettings(shape_, calls_, platform_, options_.space,
                                   [this](const std::string& line) {
                                     context_.Log("    " + line);
                                   }));
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
    // Every member at every setting, looked up and built together.
    std::vector<v1::Operator> ops;
    for (size_t i = 1; i < found_.size(); ++i) {
      for (const ShapeMember& m : shape_.members) {
        ops.push_back(WithSetting(OpOf(m), found_[i]));
      }
    }
    ASSIGN_OR_RETURN(
        std::vector<std::string> refusals,
        Refusals(ops, platform_, packaging_, context_.builder(),
                 context_.cache(), [this] { return context_.cancelled(); }));
    std::vector<TunableValues> fit = {found_[0]};
    for (size_t i = 1; i < found_.size(); ++i) {
      const size_t first = (i - 1) * shape_.members.size();
      const bool fits =
          std::all_of(refusals.begin() + first,
                      refusals.begin() + first + shape_.members.size(),
                      [](const std::string& why) { return why.empty(); });
      if (fits) {
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
    found_ids_.clear();
    recorded_id_ = Id(found_[0]);
    incumbent_id_ = recorded_id_;
    if (incumbent_ != nullptr) {
      auto it = std::find_if(found_.begin(), found_.end(),
                             [&](const TunableValues& s) {
                               return SettingsEqual(s, *incumbent_);
                             });
      if (it != found_.end()) {
        incumbent_index_ = static_cast<int>(it - found_.begin());
        incumbent_id_ = Id(*it);
      } else {
        context_.Log(absl::StrCat("    the profile's ",
                                  SettingText(*incumbent_),
                                  " is not among the settings; the recorded "
                                  "one is the incumbent"));
      }
    }
    if (!MayBeBounded(shape_, platform_, cycles_)) return;
    for (size_t i = 1; i < found_.size(); ++i) {
      least_[Id(found_[i])] = LeastUsOf(found_[i]);
    }
  }

  // Id(found_[i]), computed once per search.
  const std::string& FoundId(size_t i) const {
    if (found_ids_.size() != found_.size()) {
      found_ids_.clear();
      for (const TunableValues& s : found_) found_ids_.push_back(&Id(s));
    }
    return *found_ids_[i];
  }

  // The design identity of `s`, computed once per setting (by
  // SettingIdentity) for the search's life.
  const std::string& Id(const TunableValues& s) const {
    auto [it, added] = ids_.try_emplace(SettingIdentity(s));
    if (added) it->second = identity_of_(OpOf(shape_.members[0]), s);
    return it->second;
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
  // setting even when nothing else is left. With `whole` (the batch is the
  // whole search), a race that leaves no more in reach than a confirmation
  // holds nominates them from their screening figures (Nominate).
  absl::Status TimeBatch(const std::vector<TunableValues>& batch,
                         bool recorded_alone, bool whole = false) {
    std::vector<TunableValues> todo = {found_[0]};
    int skipped = 0;
    for (const TunableValues& s : batch) {
      const std::string key = Id(s);
      if (key == recorded_id_ || tried_.contains(key)) continue;
      if (key != incumbent_id_ && Slower(s)) {
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
    if (options_.race && RacesAny(todo)) {
      ASSIGN_OR_RETURN(todo, Screen(todo));
      RETURN_IF_ERROR(BuildNextLines(todo));
      if (todo.size() == 1 && tried_.contains(recorded_id_)) {
        return absl::OkStatus();
      }
      if (whole && Nominate(todo)) return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(TimedBatch timed, TimeSettings(todo, false));
    recorded_us_ = timed.recorded_us;
    recorded_batches_.push_back(timed.recorded_us);
    recorded_within_.push_back(timed.recorded_noise_us);
    for (const ShapeTrial& t : timed.trials) {
      const std::string key = Id(t.trial.tunables);
      if (!tried_.contains(key)) ++stats_.settings_timed;
      tried_.insert_or_assign(key, t);
    }
    ReportPick();
    std::vector<Comparison> trials;
    for (const ShapeTrial& t : timed.trials) trials.push_back(t.trial);
    context_.OnTrials(shape_index_, trials);
    return absl::OkStatus();
  }

  // Where the settings a screen left in reach (`todo`, the recorded setting
  // first, then the incumbent among them) other than the incumbent are no
  // more than MostContenders(): they keep their screening figures as their
  // trials and are all nominated for confirmation (nominated_), with no
  // full Timing, which would only choose the contenders among them; the
  // confirmation times them afresh against the incumbent. Else false, and
  // nothing is done.
  bool Nominate(const std::vector<TunableValues>& todo) {
    std::vector<std::string> challengers;
    for (size_t i = 1; i < todo.size(); ++i) {
      if (Id(todo[i]) != incumbent_id_) challengers.push_back(Id(todo[i]));
    }
    if (static_cast<int>(challengers.size()) >
        MostContenders(incumbent_id_ != recorded_id_)) {
      return false;
    }
    stats_.screened_out += static_cast<int64_t>(todo.size()) - 1;
    for (const TunableValues& s : todo) {
      auto it = screened_in_.find(Id(s));
      if (it == screened_in_.end()) continue;
      if (!tried_.contains(it->first)) ++stats_.settings_timed;
      tried_.insert_or_assign(it->first, it->second);
      context_.OnTrial(shape_index_, it->second.trial);
    }
    nominated_ = std::move(challengers);
    ReportPick();
    return true;
  }

  // Whether `todo` (the recorded setting first) holds a setting the race
  // may leave out: one other than the incumbent, which always stays.
  bool RacesAny(const std::vector<TunableValues>& todo) const {
    return std::any_of(
        todo.begin() + 1, todo.end(),
        [&](const TunableValues& s) { return Id(s) != incumbent_id_; });
  }

  // Screens `todo` (the recorded setting first) at ScreenTiming, cached
  // under its own tag (ScreenTag), and returns the recorded setting and
  // the settings whose screening figure is within reach of the best
  // (Reaches), fastest first; the incumbent is always among them. The
  // others keep their screening figure as their trial and get no full
  // Timing. The recorded setting keeps its screening figure too where no
  // full batch has timed it (the search reports from it when nothing
  // reaches).
  absl::StatusOr<std::vector<TunableValues>> Screen(
      const std::vector<TunableValues>& todo) {
    const v1::Timing screen = ScreenTiming(options_.timing);
    ASSIGN_OR_RETURN(std::vector<TimedBatch> timed,
                     TimeAgainst(todo, false, {0}, ScreenTag(screen), &screen));
    TimedBatch& batch = timed.front();
    stats_.screened += static_cast<int64_t>(todo.size()) - 1;
    if (!tried_.contains(recorded_id_)) {
      if (!recorded_us_) recorded_us_ = batch.recorded_us;
      screen_recorded_.push_back(batch.recorded_us);
      screen_recorded_within_.push_back(batch.recorded_noise_us);
    }
    Comparison best;  // the recorded setting: 0 +- 0
    best.noise_us = 0.0;
    const auto consider = [&best](const Comparison& c) {
      if (c.refused.empty() && c.noise_us && c.delta_us < best.delta_us) {
        best = c;
      }
    };
    for (const auto& [key, t] : tried_) consider(t.trial);
    for (const ShapeTrial& t : batch.trials) consider(t.trial);
    const double practical =
        options_.min_gain * std::max(0.0, recorded_us_.value_or(0));
    std::vector<const ShapeTrial*> reach;
    for (size_t i = 1; i < batch.trials.size(); ++i) {
      const ShapeTrial& t = batch.trials[i];
      const std::string key = Id(t.trial.tunables);
      if (key == incumbent_id_ || Reaches(t.trial, best, kScreenZ, practical)) {
        reach.push_back(&t);
        screened_in_.insert_or_assign(key, t);
        continue;
      }
      ++stats_.settings_timed;
      ++stats_.screened_out;
      tried_.insert_or_assign(key, t);
      context_.OnTrial(shape_index_, t.trial);
    }
    screened_in_.insert_or_assign(recorded_id_, batch.trials.front());
    if (!tried_.contains(recorded_id_) && reach.empty()) {
      tried_.insert_or_assign(recorded_id_, batch.trials.front());
      ++stats_.settings_timed;
    }
    std::stable_sort(reach.begin(), reach.end(), [](auto* a, auto* b) {
      return a->trial.delta_us < b->trial.delta_us;
    });
    std::vector<TunableValues> out = {todo.front()};
    for (const ShapeTrial* t : reach) out.push_back(t->trial.tunables);
    context_.Log(absl::StrFormat(
        "    screened %d settings; %d within reach of the best",
        static_cast<int>(todo.size()) - 1, static_cast<int>(reach.size())));
    return out;
  }

  // The cache tag of a screening figure at `screen`: apart from the full
  // Timing's figures of the same settings (a cache key does not hold the
  // Timing), so a run without remeasure replays the same screen.
  static std::string ScreenTag(const v1::Timing& screen) {
    return absl::StrCat("screen/", screen.rounds(), "/", screen.calls());
  }

  // Tells the context which tried setting Pick() takes so far.
  void ReportPick() {
    std::vector<ShapeTrial> trials;
    const int incumbent = TriedInOrder(trials);
    const int pick = PickAmong(incumbent, trials);
    context_.OnPick(shape_index_, pick >= 0 && pick != incumbent
                                      ? &trials[pick].trial
                                      : nullptr);
  }

  // Times `todo` (the recorded setting first) at every member's every
  // point; `remeasure` times even what the cache holds. Each trial is
  // against the recorded setting; with `base` > 0 against todo[base]
  // instead (paired where timed in one run), outputs not judged again.
  absl::StatusOr<TimedBatch> TimeSettings(
      const std::vector<TunableValues>& todo, bool remeasure, int base = 0) {
    ASSIGN_OR_RETURN(std::vector<TimedBatch> timed,
                     TimeAgainst(todo, remeasure, {base}));
    return std::move(timed.front());
  }

  // As TimeSettings, with the trials against each of `bases` (distinct
  // indices into `todo`) from the same runs: one TimedBatch per base.
  // `timing` (may be null: options.timing) is the Timing they are given.
  absl::StatusOr<std::vector<TimedBatch>> TimeAgainst(
      const std::vector<TunableValues>& todo, bool remeasure,
      const std::vector<int>& bases, const std::string& cache_tag = "",
      const v1::Timing* timing = nullptr) {
    std::vector<SettingsTimer> timers;
    for (int base : bases) {
      timers.emplace_back(todo, shape_.members.size(), base);
    }
    // Every member's designs at once: a Measure queues only its own.
    if (shape_.members.size() > 1) {
      RETURN_IF_ERROR(QueueBuilds(todo, /*later=*/false, /*guess=*/false));
    }
    // Only a timer against the recorded setting judges.
    SettingsTimer* judged = nullptr;
    for (size_t b = 0; b < bases.size(); ++b) {
      if (bases[b] == 0) judged = &timers[b];
    }
    for (size_t m = 0; m < shape_.members.size(); ++m) {
      const ShapeMember& member = shape_.members[m];
      MeasurePlan plan = PlanFor(member, todo);
      if (timing != nullptr) plan.timing = *timing;
      plan.remeasure = plan.remeasure || remeasure;
      plan.cache_tag = cache_tag;
      for (const WeightedValues& point : member.points) {
        if (context_.cancelled()) {
          judge_.Finish().IgnoreError();  // keeps what was judged
          return absl::CancelledError("autotune cancelled");
        }
        plan.values = point.values;
        absl::StatusOr<MeasureOutcome> outcome = Measure(plan, context_);
        if (!outcome.ok()) {
          judge_.Finish().IgnoreError();  // keeps what was judged
          return outcome.status();
        }
        Count(*outcome);
        // The last point's verdicts, judged while this point ran.
        RETURN_IF_ERROR(JudgeDone(judged));
        for (SettingsTimer& timer : timers) {
          timer.Add(m, point.weight, *outcome);
        }
        if (judged == nullptr) continue;
        const std::vector<int> to_judge = judged->ToJudge(*outcome);
        RETURN_IF_ERROR(judge_.Start(plan, *std::move(outcome), to_judge));
      }
    }
    RETURN_IF_ERROR(JudgeDone(judged));
    std::vector<TimedBatch> out;
    for (SettingsTimer& timer : timers)
      out.push_back(std::move(timer).Finish());
    return out;
  }

  // Waits for the judging under way (judge_), giving its verdicts to
  // `timer` (may be null).
  absl::Status JudgeDone(SettingsTimer* timer) {
    using Verdicts = std::map<int, std::string>;
    ASSIGN_OR_RETURN(const Verdicts verdicts, judge_.Finish());
    if (timer != nullptr) timer->Refuse(verdicts);
    return absl::OkStatus();
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
    return TimeBatch(found_, false, /*whole=*/true);
  }

  // Passes over the tunables from the incumbent, each timing the Line()
  // through the setting Pick() takes so far, until a pass moves nothing.
  absl::Status CoordinateDescent() {
    TunableValues best = found_[incumbent_index_];
    const std::vector<v1::Field>& tunables = found_[0];
    // A shape searched before replays its figures from the cache, which a
    // guess at its next line would build for nothing.
    ASSIGN_OR_RETURN(
        const std::vector<bool> replayed,
        SearchedBefore({shape_}, calls_, platform_, options_, context_));
    guess_builds_ = !replayed[0];
    bool moved = true;
    while (moved) {
      moved = false;
      for (size_t k = 0; k < tunables.size(); ++k) {
        // The next Line, should this one not move `best`, builds meanwhile,
        // queued behind this one's; once screened, also the next Line
        // through its fastest (BuildNextLines).
        const std::vector<TunableValues> line =
            Line(found_, best, tunables[k].name());
        next_tunable_ = tunables[(k + 1) % tunables.size()].name();
        next_through_ = best;
        if (k + 1 < tunables.size() || moved) {
          RETURN_IF_ERROR(QueueBuilds(line, /*later=*/false));
          RETURN_IF_ERROR(
              QueueBuilds(Line(found_, best, next_tunable_), /*later=*/false));
        }
        absl::Status timed = TimeBatch(line, false);
        next_tunable_.clear();
        RETURN_IF_ERROR(timed);
        std::vector<ShapeTrial> trials;
        const int pick = PickAmong(TriedInOrder(trials), trials);
        if (pick >= 0 && Id(trials[pick].trial.tunables) != Id(best)) {
          best = trials[pick].trial.tunables;
          moved = true;
        }
      }
    }
    return absl::OkStatus();
  }

  // Queues the builds Measure asks of the settings of `batch` not tried
  // yet (each member's 1-step and options.repeats-step designs). With
  // `guess` (a later batch's, built while this one is timed; nothing
  // unless guess_builds_) and `later`, behind all else
  // (Builder::PrefetchLater), so it never delays a build the search waits
  // for; else at the back of the first queue (Builder::Prefetch). Designs
  // whose built identity the cache keeps are left out, so a search
  // replayed from the cache queues nothing.
  absl::Status QueueBuilds(const std::vector<TunableValues>& batch, bool later,
                           bool guess = true) {
    if (guess && !guess_builds_) return absl::OkStatus();
    std::vector<BuildRequest> one_step, many_step;
    for (const TunableValues& s : batch) {
      if (tried_.contains(Id(s))) continue;
      for (const ShapeMember& m : shape_.members) {
        const v1::Operator op = WithSetting(OpOf(m), s);
        const v1::Operator recorded = WithSetting(OpOf(m), found_[0]);
        one_step.push_back(
            MeasureRequest(op, recorded, platform_, 1, packaging_));
        many_step.push_back(MeasureRequest(op, recorded, platform_,
                                           options_.repeats, packaging_));
      }
    }
    ASSIGN_OR_RETURN(const std::vector<bool> built,
                     KnownBuilt(one_step, context_.builder().Environment(),
                                context_.cache()));
    for (const std::vector<BuildRequest>* requests : {&one_step, &many_step}) {
      for (size_t k = 0; k < requests->size(); ++k) {
        if (built[k]) continue;
        if (later) {
          context_.builder().PrefetchLater((*requests)[k]);
        } else {
          context_.builder().Prefetch((*requests)[k]);
        }
      }
    }
    return absl::OkStatus();
  }

  // Within a coordinate descent, once a line is screened (`screened`: the
  // recorded setting, then those in reach, fastest first), every build it
  // needs is done: the next line's designs are queued on the first queue,
  // through the setting taken so far and through the fastest screened
  // (the setting taken next where it wins), ahead of the next shape's.
  absl::Status BuildNextLines(const std::vector<TunableValues>& screened) {
    if (next_tunable_.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(QueueBuilds(Line(found_, next_through_, next_tunable_),
                                /*later=*/false));
    if (screened.size() < 2) return absl::OkStatus();
    return QueueBuilds(Line(found_, screened[1], next_tunable_),
                       /*later=*/false);
  }

  // The tried trials in Settings order into `trials`; the incumbent's index
  // among them (the recorded setting's, 0, where the incumbent is not
  // there or not admitted).
  int TriedInOrder(std::vector<ShapeTrial>& trials) const {
    trials.clear();
    int incumbent = 0;
    for (size_t i = 0; i < found_.size(); ++i) {
      auto it = tried_.find(FoundId(i));
      if (it == tried_.end()) continue;
      if (it->first == incumbent_id_ && it->second.trial.refused.empty()) {
        incumbent = static_cast<int>(trials.size());
      }
      trials.push_back(it->second);
    }
    return incumbent;
  }

  // Pick() over `trials` against `incumbent`, the practical margin
  // options.min_gain of the incumbent's step time; -1 for no trials.
  int PickAmong(int incumbent, const std::vector<ShapeTrial>& trials) const {
    if (trials.empty()) return -1;
    std::vector<Comparison> comparisons;
    for (const ShapeTrial& t : trials) comparisons.push_back(t.trial);
    return Pick(comparisons, incumbent, kGainZ, PracticalUs(trials[incumbent]));
  }

  // options.min_gain of the step time of `incumbent` (the recorded
  // setting's plus its delta).
  double PracticalUs(const ShapeTrial& incumbent) const {
    // The recorded setting's own trial has delta 0.
    return options_.min_gain *
           std::max(0.0, recorded_us_.value_or(0) + incumbent.trial.delta_us);
  }

  // The trials in Settings order, the incumbent, and the recorded
  // setting's time over the batches.
  void Collect(ShapeResult& out) {
    out.incumbent = TriedInOrder(out.trials);
    out.best = out.incumbent;
    out.against_incumbent = Untimed(out.trials[out.incumbent].trial.tunables,
                                    shape_.members.size());
    if (recorded_batches_.empty()) {
      recorded_batches_ = screen_recorded_;
      recorded_within_ = screen_recorded_within_;
    }
    if (!recorded_batches_.empty()) {
      out.recorded_us = Median(recorded_batches_);
      // One batch's error: its own noise (rounds and drift floor, as a
      // root mean square over the batches) or the spread seen between the
      // batches, whichever is larger. Not divided by the batches' count:
      // drift slower than the search moves every batch alike.
      const std::optional<double> each = Quadrature(recorded_within_);
      if (each) {
        const double typical =
            *each / std::sqrt(static_cast<double>(recorded_within_.size()));
        out.recorded_noise_us =
            std::max(typical, BatchNoise(recorded_batches_).value_or(0));
      }
    }
  }

  // The setting taken against the incumbent: the challengers that Contend
  // in the search are timed again against it and each other (Confirm) and
  // PickConfirmed() chooses from those figures alone; else the incumbent.
  absl::Status Choose(ShapeResult& out) {
    std::vector<Comparison> screened;
    for (const ShapeTrial& t : out.trials) screened.push_back(t.trial);
    const ShapeTrial& incumbent = out.trials[out.incumbent];
    const double practical = PracticalUs(incumbent);
    const int screen_pick = Pick(screened, out.incumbent, kGainZ, practical);
    const std::vector<int> contenders =
        nominated_ ? NominatedOf(out)
                   : ContendersOf(out, screened, screen_pick, practical);
    if (contenders.empty()) return absl::OkStatus();
    stats_.confirmations += static_cast<int64_t>(contenders.size());
    const double incumbent_us =
        std::max(0.0, recorded_us_.value_or(0) + incumbent.trial.delta_us);
    ASSIGN_OR_RETURN(Confirmed confirmed,
                     Confirm(out, contenders, incumbent_us));
    // A confirmation that ended open is decided on its point estimates
    // (z 0) against the practical margin where no profile entry decided
    // the incumbent; an incumbent an entry gives keeps an open call (the
    // noises stay in), so a re-tune of a tuned profile moves only on a
    // gain that clears. Without a practical margin the noises stay in.
    const bool estimate =
        confirmed.open && options_.min_gain > 0 && incumbent_ == nullptr;
    const double z = estimate ? 0.0 : kGainZ;
    const int pick = PickConfirmed(confirmed.figures, incumbent.trial.tunables,
                                   incumbent_us, options_.min_gain, z);
    if (pick < 0) {
      if (screen_pick != out.incumbent) out.unconfirmed = screen_pick;
      context_.Log(absl::StrFormat("    the incumbent %s stays",
                                   SettingText(incumbent.trial.tunables)));
      context_.OnPick(shape_index_, nullptr);
      return absl::OkStatus();
    }
    ++stats_.confirmed;
    out.best = contenders[pick];
    out.against_incumbent = std::move(confirmed.trials[pick]);
    context_.OnPick(shape_index_, &out.trials[out.best].trial);
    return absl::OkStatus();
  }

  // The indices into out.trials of the nominated_ settings, admitted, in
  // trials' order.
  std::vector<int> NominatedOf(const ShapeResult& out) const {
    std::vector<int> out_indices;
    for (size_t i = 0; i < out.trials.size(); ++i) {
      const Comparison& t = out.trials[i].trial;
      if (static_cast<int>(i) != out.incumbent && t.refused.empty() &&
          absl::c_linear_search(*nominated_, Id(t.tunables))) {
        out_indices.push_back(static_cast<int>(i));
      }
    }
    return out_indices;
  }

  // How many challengers one confirmation batch holds beside the recorded
  // setting and, where it is another (`incumbent_apart`), the incumbent:
  // at most kMostContenders.
  int MostContenders(bool incumbent_apart) const {
    const int room =
        std::max(1, platform_.hw_contexts / 2 - 1) - (incumbent_apart ? 1 : 0);
    return std::max(1, std::min(room, kMostContenders));
  }

  // Contenders() of `screened` against the incumbent, as many as one batch
  // holds beside the recorded setting and the incumbent (at most
  // kMostContenders); the search's own Pick(), `screen_pick`, is always
  // among them.
  std::vector<int> ContendersOf(const ShapeResult& out,
                                const std::vector<Comparison>& screened,
                                int screen_pick, double practical) const {
    const int most = MostContenders(out.incumbent != 0);
    std::vector<int> contenders =
        Contenders(screened, out.incumbent, kGainZ, practical, most);
    if (screen_pick == out.incumbent ||
        absl::c_linear_search(contenders, screen_pick)) {
      return contenders;
    }
    std::stable_sort(contenders.begin(), contenders.end(), [&](int a, int b) {
      return screened[a].delta_us < screened[b].delta_us;
    });
    if (static_cast<int>(contenders.size()) >= most) {
      contenders.resize(most - 1);
    }
    contenders.push_back(screen_pick);
    std::sort(contenders.begin(), contenders.end());
    return contenders;
  }

  // A confirmation's figures: each contender against the incumbent, member
  // by member, and the Confirmation PickConfirmed() reads.
  struct Confirmed {
    std::vector<ShapeTrial> trials;
    Confirmation figures;
    bool open = false;  // still open after kMostConfirmBatches
  };

  // The `contenders` (indices into out.trials) timed against the
  // incumbent in batches of their own, never the search's figures (a run
  // without remeasure replays a batch of the same settings from the cache,
  // under its tag: ConfirmTag), interleaved and paired round by round: each
  // trial's delta is the contender's minus the incumbent's, pooled over the
  // batches, and each contender's against each other's is pooled over the
  // batches both were in. A batch is timed again while ConfirmationOpen(), at
  // most kMostConfirmBatches, with only the contenders it names.
  absl::StatusOr<Confirmed> Confirm(const ShapeResult& out,
                                    const std::vector<int>& contenders,
                                    double incumbent_us) {
    const size_t n = contenders.size();
    std::vector<std::vector<ShapeTrial>> figures(n);
    std::vector<std::vector<std::vector<Comparison>>> pairs(
        n, std::vector<std::vector<Comparison>>(n));
    Confirmed done{std::vector<ShapeTrial>(n), {}};
    std::vector<int> open(n);
    for (size_t c = 0; c < n; ++c) open[c] = static_cast<int>(c);
    const int64_t before = stats_.device_timed;
    int batches = 0;
    for (; batches < kMostConfirmBatches && !open.empty(); ++batches) {
      RETURN_IF_ERROR(
          ConfirmBatch(out, contenders, open, batches, figures, pairs));
      done = PooledConfirmation(figures, pairs);
      ConfirmationOpen(done.figures, out.trials[out.incumbent].trial.tunables,
                       incumbent_us, options_.min_gain, kGainZ, open);
    }
    stats_.confirm_batches += batches;
    done.open = !open.empty();
    stats_.confirm_timed += stats_.device_timed - before;
    for (size_t c = 0; c < n; ++c) {
      context_.Log(absl::StrFormat(
          "    confirming %s against %s: %+.2f ± %.2f us over %d batches",
          SettingText(done.trials[c].trial.tunables),
          out.incumbent == 0
              ? "the recorded setting"
              : SettingText(out.trials[out.incumbent].trial.tunables),
          done.trials[c].trial.delta_us,
          done.trials[c].trial.noise_us.value_or(0),
          static_cast<int>(figures[c].size())));
    }
    return done;
  }

  // Confirmation batch number `batch` of the contenders `open` (indices into
  // `contenders`) beside the recorded setting and the incumbent: appends
  // each one's figure against the incumbent to `figures` and against each
  // other open one to `pairs` ([i][j]: i's time minus j's).
  absl::Status ConfirmBatch(
      const ShapeResult& out, const std::vector<int>& contenders,
      const std::vector<int>& open, int batch,
      std::vector<std::vector<ShapeTrial>>& figures,
      std::vector<std::vector<std::vector<Comparison>>>& pairs) {
    std::vector<TunableValues> todo = {found_[0]};
    if (out.incumbent != 0) {
      todo.push_back(out.trials[out.incumbent].trial.tunables);
    }
    const int base = static_cast<int>(todo.size()) - 1;
    std::vector<int> bases = {base};
    for (int c : open) {
      todo.push_back(out.trials[contenders[c]].trial.tunables);
      bases.push_back(static_cast<int>(todo.size()) - 1);
    }
    v1::Timing timing = WithDefaults(options_.timing);
    timing.set_calls(std::max<uint32_t>(2, timing.calls() / kConfirmCallShare));
    ASSIGN_OR_RETURN(std::vector<TimedBatch> timed,
                     TimeAgainst(todo, options_.remeasure, bases,
                                 ConfirmTag(todo, batch, timing), &timing));
    for (size_t k = 0; k < open.size(); ++k) {
      figures[open[k]].push_back(timed[0].trials[bases[k + 1]]);
      for (size_t l = 0; l < open.size(); ++l) {
        if (l == k) continue;
        pairs[open[k]][open[l]].push_back(
            timed[l + 1].trials[bases[k + 1]].trial);
      }
    }
    return absl::OkStatus();
  }

  // The cache tag of confirmation batch number `batch` of `todo`: the same
  // settings in the same batch of a confirmation find its figures again.
  std::string ConfirmTag(const std::vector<TunableValues>& todo, int batch,
                         const v1::Timing& timing) const {
    std::string text = absl::StrCat("confirm/", batch);
    if (timing.calls() != WithDefaults(options_.timing).calls()) {
      absl::StrAppend(&text, "/calls ", timing.calls());
    }
    for (const TunableValues& s : todo) absl::StrAppend(&text, "/", Id(s));
    return Sha256Hex(text).substr(0, 32);
  }

  // The figures so far, each pooled over its batches (a contender's own
  // figure always has one: every contender is in the first batch).
  static Confirmed PooledConfirmation(
      const std::vector<std::vector<ShapeTrial>>& figures,
      const std::vector<std::vector<std::vector<Comparison>>>& pairs) {
    const size_t n = figures.size();
    Confirmed done;
    done.figures.versus.assign(n, std::vector<Comparison>(n));
    for (size_t i = 0; i < n; ++i) {
      done.trials.push_back(PooledTrial(figures[i]));
      done.figures.against_incumbent.push_back(done.trials.back().trial);
      for (size_t j = 0; j < n; ++j) {
        if (!pairs[i][j].empty()) {
          done.figures.versus[i][j] = Pooled(pairs[i][j]);
        }
      }
    }
    return done;
  }

  // A trial's figures from several batches as one (Pooled), member by
  // member.
  static ShapeTrial PooledTrial(const std::vector<ShapeTrial>& figures) {
    ShapeTrial out = figures.front();
    std::vector<Comparison> whole;
    for (const ShapeTrial& f : figures) whole.push_back(f.trial);
    out.trial = Pooled(whole);
    for (size_t m = 0; m < out.member_delta_us.size(); ++m) {
      std::vector<Comparison> member;
      for (const ShapeTrial& f : figures) {
        Comparison one;
        one.delta_us = f.member_delta_us[m];
        one.noise_us = f.member_noise_us[m];
        member.push_back(one);
      }
      const Comparison p = Pooled(member);
      out.member_delta_us[m] = p.delta_us;
      out.member_noise_us[m] = p.noise_us;
    }
    return out;
  }

  const Shape& shape_;
  const v1::Calls& calls_;
  const Platform& platform_;
  const AutotuneOptions& options_;
  const v1::Packaging packaging_;
  // Judges outputs on a helper thread; holds the shape's CPU references.
  OutputJudge judge_;
  const KernelCycles& cycles_;
  TuneContext& context_;
  TuneStats& stats_;
  const int shape_index_;

  std::vector<TunableValues> found_;  // the candidates, recorded first
  std::function<std::string(const v1::Operator&, const TunableValues&)>
      identity_of_;
  std::string recorded_id_;
  // Id() by SettingIdentity; node-based, so Id's references stay valid.
  mutable std::map<std::string, std::string> ids_;
  mutable std::vector<const std::string*> found_ids_;   // FoundId, into ids_
  std::map<std::string, std::optional<double>> least_;  // by identity
  std::map<std::string, ShapeTrial> tried_;             // by identity
  std::optional<double> recorded_us_;
  // The setting profile entries give the shape; null where none covers it
  // (the recorded setting is the incumbent).
  const TunableValues* incumbent_;
  std::string incumbent_id_;
  int incumbent_index_ = 0;  // into found_
  // While a coordinate descent times a line: the tunable of the line it
  // times next ("" otherwise) and the setting taken before this line.
  std::string next_tunable_;
  TunableValues next_through_;
  // Whether QueueBuilds guesses: not in a search of a shape searched before.
  bool guess_builds_ = false;
  // The recorded setting's figure and its standard error, each batch.
  std::vector<double> recorded_batches_;
  std::vector<std::optional<double>> recorded_within_;
  // The same from screening batches while no full batch timed it.
  std::vector<double> screen_recorded_;
  std::vector<std::optional<double>> screen_recorded_within_;
  // Screening figures of the settings a screen left in reach, and of the
  // recorded setting, by identity.
  std::map<std::string, ShapeTrial> screened_in_;
  // The challengers Nominate() chose for confirmation, where it did.
  std::optional<std::vector<std::string>> nominated_;
};

}  // namespace

namespace {

// Which of `settings` settings fit every member: `ops` holds each
// member's design at each setting, setting[k] being ops[k]'s. Where the
// context's builder checks fits without a build they are checked now
// (Refusals: kept in the cache, so the search does not ask again); else
// all are taken to fit (Refusals will build each one to learn).
absl::StatusOr<std::vector<bool>> FitsNow(const std::vector<v1::Operator>& ops,
                                          const std::vector<size_t>& setting,
                                          size_t settings,
                                          const Platform& platform,
                                          v1::Packaging packaging,
                                          TuneContext& context) {
  std::vector<bool> fits(settings, true);
  if (!context.builder().ChecksFit()) return fits;
  ASSIGN_OR_RETURN(
      std::vector<std::string> why,
      Refusals(ops, platform, packaging, context.builder(), context.cache(),
               [&context] { return context.cancelled(); }));
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!why[k].empty()) fits[setting[k]] = false;
  }
  return fits;
}

}  // namespace

v1::Timing ScreenTiming(const v1::Timing& full) {
  v1::Timing screen = WithDefaults(full);
  screen.set_rounds(std::min(screen.rounds(), kScreenRounds));
  screen.set_calls(std::max<uint32_t>(2, screen.calls() / kScreenCallShare));
  return screen;
}

absl::StatusOr<std::vector<TunableValues>> ShapeSettings(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const SearchSpace& space,
    const std::function<void(const std::string&)>& log) {
  auto op_of = [&calls](const ShapeMember& m) -> const v1::Operator& {
    return calls.operators(static_cast<int>(m.op));
  };
  if (shape.members.empty()) return std::vector<TunableValues>();
  ASSIGN_OR_RETURN(
      std::vector<TunableValues> found,
      Settings(op_of(shape.members[0]), platform, shape.pinned, space, log));
  for (size_t m = 1; m < shape.members.size(); ++m) {
    ASSIGN_OR_RETURN(
        std::vector<TunableValues> others,
        Settings(op_of(shape.members[m]), platform, shape.pinned, space, log));
    std::vector<TunableValues> shared = {found[0]};
    for (size_t i = 1; i < found.size(); ++i) {
      if (std::any_of(others.begin(), others.end(),
                      [&](const TunableValues& o) {
                        return SettingsEqual(o, found[i]);
                      })) {
        shared.push_back(std::move(found[i]));
      }
    }
    found = std::move(shared);
  }
  return found;
}

absl::StatusOr<std::vector<bool>> SearchedBefore(
    const std::vector<Shape>& shapes, const v1::Calls& calls,
    const Platform& platform, const AutotuneOptions& options,
    TuneContext& context) {
  std::vector<bool> out(shapes.size(), false);
  Cache* cache = context.cache();
  if (cache == nullptr) return out;
  const v1::Packaging packaging = PackagingFor(options, platform);
  const std::string environment = context.builder().Environment();
  // The first member's recorded design: the shape's own (WithSetting of
  // its recorded setting is the operator as it is).
  std::vector<BuildRequest> recorded;
  std::vector<size_t> shape_of;
  for (size_t s = 0; s < shapes.size(); ++s) {
    if (shapes[s].members.empty()) continue;
    const v1::Operator& op =
        calls.operators(static_cast<int>(shapes[s].members[0].op));
    recorded.push_back(MeasureRequest(op, op, platform, 1, packaging));
    shape_of.push_back(s);
  }
  ASSIGN_OR_RETURN(const std::vector<bool> built,
                   KnownBuilt(recorded, environment, cache));
  for (size_t k = 0; k < built.size(); ++k) out[shape_of[k]] = built[k];
  return out;
}

namespace {

// Every member of a shape at every setting found (setting by setting), with
// its recorded design (at found[0]) and the setting's index.
struct MemberDesigns {
  std::vector<v1::Operator> ops, recorded;
  std::vector<size_t> setting;
};

MemberDesigns AtEverySetting(const Shape& shape, const v1::Calls& calls,
                             const std::vector<TunableValues>& found) {
  MemberDesigns out;
  for (size_t i = 0; i < found.size(); ++i) {
    for (const ShapeMember& m : shape.members) {
      const v1::Operator& op = calls.operators(static_cast<int>(m.op));
      out.ops.push_back(WithSetting(op, found[i]));
      out.recorded.push_back(WithSetting(op, found[0]));
      out.setting.push_back(i);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<BuildRequest>> ShapeBuilds(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const AutotuneOptions& options, const KernelCycles& cycles,
    TuneContext& context, const TunableValues* incumbent,
    std::vector<BuildRequest>* rest) {
  ASSIGN_OR_RETURN(std::vector<TunableValues> found,
                   ShapeSettings(shape, calls, platform, options.space));
  if (found.empty()) return std::vector<BuildRequest>();
  const v1::Packaging packaging = PackagingFor(options, platform);
  const std::string environment = context.builder().Environment();
  const auto [ops, recorded, setting] = AtEverySetting(shape, calls, found);
  ASSIGN_OR_RETURN(
      std::vector<std::optional<std::string>> verdicts,
      KeptRefusals(ops, platform, packaging, environment, context.cache()));
  for (size_t k = 0; k < ops.size() && setting[k] == 0; ++k) {
    // The recorded setting refused: the search builds nothing.
    if (verdicts[k] && !verdicts[k]->empty())
      return std::vector<BuildRequest>();
  }
  // Where fits are known without a build only the settings that fit are
  // listed; otherwise Refusals builds every 1-step design.
  const bool checks_fit = context.builder().ChecksFit();
  ASSIGN_OR_RETURN(
      const std::vector<bool> fits,
      FitsNow(ops, setting, found.size(), platform, packaging, context));
  if (!fits[0]) return std::vector<BuildRequest>();
  const std::vector<bool> timed =
      FirstTimed(found, fits, shape, platform, options, cycles, incumbent);
  std::vector<BuildRequest> one_step;
  for (size_t k = 0; k < ops.size(); ++k)
    one_step.push_back(
        MeasureRequest(ops[k], recorded[k], platform, 1, packaging));
  ASSIGN_OR_RETURN(const std::vector<bool> built,
                   KnownBuilt(one_step, environment, context.cache()));
  std::vector<BuildRequest> ones, manys;
  for (size_t k = 0; k < ops.size(); ++k) {
    // Known to the cache: built (its figure is found without a build), or
    // refused; without fit checks, a kept verdict was a build's.
    const bool known = built[k] || (!checks_fit && verdicts[k]);
    if (known || !fits[setting[k]]) continue;
    if (!checks_fit || timed[setting[k]]) {
      ones.push_back(std::move(one_step[k]));
    }
    if (found.size() > 1 && timed[setting[k]]) {
      manys.push_back(MeasureRequest(ops[k], recorded[k], platform,
                                     options.repeats, packaging));
    } else if (rest != nullptr && found.size() > 1) {
      // Without fit checks its 1-step design is listed above.
      if (checks_fit) rest->push_back(std::move(one_step[k]));
      rest->push_back(MeasureRequest(ops[k], recorded[k], platform,
                                     options.repeats, packaging));
    }
  }
  ones.insert(ones.end(), manys.begin(), manys.end());
  return ones;
}

v1::Packaging PackagingFor(const AutotuneOptions& options,
                           const Platform& platform) {
  return options.packaging.value_or(DefaultPackaging(platform));
}

absl::StatusOr<ShapeResult> TimeShape(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const AutotuneOptions& options, const KernelCycles& cycles,
    TuneContext& context, TuneStats* stats, int shape_index,
    const TunableValues* incumbent) {
  TuneStats own_stats;
  return ShapeSearch(shape, calls, platform, options, cycles, context,
                     stats != nullptr ? *stats : own_stats, shape_index,
                     incumbent)
      .Run();
}

}  // namespace irontune
