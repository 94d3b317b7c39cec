#include "daemon/tune/ranking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/algorithm/container.h"
#include "common/status_macros.h"

namespace irontune {
Ranking::Ranking(std::vector<CostFeatures> features,
                 std::vector<CostSample> prior, double min_gain)
    : features_(std::move(features)),
      prior_(std::move(prior)),
      min_gain_(min_gain) {
  // Each feature scaled to [0, 1] over the shape's settings, so no one
  // dominates a distance.
  for (const CostFeatures& f : features_) {
    for (const auto& [name, v] : f) {
      if (std::isnan(v)) continue;
      auto [it, added] = range_.try_emplace(name, v, v);
      it->second.first = std::min(it->second.first, v);
      it->second.second = std::max(it->second.second, v);
    }
  }
  std::erase_if(range_, [](const auto& r) {
    return !(r.second.second > r.second.first);
  });
}

double Ranking::Distance(int a, int b) const {
  if (range_.empty()) return 0;
  double d = 0;
  for (const auto& [name, r] : range_) {
    auto x = features_[a].find(name), y = features_[b].find(name);
    if (x == features_[a].end() || y == features_[b].end() ||
        std::isnan(x->second) || std::isnan(y->second)) {
      continue;
    }
    const double t = (x->second - y->second) / (r.second - r.first);
    d += t * t;
  }
  return std::sqrt(d / static_cast<double>(range_.size()));
}

double Ranking::Nearest(int i) const {
  double nearest = 1;
  for (const auto& [k, log_cost] : timed_) {
    nearest = std::min(nearest, Distance(i, k));
  }
  return nearest;
}

void Ranking::Timed(int i, double log_cost, bool admitted) {
  timed_[i] = log_cost;
  if (admitted) admitted_.insert(i);
  auto it = offered_.find(i);
  if (it == offered_.end()) return;
  errors_.push_back(log_cost - it->second);
  offered_.erase(it);
}

void Ranking::Dropped(int i) {
  dropped_.insert(i);
  offered_.erase(i);
}

double Ranking::Error() const {
  // The model improves as figures come in: its latest predictions tell.
  const size_t from =
      errors_.size() > kErrorWindow ? errors_.size() - kErrorWindow : 0;
  double sum = kPriorError * kPriorError;
  for (size_t k = from; k < errors_.size(); ++k) sum += errors_[k] * errors_[k];
  return std::sqrt(sum / static_cast<double>(errors_.size() - from + 1));
}

std::vector<CostSample> Ranking::Samples() const {
  std::vector<CostSample> out = prior_;
  for (const auto& [i, log_cost] : timed_) {
    out.push_back({features_[i], log_cost, kOwnWeight});
  }
  return out;
}

absl::StatusOr<std::vector<double>> Ranking::Predicted(
    const std::vector<int>& open) const {
  CostModel model;
  if (timed_.size() >= 2 || !prior_.empty()) {
    absl::Status fit = model.Fit(Samples());
    if (!fit.ok()) return fit;
  }
  std::vector<CostFeatures> rows;
  for (int i : open) rows.push_back(features_[i]);
  std::vector<double> predicted = model.Predict(rows);
  if (predicted.size() != open.size()) return std::vector<double>();
  // The model's bias on the shape's own figures, taken off its predictions.
  std::vector<CostFeatures> own;
  for (const auto& [i, log_cost] : timed_) own.push_back(features_[i]);
  const std::vector<double> fitted = model.Predict(own);
  double bias = 0;
  size_t k = 0;
  for (const auto& [i, log_cost] : timed_) bias += log_cost - fitted[k++];
  bias /= static_cast<double>(std::max<size_t>(1, timed_.size()));
  for (double& p : predicted) p += bias;
  return predicted;
}

bool Ranking::Idle(double best) {
  if (std::isfinite(last_best_) &&
      !(best < last_best_ + std::log1p(-min_gain_))) {
    ++idle_rounds_;
  } else if (std::isfinite(best)) {
    idle_rounds_ = 0;
  }
  last_best_ = std::min(last_best_, best);
  return Error() <= kTrusted &&
         idle_rounds_ >= (prior_.empty() ? kColdPatience : kPatience);
}

absl::StatusOr<std::vector<int>> Ranking::Next(
    int most, const std::vector<int>& besides) {
  std::vector<int> open;
  for (int i = 0; i < static_cast<int>(features_.size()); ++i) {
    if (!Known(i) && absl::c_find(besides, i) == besides.end()) {
      open.push_back(i);
    }
  }
  if (open.empty() || most <= 0) return std::vector<int>();
  ASSIGN_OR_RETURN(const std::vector<double> predicted, Predicted(open));
  if (predicted.empty()) return Spread(most, besides);
  double best = std::numeric_limits<double>::infinity();
  for (int i : admitted_) best = std::min(best, timed_.at(i));
  // Rounds that found nothing faster by the margin: enough of them end
  // the search, however much the model still hopes for.
  if (Idle(best)) return std::vector<int>();
  // With no figure of its own yet, every setting is in reach: the model
  // only orders them.
  const double mark = best + std::log1p(-min_gain_);
  const double error = Error();
  // Those that may be faster (their prediction less kRankZ errors, the
  // error growing with the distance from the settings timed), fastest
  // predicted first, then in the settings' order (trees predict many
  // alike).
  std::vector<std::pair<double, int>> ranked;
  for (size_t j = 0; j < open.size(); ++j) {
    const double p = predicted[j];
    const double may = p - kRankZ * error * (1 + kFarError * Nearest(open[j]));
    if (may < mark) ranked.push_back({p, open[j]});
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<int> out;
  for (const auto& [p, i] : ranked) {
    if (static_cast<int>(out.size()) == most) break;
    out.push_back(i);
    offered_[i] = p;
  }
  return out;
}

std::vector<int> Ranking::Spread(int most,
                                 const std::vector<int>& besides) const {
  std::vector<int> chosen = besides;
  for (const auto& [i, log_cost] : timed_) chosen.push_back(i);
  if (chosen.empty()) chosen.push_back(0);
  std::vector<int> out;
  while (static_cast<int>(out.size()) < most) {
    int pick = -1;
    double far = -1;
    for (int i = 0; i < static_cast<int>(features_.size()); ++i) {
      if (Known(i) ||
          std::find(chosen.begin(), chosen.end(), i) != chosen.end()) {
        continue;
      }
      double nearest = std::numeric_limits<double>::infinity();
      for (int c : chosen) nearest = std::min(nearest, Distance(i, c));
      if (nearest > far) {
        far = nearest;
        pick = i;
      }
    }
    if (pick < 0) break;
    out.push_back(pick);
    chosen.push_back(pick);
  }
  return out;
}

}  // namespace irontune
