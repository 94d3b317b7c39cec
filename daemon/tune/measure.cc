#include "daemon/tune/measure.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/recording.h"
#include "common/status_macros.h"
#include "daemon/base/stats.h"
#include "daemon/npu/builder.h"
#include "daemon/store/cache.h"
#include "daemon/tune/measure_batch.h"
#include "daemon/tune/measure_builds.h"
#include "daemon/tune/measure_cache.h"
#include "daemon/tune/settings.h"

namespace irontune {
namespace {

uint64_t TotalBytes(const v1::Operator& op) {
  uint64_t total = 0;
  for (const v1::Buffer& b : op.buffers()) {
    total += BufferBytes(b).value_or(0);
  }
  return total;
}

// "GEMM tile_m=64 ...": the class and its tunables' values, for logs.
std::string OperatorText(const v1::Operator& op) {
  const std::string tunables = SettingText(RecordedSetting(op));
  return tunables.empty() ? op.class_name()
                          : absl::StrCat(op.class_name(), " ", tunables);
}

// One Measure call: its plan, the context, and what it has found so far.
// Plan() takes from the cache what it holds (without building where the
// cache keeps a setting's built identity) and builds the rest's 1-step
// designs; then each batch is loaded, run once for its output, timed
// interleaved and recorded, the later batches' designs building meanwhile.
// The building, the cached figures and the batches are units of their own
// (MeasureBuilds, MeasureCache, MeasureBatches).
class Measurer {
 public:
  Measurer(const MeasurePlan& plan, TuneContext& context)
      : plan_(plan),
        context_(context),
        n_(static_cast<int>(plan.settings.size())) {}

  absl::StatusOr<MeasureOutcome> Run() {
    RETURN_IF_ERROR(Check());
    RETURN_IF_ERROR(Plan());
    // Each setting is two images, one context each; one pair is the
    // default's.
    const size_t batch_size =
        static_cast<size_t>(std::max(1, platform_.hw_contexts / 2 - 1));
    RETURN_IF_ERROR(PlanUpTo(batch_size));
    if (todo_.empty() && outcome_.measurements.count(0) > 0) {
      return std::move(outcome_);
    }
    for (size_t begin = 0; begin < std::max<size_t>(todo_.size(), 1);
         begin += batch_size) {
      std::vector<int> batch = {0};
      for (size_t k = begin; k < std::min(todo_.size(), begin + batch_size);
           ++k) {
        batch.push_back(todo_[k]);
      }
      context_.Log(absl::StrFormat("    timing %d settings, %d to go",
                                   batch.size(), Left() - begin));
      absl::Status timed = batches_->Time(batch);
      if (timed.ok()) timed = PlanUpTo(begin + 2 * batch_size);
      if (!timed.ok()) {
        // The batches timed before still count.
        batches_->Finish().IgnoreError();
        return timed;
      }
    }
    RETURN_IF_ERROR(batches_->Finish());
    return std::move(outcome_);
  }

 private:
  absl::Status Check() {
    if (plan_.settings.empty()) {
      return absl::InvalidArgumentError("settings: none given");
    }
    if (plan_.repeats < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("repeats: ", plan_.repeats, " (at least 2)"));
    }
    ASSIGN_OR_RETURN(platform_, context_.device().GetPlatform());
    if (plan_.packaging == v1::PACKAGING_FULL_ELF && !platform_.full_elf) {
      return absl::FailedPreconditionError(absl::StrCat(
          platform_.name, " has no full-ELF dispatch; use the xclbin chain"));
    }
    if (context_.cache() != nullptr) {
      RETURN_IF_ERROR(context_.cache()->CheckPowerMode(platform_.power_mode));
    }
    builds_.emplace(plan_, platform_, context_);
    cache_.emplace(plan_, *builds_, context_);
    batches_.emplace(plan_, *builds_, *cache_, context_, outcome_);
    return absl::OkStatus();
  }

  // Takes what the cache holds without building (KnownFigures) and queues
  // the rest's designs, each setting's 1-step design with its many-step
  // one behind it, in the order they are timed, so a builder with threads
  // builds the first batch's first; then waits for the default's 1-step
  // design. The rest are waited for batch by batch (PlanUpTo), so the
  // first batch is timed while the later ones build.
  absl::Status Plan() {
    std::vector<bool> known(n_, false);
    RETURN_IF_ERROR(cache_->KnownFigures(known, outcome_));
    for (int i = 0; i < n_; ++i) {
      if (!known[i]) unplanned_.push_back(i);
    }
    if (!unplanned_.empty() && unplanned_.front() != 0) {
      unplanned_.push_front(0);
    }
    default_known_ = known[0];
    for (int i : unplanned_) builds_->Prefetch(i);
    return PlanUpTo(0);
  }

  // Waits for the 1-step designs of the settings not planned yet, in order
  // (PlanBuilt), until `want` are left to time or none is left to plan. The
  // default is planned first, whatever `want`.
  absl::Status PlanUpTo(size_t want) {
    while (!unplanned_.empty() &&
           (unplanned_.front() == 0 || todo_.size() < want)) {
      const int i = unplanned_.front();
      unplanned_.pop_front();
      RETURN_IF_ERROR(PlanBuilt(i, i == 0 && default_known_));
    }
    return absl::OkStatus();
  }

  // The settings left to time, with those not planned yet (some of which
  // may turn out refused or cached).
  size_t Left() const { return todo_.size() + unplanned_.size(); }

