#include "daemon/tune/shape_search.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/defaults.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/base/sha256.h"
#include "daemon/base/stats.h"
#include "daemon/store/cache.h"

namespace irontune {

ResolvedTiming ScreenTiming(const ResolvedTiming& full) {
  return full.WithRounds(std::min(full.rounds(), kScreenRounds))
      .WithCalls(std::max<uint32_t>(2, full.calls() / kScreenCallShare));
}

absl::StatusOr<ShapeResult> TimeShape(const ShapeTask& task) {
  TuneStats own_stats;
  return ShapeSearch(task, task.stats != nullptr ? *task.stats : own_stats)
      .Run();
}

absl::StatusOr<ShapeResult> ShapeSearch::Run() {
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
    context_.Log(absl::StrCat("    the recorded setting does not build (", why,
                              "); kept untimed"));
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
  if (options_.rank && found_.size() > kRankBatch + 2) {
    RETURN_IF_ERROR(Ranked());
  } else if (static_cast<int>(found_.size()) <= options_.exhaustive) {
    RETURN_IF_ERROR(Exhaustive());
  } else {
    RETURN_IF_ERROR(CoordinateDescent());
  }
  Collect(out);
  RETURN_IF_ERROR(ChoiceOf().Choose(out));
  return out;
}

ShapeChoice ShapeSearch::ChoiceOf() {
  Searched searched{found_[0], recorded_us_, nominated_};
  return ShapeChoice(
      task_, stats_, std::move(searched),
      [this](const std::vector<TunableValues>& todo,
             const std::vector<int>& bases, const std::string& tag,
             const ResolvedTiming& timing) {
        return TimeAgainst(todo, options_.remeasure, bases, tag, &timing);
      },
      [this](const TunableValues& s) -> const std::string& { return Id(s); });
}

const v1::Operator& ShapeSearch::OpOf(const ShapeMember& m) const {
  return calls_.operators(static_cast<int>(m.op));
}

absl::Status ShapeSearch::FindCandidates() {
  ASSIGN_OR_RETURN(found_,
                   ShapeSettings(shape_, calls_, platform_, options_.space,
                                 [this](const std::string& line) {
                                   context_.Log("    " + line);
                                 }));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ShapeSearch::RefusalOf(const TunableValues& s) {
  for (const ShapeMember& m : shape_.members) {
    ASSIGN_OR_RETURN(std::string why,
                     Refusal(WithSetting(OpOf(m), s), platform_, packaging_,
                             context_.builder(), context_.cache()));
    if (!why.empty()) return why;
  }
  return std::string();
}

bool ShapeSearch::RanksWithoutFits() const {
  return options_.rank && found_.size() > kRankBatch + 2 &&
         !context_.builder().ChecksFit();
}

absl::Status ShapeSearch::DropUnbuildable() {
  // Every member at every setting, looked up and built together.
  std::vector<v1::Operator> ops;
  for (size_t i = 1; i < found_.size(); ++i) {
    for (const ShapeMember& m : shape_.members) {
      ops.push_back(WithSetting(OpOf(m), found_[i]));
    }
  }
  std::vector<std::string> refusals;
  if (RanksWithoutFits()) {
    ASSIGN_OR_RETURN(
        const std::vector<std::optional<std::string>> kept,
        KeptRefusals(ops, platform_, packaging_,
                     context_.builder().Environment(), context_.cache()));
    for (const std::optional<std::string>& why : kept) {
      refusals.push_back(why.value_or(""));
    }
  } else {
    ASSIGN_OR_RETURN(
        refusals,
        Refusals(ops, platform_, packaging_, context_.builder(),
                 context_.cache(), [this] { return context_.cancelled(); }));
  }
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
                              found_.size(), " settings the builder refuses"));
  }
  found_ = std::move(fit);
  return absl::OkStatus();
}

void ShapeSearch::PrepareSearch() {
  identity_of_ = CompleteSearchSpace(options_.space).identity;
  found_ids_.clear();
  recorded_id_ = Id(found_[0]);
  incumbent_id_ = recorded_id_;
  if (incumbent_ != nullptr) {
    auto it = std::find_if(
        found_.begin(), found_.end(),
        [&](const TunableValues& s) { return SettingsEqual(s, *incumbent_); });
    if (it != found_.end()) {
      incumbent_index_ = static_cast<int>(it - found_.begin());
      incumbent_id_ = Id(*it);
    } else {
      context_.Log(absl::StrCat("    the profile's ", SettingText(*incumbent_),
                                " is not among the settings; the recorded "
                                "one is the incumbent"));
    }
  }
  if (!MayBeBounded(shape_, platform_, cycles_)) return;
  for (size_t i = 1; i < found_.size(); ++i) {
    least_[Id(found_[i])] = LeastUsOf(found_[i]);
  }
}

