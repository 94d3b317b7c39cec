#include "daemon/tune/settings_timer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/base/stats.h"

namespace irontune {

ShapeTrial Untimed(const TunableValues& s, size_t members) {
  ShapeTrial t;
  t.trial.tunables = s;
  t.trial.noise_us = 0;
  t.member_delta_us.assign(members, 0);
  t.member_noise_us.assign(members, 0.0);
  return t;
}

SettingsTimer::SettingsTimer(const std::vector<TunableValues>& todo,
                             size_t members, int base)
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

void SettingsTimer::Add(size_t m, double w, const MeasureOutcome& outcome) {
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
      if (trial.refused.empty()) trial.refused = WhyUnmeasured(outcome, base_);
      noises_[i][m].push_back(std::nullopt);
      continue;
    }
    const Delta d = base_ == 0
                        ? AgainstDefault(it->second)
                        : MeasurementDifference(it->second, base->second);
    trials_[i].member_delta_us[m] += w * d.delta_us;
    noises_[i][m].push_back(d.noise_us ? std::optional<double>(w * *d.noise_us)
                                       : std::nullopt);
  }
}

std::vector<int> SettingsTimer::ToJudge(const MeasureOutcome& outcome) const {
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

void SettingsTimer::Refuse(const std::map<int, std::string>& verdicts) {
  for (const auto& [i, why] : verdicts) {
    if (!why.empty()) trials_[i].trial.refused = why;
  }
}

TimedBatch SettingsTimer::Finish() && {
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

std::string SettingsTimer::WhyUnmeasured(const MeasureOutcome& outcome,
                                         size_t i) {
  auto why = outcome.refused.find(static_cast<int>(i));
  return why != outcome.refused.end()
             ? absl::StrCat("does not build: ", why->second)
             : "not measured";
}

}  // namespace irontune
