#include "daemon/tune/plan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "common/defaults.h"
#include "common/recording.h"
#include "common/status_macros.h"
#include "daemon/tune/settings.h"

namespace irontune {
namespace {

// The bytes of `op`'s buffers, as doubles (no overflow to guard).
double BufferBytes(const v1::Operator& op) {
  double bytes = 0;
  for (const v1::Buffer& b : op.buffers()) {
    double n = static_cast<double>(DTypeSize(b.dtype()));
    for (uint64_t d : b.shape()) n *= static_cast<double>(d);
    bytes += n;
  }
  return bytes;
}

// Device seconds for one setting's Measure at `timing` with step `step_us`.
double SettingSeconds(const ResolvedTiming& t, int repeats, double step_us) {
  const double runs_us = 2 * kDispatchFloorUs + (1 + repeats) * step_us;
  return static_cast<double>(t.rounds()) * t.calls() * runs_us / 1e6;
}

}  // namespace

double StepFloorUs(const v1::Operator& op, const CallValues& values,
                   const Platform& platform, const KernelCycles& cycles) {
  double us = std::max(kStepFloorUs, BufferBytes(op) / kMemoryPeakBytesPerUs);
  const std::optional<double> least =
      LeastUs(op, values, cycles, platform.generation, platform.columns,
              platform.core_mhz);
  if (least) us = std::max(us, *least);
  return us;
}

std::map<std::string, size_t> DistinctValueCounts(
    const std::vector<TunableValues>& settings) {
  std::map<std::string, std::set<std::string>> values;
  for (const TunableValues& setting : settings) {
    for (const v1::Field& f : setting) {
      values[f.name()].insert(f.value().SerializeAsString());
    }
  }
  std::map<std::string, size_t> counts;
  for (const auto& [name, distinct] : values) counts[name] = distinct.size();
  return counts;
}

int64_t PlannedSettings(const std::vector<TunableValues>& all, int exhaustive) {
  const auto n = static_cast<int64_t>(all.size());
  if (n <= exhaustive) return std::max<int64_t>(n, 1);
  int64_t pass = 0;
  for (const auto& [name, count] : DistinctValueCounts(all)) {
    pass += static_cast<int64_t>(count);
  }
  return std::min(n, 2 * pass);
}

absl::StatusOr<std::vector<ShapeCost>> PlanShapes(
    const std::vector<Shape>& shapes, const v1::Calls& calls,
    const Platform& platform, const AutotuneOptions& options,
    const KernelCycles& cycles) {
  std::vector<ShapeCost> out;
  out.reserve(shapes.size());
  for (const Shape& shape : shapes) {
    const ShapeMember& first = shape.members.at(0);
    const v1::Operator& op = calls.operators(static_cast<int>(first.op));
    ASSIGN_OR_RETURN(std::vector<TunableValues> all,
                     Settings(op, platform, shape.pinned, options.space));
    ShapeCost cost;
    cost.settings = PlannedSettings(all, options.exhaustive);
    for (const ShapeMember& m : shape.members) {
      cost.points +=
          std::max<int64_t>(static_cast<int64_t>(m.points.size()), 1);
    }
    const CallValues none;
    cost.step_us =
        StepFloorUs(op, first.points.empty() ? none : first.points[0].values,
                    platform, cycles);
    cost.weighted_us = static_cast<double>(shape.steps) * cost.step_us;
    cost.device_seconds =
        static_cast<double>(cost.settings * cost.points) *
        SettingSeconds(options.timing, options.repeats, cost.step_us);
    out.push_back(cost);
  }
  return out;
}

std::vector<size_t> TuneOrder(const std::vector<ShapeCost>& costs) {
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return costs[a].weighted_us > costs[b].weighted_us;
  });
  return order;
}

JobEstimator::JobEstimator(std::vector<ShapeCost> costs, double budget_seconds)
    : costs_(std::move(costs)),
      budget_(budget_seconds),
      finished_(costs_.size(), false) {
  for (const ShapeCost& c : costs_) planned_ += c.device_seconds;
}

void JobEstimator::Finished(size_t s, double used_seconds, bool tuned) {
  if (finished_.at(s)) return;
  finished_[s] = true;
  ++done_;
  if (!tuned) return;
  finished_planned_ += costs_[s].device_seconds;
  finished_used_ += used_seconds;
}

JobEstimate JobEstimator::Estimate(double used_seconds,
                                   std::optional<size_t> current,
                                   double in_progress_seconds) const {
  JobEstimate e;
  e.done = done_;
  e.total = static_cast<int>(costs_.size());
  e.planned_seconds = planned_;
  e.used_seconds = used_seconds;
  const double scale =
      finished_planned_ > 0 ? finished_used_ / finished_planned_ : 1.0;
  double current_left = 0;
  double others = 0;
  for (size_t s = 0; s < costs_.size(); ++s) {
    if (finished_[s]) continue;
    if (current && s == *current) {
      current_left =
          std::max(0.0, scale * costs_[s].device_seconds - in_progress_seconds);
    } else {
      others += scale * costs_[s].device_seconds;
    }
  }
  e.current_seconds = current_left;
  e.remaining_seconds = current_left + others;
  if (budget_ > 0) {
    e.remaining_seconds = std::min(
        e.remaining_seconds, std::max(current_left, budget_ - used_seconds));
  }
  return e;
}

}  // namespace irontune