const std::string& ShapeSearch::FoundId(size_t i) const {
  if (found_ids_.size() != found_.size()) {
    found_ids_.clear();
    for (const TunableValues& s : found_) found_ids_.push_back(&Id(s));
  }
  return *found_ids_[i];
}

const std::string& ShapeSearch::Id(const TunableValues& s) const {
  auto [it, added] = ids_.try_emplace(SettingIdentity(s));
  if (added) it->second = identity_of_(OpOf(shape_.members[0]), s);
  return it->second;
}

std::optional<double> ShapeSearch::LeastUsOf(const TunableValues& s) const {
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

bool ShapeSearch::Slower(const TunableValues& s) const {
  auto it = least_.find(Id(s));
  if (it == least_.end() || !it->second || !recorded_us_) return false;
  double best = 0;
  for (const auto& [key, t] : tried_) {
    if (t.trial.Gains()) best = std::min(best, t.trial.delta_us);
  }
  return *it->second >= *recorded_us_ + best;
}

absl::Status ShapeSearch::TimeBatch(const std::vector<TunableValues>& batch,
                                    bool recorded_alone, bool whole) {
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

bool ShapeSearch::Nominate(const std::vector<TunableValues>& todo) {
  std::vector<std::string> challengers;
  for (size_t i = 1; i < todo.size(); ++i) {
    if (Id(todo[i]) != incumbent_id_) challengers.push_back(Id(todo[i]));
  }
  if (static_cast<int>(challengers.size()) >
      MostContenders(platform_, incumbent_id_ != recorded_id_)) {
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

bool ShapeSearch::RacesAny(const std::vector<TunableValues>& todo) const {
  return std::any_of(todo.begin() + 1, todo.end(), [&](const TunableValues& s) {
    return Id(s) != incumbent_id_;
  });
}

absl::StatusOr<std::vector<TunableValues>> ShapeSearch::Screen(
    const std::vector<TunableValues>& todo) {
  const ResolvedTiming screen = ScreenTiming(options_.timing);
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

std::string ShapeSearch::ScreenTag(const ResolvedTiming& screen) {
  return absl::StrCat("screen/", screen.rounds(), "/", screen.calls());
}

void ShapeSearch::ReportPick() {
  std::vector<ShapeTrial> trials;
  const int incumbent = TriedInOrder(trials);
  const int pick = PickAmong(incumbent, trials);
  context_.OnPick(shape_index_, pick >= 0 && pick != incumbent
                                    ? &trials[pick].trial
                                    : nullptr);
}

absl::StatusOr<TimedBatch> ShapeSearch::TimeSettings(
    const std::vector<TunableValues>& todo, bool remeasure, int base) {
  ASSIGN_OR_RETURN(std::vector<TimedBatch> timed,
                   TimeAgainst(todo, remeasure, {base}));
  return std::move(timed.front());
}

absl::StatusOr<std::vector<TimedBatch>> ShapeSearch::TimeAgainst(
    const std::vector<TunableValues>& todo, bool remeasure,
    const std::vector<int>& bases, const std::string& cache_tag,
    const ResolvedTiming* timing) {
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
  for (SettingsTimer& timer : timers) out.push_back(std::move(timer).Finish());
  return out;
}

absl::Status ShapeSearch::JudgeDone(SettingsTimer* timer) {
  using Verdicts = std::map<int, std::string>;
  ASSIGN_OR_RETURN(const Verdicts verdicts, judge_.Finish());
  if (timer != nullptr) timer->Refuse(verdicts);
  return absl::OkStatus();
}

MeasurePlan ShapeSearch::PlanFor(const ShapeMember& member,
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

void ShapeSearch::Count(const MeasureOutcome& outcome) {
  ++stats_.measure_calls;
  stats_.cache_hits += static_cast<int64_t>(outcome.cached.size());
  stats_.device_timed +=
      static_cast<int64_t>(outcome.measurements.size() - outcome.cached.size());
}

absl::Status ShapeSearch::Exhaustive() {
  const bool bounded = std::any_of(least_.begin(), least_.end(),
                                   [](const auto& l) { return l.second; });
  // The recorded setting's own time first, which a bound is held to.
  if (bounded) RETURN_IF_ERROR(TimeBatch({}, true));
  return TimeBatch(found_, false, /*whole=*/true);
}

absl::Status ShapeSearch::Ranked() {
  std::vector<CostFeatures> features;
  for (const TunableValues& s : found_) {
    features.push_back(FeaturesOf(shape_.dims, s));
  }
  CostKnowledge* knowledge = context_.costs();
  std::vector<CostSample> prior;
  if (knowledge != nullptr) {
    prior = knowledge->SamplesOf(shape_.class_name, shape_.key);
  }
  Ranking ranking(std::move(features), std::move(prior), options_.min_gain);
  ASSIGN_OR_RETURN(const std::vector<std::vector<int>> kept, RankedBefore());
  replayed_ = !kept.empty();
  std::vector<std::vector<int>> done;
  std::vector<int> round;
  if (replayed_) {
    round = kept[0];
  } else {
    ASSIGN_OR_RETURN(round, FirstRound(ranking));
  }
  while (!round.empty()) {
    std::vector<TunableValues> batch;
    for (int i : round) batch.push_back(found_[i]);
    RETURN_IF_ERROR(QueueBuilds(batch, /*later=*/false, /*guess=*/false));
    RETURN_IF_ERROR(TimeBatch(batch, done.empty()));
    Teach(ranking, round);
    done.push_back(std::move(round));
    if (replayed_) {
      round =
          done.size() < kept.size() ? kept[done.size()] : std::vector<int>();
    } else {
      ASSIGN_OR_RETURN(round, ranking.Next(kRankBatch));
    }
  }
  stats_.rank_rounds += static_cast<int64_t>(done.size());
  context_.Log(absl::StrFormat(
      "    ranked: %d rounds%s; the model's error %.3f (log) over %d "
      "predictions",
      static_cast<int>(done.size()), replayed_ ? ", replayed" : "",
      ranking.Error(), ranking.checked()));
  if (knowledge != nullptr) {
    knowledge->Learn(shape_.class_name, shape_.key, Samples());
  }
  return replayed_ ? absl::OkStatus() : KeepRanked(done);
}

absl::StatusOr<std::vector<int>> ShapeSearch::FirstRound(Ranking& ranking) {
  std::vector<int> out;
  if (incumbent_index_ != 0) out.push_back(incumbent_index_);
  // Settings whose figures the cache holds (a search cut short) come
  // without a build.
  std::vector<BuildRequest> one_step;
  const ShapeMember& first = shape_.members[0];
  const v1::Operator recorded = WithSetting(OpOf(first), found_[0]);
  for (const TunableValues& s : found_) {
    one_step.push_back(MeasureRequest(WithSetting(OpOf(first), s), recorded,
                                      platform_, 1, packaging_));
  }
  ASSIGN_OR_RETURN(
      const std::vector<bool> built,
      KnownBuilt(one_step, context_.builder().Environment(), context_.cache()));
  for (size_t i = 1; i < found_.size(); ++i) {
    const int k = static_cast<int>(i);
    if (built[i] && k != incumbent_index_) out.push_back(k);
  }
  ASSIGN_OR_RETURN(const std::vector<int> more, ranking.Next(kRankBatch, out));
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

VerdictKey ShapeSearch::RankedKey() const {
  std::string text =
      absl::StrCat("ranked search/1\n", platform_.name, "\n", shape_.key, "\n",
                   options_.timing.rounds(), "x", options_.timing.calls(), "\n",
                   options_.min_gain, "\n", incumbent_id_, "\n");
  for (size_t i = 0; i < found_.size(); ++i) {
    absl::StrAppend(&text, FoundId(i), "\n");
  }
  return {absl::StrCat("ranked:", Sha256Hex(text)),
          context_.builder().Environment()};
}

absl::StatusOr<std::vector<std::vector<int>>> ShapeSearch::RankedBefore()
    const {
  std::vector<std::vector<int>> rounds;
  Cache* cache = context_.cache();
  if (cache == nullptr) return rounds;
  ASSIGN_OR_RETURN(const std::optional<std::string> kept,
                   cache->GetVerdict(RankedKey()));
  if (!kept) return rounds;
  for (absl::string_view text : absl::StrSplit(*kept, ';')) {
    std::vector<int>& round = rounds.emplace_back();
    for (absl::string_view index : absl::StrSplit(text, ',')) {
      int i = 0;
      if (!absl::SimpleAtoi(index, &i) || i < 0 ||
          i >= static_cast<int>(found_.size())) {
        return std::vector<std::vector<int>>();  // not ours: search afresh
      }
      round.push_back(i);
    }
  }
  return rounds;
}

absl::Status ShapeSearch::KeepRanked(
    const std::vector<std::vector<int>>& rounds) {
  Cache* cache = context_.cache();
  if (cache == nullptr || rounds.empty()) return absl::OkStatus();
  std::vector<std::string> texts;
  for (const std::vector<int>& round : rounds) {
    texts.push_back(absl::StrJoin(round, ","));
  }
  return cache->PutVerdict(RankedKey(), absl::StrJoin(texts, ";"));
}

void ShapeSearch::Teach(Ranking& ranking, const std::vector<int>& round) const {
  if (!recorded_us_ || !(*recorded_us_ > 0)) return;
  const double work = LogWork(shape_.dims);
  ranking.Timed(0, std::log(*recorded_us_) - work);
  for (int i : round) {
    if (i == 0) continue;
    const std::string& key = FoundId(static_cast<size_t>(i));
    const ShapeTrial* t = nullptr;
    if (auto it = tried_.find(key); it != tried_.end()) t = &it->second;
    if (t == nullptr) {
      if (auto it = screened_in_.find(key); it != screened_in_.end()) {
        t = &it->second;
      }
    }
    const double us = t != nullptr ? *recorded_us_ + t->trial.delta_us : 0;
    // A setting the judge refused was timed all the same: its figure
    // teaches the model, though it is never taken.
    if (t != nullptr && t->trial.noise_us && us > 0) {
      ranking.Timed(i, std::log(us) - work, t->trial.refused.empty());
    } else {
      ranking.Dropped(i);
    }
  }
}

std::vector<CostSample> ShapeSearch::Samples() const {
  std::vector<CostSample> out;
  if (!recorded_us_ || !(*recorded_us_ > 0)) return out;
  std::map<std::string, const ShapeTrial*> figures;
  for (const auto& [key, t] : screened_in_) figures[key] = &t;
  for (const auto& [key, t] : tried_) figures[key] = &t;
  for (size_t i = 0; i < found_.size(); ++i) {
    auto it = figures.find(FoundId(i));
    if (it == figures.end()) continue;
    const Comparison& c = it->second->trial;
    const double us = *recorded_us_ + (i == 0 ? 0.0 : c.delta_us);
    if (!c.noise_us || !(us > 0)) continue;  // refused untimed
    out.push_back({FeaturesOf(shape_.dims, found_[i]),
                   std::log(us) - LogWork(shape_.dims), 1.0});
  }
  return out;
}

absl::Status ShapeSearch::CoordinateDescent() {
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

absl::Status ShapeSearch::QueueBuilds(const std::vector<TunableValues>& batch,
                                      bool later, bool guess) {
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
  ASSIGN_OR_RETURN(
      const std::vector<bool> built,
      KnownBuilt(one_step, context_.builder().Environment(), context_.cache()));
  // Each 1-step design with its many-step one behind it, as Measure waits
  // for them.
  for (size_t k = 0; k < one_step.size(); ++k) {
    if (built[k]) continue;
    for (const BuildRequest* r : {&one_step[k], &many_step[k]}) {
      if (later) {
        context_.builder().PrefetchLater(*r);
      } else {
        context_.builder().Prefetch(*r);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ShapeSearch::BuildNextLines(
    const std::vector<TunableValues>& screened) {
  if (next_tunable_.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(QueueBuilds(Line(found_, next_through_, next_tunable_),
                              /*later=*/false));
  if (screened.size() < 2) return absl::OkStatus();
  return QueueBuilds(Line(found_, screened[1], next_tunable_),
                     /*later=*/false);
}

int ShapeSearch::TriedInOrder(std::vector<ShapeTrial>& trials) const {
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

int ShapeSearch::PickAmong(int incumbent,
                           const std::vector<ShapeTrial>& trials) const {
  if (trials.empty()) return -1;
  std::vector<Comparison> comparisons;
  for (const ShapeTrial& t : trials) comparisons.push_back(t.trial);
  return Pick(comparisons, incumbent, kGainZ,
              PracticalUs(options_, recorded_us_, trials[incumbent]));
}

void ShapeSearch::Collect(ShapeResult& out) {
  out.incumbent = TriedInOrder(out.trials);
  out.best = out.incumbent;
  out.against_incumbent =
      Untimed(out.trials[out.incumbent].trial.tunables, shape_.members.size());
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

}  // namespace irontune