  // Setting `i`'s 1-step build: refused (left out; the default's refusal
  // is an error), or built, its identity kept, its figure taken from the
  // cache unless `taken` already or there is none.
  absl::Status PlanBuilt(int i, bool taken) {
    std::string refusal;
    ASSIGN_OR_RETURN(std::optional<Artifact> one,
                     builds_->AwaitOneStep(i, &refusal));
    if (!one) {
      if (i == 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the recorded setting ", OperatorText(plan_.settings[0]),
            " does not build: ", refusal));
      }
      context_.Log(absl::StrCat("    ", OperatorText(plan_.settings[i]),
                                " does not build, not measured: ", refusal));
      outcome_.refused[i] = refusal;
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(cache_->Built(i, *one));
    if (taken) return absl::OkStatus();
    ASSIGN_OR_RETURN(bool cached, cache_->TakeCached(i, outcome_));
    if (!cached && i != 0) todo_.push_back(i);
    return absl::OkStatus();
  }

  const MeasurePlan& plan_;
  TuneContext& context_;
  const int n_;
  Platform platform_;
  MeasureOutcome outcome_;
  std::optional<MeasureBuilds> builds_;
  std::optional<MeasureCache> cache_;
  std::vector<int> todo_;  // settings to time, default left out
  // Settings whose 1-step design is not waited for yet, in order, and
  // whether the default's figure was found in the cache.
  std::deque<int> unplanned_;
  bool default_known_ = false;
  // Last, so its digests are waited for before the rest is gone.
  std::optional<MeasureBatches> batches_;
};

}  // namespace

BuildRequest MeasureRequest(const v1::Operator& op,
                            const v1::Operator& recorded,
                            const Platform& platform, int steps,
                            v1::Packaging packaging) {
  const bool distinct = steps == 1 || TotalBytes(recorded) <= kDistinctBytes;
  return {op, platform, steps, distinct, packaging};
}

VerdictKey BuiltIdentityKey(const BuildRequest& one_step,
                            const std::string& environment) {
  return VerdictKey{RequestKey(one_step), "built:" + environment};
}

absl::StatusOr<MeasureOutcome> Measure(const MeasurePlan& plan,
                                       TuneContext& context) {
  return Measurer(plan, context).Run();
}

Delta AgainstDefault(const v1::Measurement& m) {
  v1::Measurement def = m;
  def.clear_round_us();
  // m's noise; the drift share is m's (the batch's, shared by both).
  def.clear_t_step_noise_us();
  def.clear_batch_drift_share();
  for (double r : m.default_round_us()) def.add_round_us(r);
  def.set_t_step_us(
      m.default_round_us().empty()
          ? m.t_step_us()
          : Median(std::vector<double>(m.default_round_us().begin(),
                                       m.default_round_us().end())));
  return MeasurementDifference(m, def);
}

namespace {

// The share of `m`'s step that a repeat of it may move by (drift): its
// t_step_noise_us less the rounds' own standard error, over its step time
// (the largest of kDriftFloor, the spread between the call's batches and
// the spread of repeats the cache has seen, as Record set it); 0 where it
// has no noise or no rounds.
double RepeatShare(const v1::Measurement& m) {
  if (!m.has_t_step_noise_us() || !(m.t_step_us() > 0)) return 0;
  const std::vector<double> rounds(m.round_us().begin(), m.round_us().end());
  const double within = MedianStandardError(rounds).value_or(0);
  const double noise = m.t_step_noise_us();
  return std::sqrt(std::max(0.0, noise * noise - within * within)) /
         m.t_step_us();
}

// The share of `m`'s step that moved its whole batch (the drift while it
// was timed), which scales a delta paired within the batch alike:
// batch_drift_share; in a figure from before it, t_step_noise_us held
// only this drift (RepeatShare).
double BatchShare(const v1::Measurement& m) {
  if (m.has_batch_drift_share()) return m.batch_drift_share();
  return RepeatShare(m);
}

}  // namespace

Delta MeasurementDifference(const v1::Measurement& a,
                            const v1::Measurement& b) {
  std::vector<double> ra(a.round_us().begin(), a.round_us().end());
  std::vector<double> rb(b.round_us().begin(), b.round_us().end());
  Delta out;
  // The delta and its noise are one statistic: paired, the median of the
  // per-round differences and its standard error; unpaired, the difference
  // of the medians and the two errors in quadrature (docs/statistics.md).
  // A drift moves both of a pair alike, so it cancels from the rounds'
  // differences but scales the delta itself: the batch's share of |delta|
  // is added in quadrature. Unpaired, each figure's own drift counts: the
  // batch's where both were timed in one (a setting the cutoff stopped
  // early), else what moves a repeat.
  if (a.run() == b.run() && ra.size() == rb.size() && !ra.empty()) {
    const Difference d = PairedDifference(ra, rb);
    out.delta_us = d.delta;
    if (d.noise) {
      const double drift = std::max(BatchShare(a), BatchShare(b));
      out.noise_us = std::hypot(*d.noise, drift * d.delta);
    }
  } else if (!ra.empty() && !rb.empty()) {
    const Difference d = UnpairedDifference(ra, rb);
    out.delta_us = d.delta;
    if (d.noise) {
      // Timed in one batch (a setting the cutoff stopped early), both
      // moved with the batch; timed apart, each as a repeat would.
      const bool together = a.run() == b.run();
      const double share_a = together ? BatchShare(a) : RepeatShare(a);
      const double share_b = together ? BatchShare(b) : RepeatShare(b);
      out.noise_us = std::hypot(*d.noise, share_a * a.t_step_us(),
                                share_b * b.t_step_us());
    }
  } else {
    out.delta_us = a.t_step_us() - b.t_step_us();
  }
  return out;
}

}  // namespace irontune
