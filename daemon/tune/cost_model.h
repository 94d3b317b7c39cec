// A learned model of a shape's step times, so a search decides which
// settings to build before building them (docs/search.md, "Ranking before
// building"): each setting's features, read from its shape's dims and its
// tunables without a build; gradient-boosted trees (XGBoost) fit to the
// figures timed so far; and the knowledge a daemon keeps of the figures of
// every shape it searched, by class, so a shape starts from what its
// class's other shapes showed.
//
// Threads: CostFeatures and CostModel are values, used by one thread at a
// time; CostKnowledge is thread-safe. Failure: Fit returns XGBoost's error
// as Internal (nothing else fails); a model never fit predicts nothing.
#ifndef IRONTUNE_DAEMON_TUNE_COST_MODEL_H_
#define IRONTUNE_DAEMON_TUNE_COST_MODEL_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/tune/settings.h"
#include "irontune/v1/value.pb.h"

namespace irontune {

// A setting's features by name: "d:<dim>" log2 of each dim, "t:<tunable>"
// log2 of each numeric tunable (bools 0/1, strings a stable category
// number), and for each numeric tunable and dim "r:<t>/<d>" log2 of how many
// of the tunable's tiles the dim holds and "w:<t>/<d>" the share of the
// last tile left empty. A value that is not a positive number gives no
// ratio features.
using CostFeatures = std::map<std::string, float>;

CostFeatures FeaturesOf(const std::vector<v1::Field>& dims,
                        const TunableValues& setting);

// The log of a shape's work: the sum of the natural logs of its dims that
// are positive numbers (M x K for a GEMV). A step time over it is a cost
// per unit of work, comparable across the shapes of a class.
double LogWork(const std::vector<v1::Field>& dims);

// One figure a model learns from: a setting's features and its log cost
// (the natural log of its step time in us, less LogWork of its shape's
// dims), weighted (a shape's own figures count more than its class's
// others').
struct CostSample {
  CostFeatures features;
  double log_cost = 0;
  double weight = 1;
};

// Gradient-boosted regression trees over CostFeatures, predicting log
// cost. Fitting is deterministic: one thread, exact splits, no sampling, and
// the samples' own order does not matter (they are sorted first).
class CostModel {
 public:
  CostModel();
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;

  // Fits the trees to `samples` (replacing any earlier fit). Fewer than 2
  // samples leave the model unfit (OK).
  absl::Status Fit(const std::vector<CostSample>& samples);

  bool fitted() const;

  // The predicted log step time of each of `settings`; empty where the model
  // is not fit.
  std::vector<double> Predict(const std::vector<CostFeatures>& settings) const;

 private:
  struct Trees;
  std::unique_ptr<Trees> trees_;
};

// What a daemon learned from its searches: each shape's figures (features
// and log cost) by class, at most kMostSamplesPerClass a class (the
// oldest shapes' dropped first). Held for the daemon's life.
class CostKnowledge {
 public:
  static constexpr size_t kMostSamplesPerClass = 20000;

  // Replaces what is known of shape `key` (of `class_name`) with `samples`.
  void Learn(const std::string& class_name, const std::string& key,
             std::vector<CostSample> samples) ABSL_LOCKS_EXCLUDED(mu_);

  // The samples of `class_name`'s shapes other than `except_key`, weight 1.
  std::vector<CostSample> SamplesOf(const std::string& class_name,
                                    const std::string& except_key) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Shapes known, over every class.
  size_t shapes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Shape {
    std::string key;
    std::vector<CostSample> samples;
  };
  mutable absl::Mutex mu_;
  // By class, oldest shape first.
  std::map<std::string, std::vector<Shape>> by_class_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_COST_MODEL_H_
