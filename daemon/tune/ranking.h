// Ranking before building (docs/search.md, "Ranking before building"):
// which of a shape's settings a search builds and times next, and when it
// stops, from a CostModel fit to what is known: the figures of the class's
// other shapes (a daemon's CostKnowledge) and the shape's own figures as
// they come in. A setting is built only where the model, allowing for its
// own error, says it may beat the best figure so far by the practical
// margin.
//
// Threads: one at a time. Failure: the model's fit (Internal); otherwise
// nothing fails. Deterministic: equal inputs give equal rounds.
#ifndef IRONTUNE_DAEMON_TUNE_RANKING_H_
#define IRONTUNE_DAEMON_TUNE_RANKING_H_

#include <limits>
#include <map>
#include <set>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/tune/cost_model.h"

namespace irontune {

// Settings a round offers besides those the search always times.
inline constexpr int kRankBatch = 4;
// How many of the model's errors a setting's prediction is given: it is
// built while its prediction less kRankZ errors beats the mark.
inline constexpr double kRankZ = 2.0;
// The model's error (rms, log cost) assumed before any prediction was
// checked against a figure, and counted as one more checked prediction
// after.
inline constexpr double kPriorError = 0.03;
// A setting's error grows with its distance from the settings timed: by
// (1 + kFarError x distance), the distance in [0, 1] (Nearest).
inline constexpr double kFarError = 3.0;
// Rounds in a row that may find nothing faster by the margin before the
// search stops: kPatience where the class's other shapes taught the
// model, kColdPatience where nothing was known of it.
inline constexpr int kPatience = 1;
inline constexpr int kColdPatience = 2;
// Patience holds only while the model's error is at most this: a model
// that ranks the shape badly does not end its search.
inline constexpr double kTrusted = 0.06;
// The checked predictions the error is taken over: the latest.
inline constexpr size_t kErrorWindow = 8;
// A shape's own figures weigh this much more than its class's others'.
inline constexpr double kOwnWeight = 8.0;

class Ranking {
 public:
  // `features[i]` is setting i's (FeaturesOf), setting 0 the recorded one;
  // `prior` is what is known of the class's other shapes; `min_gain` the
  // practical margin (a share of the step).
  Ranking(std::vector<CostFeatures> features, std::vector<CostSample> prior,
          double min_gain);

  // Setting i was timed: its log cost (CostSample; the recorded setting's
  // too). Where a round offered it, its prediction's error is kept. A
  // setting not `admitted` (its output failed the gate) teaches the model
  // its time, but is never the best to beat.
  void Timed(int i, double log_cost, bool admitted = true);

  // Setting i is not to be offered: refused, or ruled out another way.
  void Dropped(int i);

  bool Known(int i) const { return timed_.contains(i) || dropped_.contains(i); }

  // Up to `most` settings not yet known, most promising first: those whose
  // predicted time, less kRankZ errors (each grown with the setting's
  // distance from those timed), beats the best figure so far by more than
  // min_gain of it (every one, before the shape has a figure), fastest
  // predicted first. Empty: the search may stop, also once the calls
  // since the last that found a figure faster by the margin number
  // kPatience (kColdPatience with no prior) while the model's error is at
  // most kTrusted. With nothing to fit (fewer
  // than two figures of the shape and none of the class), the settings
  // farthest (in features) from those known, a spread to learn from.
  // `besides` (a round's settings chosen another way) are not offered.
  absl::StatusOr<std::vector<int>> Next(int most,
                                        const std::vector<int>& besides = {});

  // The model's error: the rms of its latest kErrorWindow checked
  // predictions, with kPriorError counted as one of them.
  double Error() const;

  // Predictions checked against a figure so far.
  int checked() const { return static_cast<int>(errors_.size()); }

 private:
  std::vector<int> Spread(int most, const std::vector<int>& besides) const;
  // The model's predictions for `open`, its bias on the shape's own
  // figures taken off; empty where there is nothing to fit.
  absl::StatusOr<std::vector<double>> Predicted(
      const std::vector<int>& open) const;
  // Counts a call whose `best` is not faster than the last call's by the
  // margin; true once kPatience (kColdPatience) such calls in a row ran
  // while the model's error was at most kTrusted.
  bool Idle(double best);
  // The distance of settings a and b in features scaled to [0, 1], over
  // the square root of the features' count: in [0, 1].
  double Distance(int a, int b) const;
  // The distance of setting i to the nearest setting timed (1: none).
  double Nearest(int i) const;
  std::vector<CostSample> Samples() const;

  std::vector<CostFeatures> features_;
  // Each feature's least and greatest value over the settings, where
  // they differ.
  std::map<std::string, std::pair<float, float>> range_;
  std::vector<CostSample> prior_;
  double min_gain_;
  std::map<int, double> timed_;  // by setting
  std::set<int> admitted_;       // of timed_
  std::set<int> dropped_;
  std::map<int, double> offered_;  // a round's prediction, by setting
  std::vector<double> errors_;     // figure - prediction, log us
  // The best figure when Next was last called, and the calls since that
  // found nothing faster by the margin.
  double last_best_ = std::numeric_limits<double>::infinity();
  int idle_rounds_ = 0;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_RANKING_H_
