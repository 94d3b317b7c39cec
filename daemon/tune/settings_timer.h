// SettingsTimer: the figures of one batch of a shape's settings, each
// against a base setting, added Measure by Measure over the shape's
// members and their points. Part of TimeShape's search (shape_search.h);
// not used elsewhere.
//
// Threads: not thread-safe; one search's. Failure: none (a setting a
// Measure left out is a refused trial).
#ifndef IRONTUNE_DAEMON_TUNE_SETTINGS_TIMER_H_
#define IRONTUNE_DAEMON_TUNE_SETTINGS_TIMER_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/tune/measure.h"
#include "daemon/tune/search.h"
#include "daemon/tune/shape_task.h"

namespace irontune {

// A setting's trial with no figures: delta 0, noise 0, for `members`.
ShapeTrial Untimed(const TunableValues& s, size_t members);

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
                int base = 0);

  // Adds one Measure of member `m` at a point of weight `w`; the outputs
  // are judged apart (ToJudge, Refuse).
  void Add(size_t m, double w, const MeasureOutcome& outcome);

  // The settings of `outcome` (as Add took it) whose output is to be
  // judged: against the recorded setting, measured, not refused so far.
  std::vector<int> ToJudge(const MeasureOutcome& outcome) const;

  // Takes the judge's verdicts, by setting ("" admitted).
  void Refuse(const std::map<int, std::string>& verdicts);

  // The batch's figures: each trial's delta summed over the members, its
  // noise in quadrature over the points and members. Ends the timer.
  TimedBatch Finish() &&;

 private:
  static std::string WhyUnmeasured(const MeasureOutcome& outcome, size_t i);

  const int base_;
  std::vector<ShapeTrial> trials_;
  // By setting, member and point.
  std::vector<std::vector<std::vector<std::optional<double>>>> noises_;
  double recorded_us_ = 0;
  std::vector<std::optional<double>> recorded_noise_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_SETTINGS_TIMER_H_
