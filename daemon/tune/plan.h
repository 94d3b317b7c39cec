// The plan of an Autotune's device time: what each shape is expected to
// cost on the NPU before it is timed, the order the shapes are tuned in,
// and the estimate of the device time still to spend, corrected from what
// the finished shapes measured. docs/client.md ("ETA") and docs/search.md
// ("Shape order and the budget") say how it is used and where it is wrong.
//
// The plan is a floor, not a model: tune has no performance model of the
// NPU, only what a call cannot beat (IRON's call costs, the kernel-cycles
// bound where the nightly has the kernel, and the bytes a step moves at
// the memory system's peak). So the first estimate is low, and the
// correction (measured over planned, over the shapes finished) is what
// makes the remaining figure honest once one shape is done.
//
// Thread-safe (pure functions; JobEstimator is one thread at a time).
#ifndef IRONTUNE_DAEMON_TUNE_PLAN_H_
#define IRONTUNE_DAEMON_TUNE_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/npu/device.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/tune_context.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// The floor a run of N steps costs: a dispatch plus N step floors
// (docs/npu-facts.md, "Call costs": 49-56 us a call; about 1 us a step in a
// runlist).
inline constexpr double kDispatchFloorUs = 49;
inline constexpr double kStepFloorUs = 1;

// The most bytes a second the box's memory system moves: LPDDR5X-7500 on a
// 128-bit bus, 120 GB/s, the peak of the Ryzen AI 300 (Strix) and 7040
// (Phoenix) product specifications. The NPU's share is less, so a step's
// bytes over it is a floor of its time (docs/npu-facts.md has no NPU
// bandwidth; docs/search.md, "Shape order and the budget").
inline constexpr double kMemoryPeakBytesPerUs = 120e3;

// A step time the recorded setting of `op` cannot beat on `platform`: the
// step floor, the bytes of its buffers at kMemoryPeakBytesPerUs, and its
// kernel-cycles bound (LeastUs at its first point) where `cycles` has it,
// whichever is largest.
double StepFloorUs(const v1::Operator& op, const CallValues& values,
                   const Platform& platform, const KernelCycles& cycles);

// What one shape is planned to cost.
struct ShapeCost {
  int64_t settings = 0;  // settings the search is planned to time
  int64_t points = 0;    // Measures per setting: the members' points
  double step_us = 0;    // StepFloorUs of the recorded setting
  // shape.steps * step_us: the model's time in this shape per pass over
  // its calls, what the order sorts by.
  double weighted_us = 0;
  // Device seconds planned: settings * points * rounds * calls * (two
  // dispatches + (1 + repeats) steps of step_us).
  double device_seconds = 0;
};

// How many distinct values each tunable takes over `settings`, by the
// tunable's name: the length of a coordinate descent's line along it.
std::map<std::string, size_t> DistinctValueCounts(
    const std::vector<TunableValues>& settings);

// The settings TimeShape is planned to time out of `all`: every one up to
// `exhaustive`; above, two passes of a coordinate descent, each varying
// every tunable through its distinct values, at most `all`.
int64_t PlannedSettings(const std::vector<TunableValues>& all, int exhaustive);

// Each shape's cost, in `shapes` order. Errors: Settings'.
absl::StatusOr<std::vector<ShapeCost>> PlanShapes(
    const std::vector<Shape>& shapes, const v1::Calls& calls,
    const Platform& platform, const AutotuneOptions& options,
    const KernelCycles& cycles);

// The order shapes are tuned in: the most weighted_us first; ties keep
// Shapes() order. Indices into `costs`.
std::vector<size_t> TuneOrder(const std::vector<ShapeCost>& costs);

// Keeps a job's estimate as its shapes finish. The remaining time is the
// plan of the shapes not finished, scaled by measured over planned over
// the tuned shapes finished (1 before any is), less what the shape in
// progress has used so far (its part never below 0). A shape left untuned
// counts in neither. With a budget (> 0 seconds), what remains is at most
// what the budget leaves, or the shape in progress's own remainder where
// that is more (a shape once begun is finished).
class JobEstimator {
 public:
  JobEstimator(std::vector<ShapeCost> costs, double budget_seconds);

  // Shape `s` finished having used `used_seconds` of device time; `tuned`
  // false: it was left untuned (it used none). REQUIRES: s < costs.size().
  void Finished(size_t s, double used_seconds, bool tuned);

  // The estimate when the job has used `used_seconds` in all, of which
  // `in_progress_seconds` by shape `current` (nullopt: none under way).
  JobEstimate Estimate(double used_seconds, std::optional<size_t> current,
                       double in_progress_seconds) const;

  double planned_seconds() const { return planned_; }
  const ShapeCost& cost(size_t s) const { return costs_[s]; }

 private:
  std::vector<ShapeCost> costs_;
  const double budget_;
  std::vector<bool> finished_;
  double planned_ = 0;
  double finished_planned_ = 0;
  double finished_used_ = 0;
  int done_ = 0;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_PLAN_H_
