#include "daemon/scheduler/admission.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/defaults.h"
#include "common/recording.h"
#include "common/status_macros.h"
#include "daemon/scheduler/requests.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/inputs.h"
#include "daemon/tune/measure.h"
#include "daemon/tune/plan.h"
#include "daemon/tune/settings.h"
#include "daemon/tune/shapes.h"

namespace irontune {
namespace {

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

// a * b, saturating at the largest uint64_t.
uint64_t Mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > kMaxU64 / a) return kMaxU64;
  return a * b;
}

uint64_t Add(uint64_t a, uint64_t b) {
  return b > kMaxU64 - a ? kMaxU64 : a + b;
}

// An operator's buffers' bytes, saturating: those the device only reads
// (inputs), and the rest (outputs, in-out).
struct Bytes {
  uint64_t in = 0;
  uint64_t out = 0;
};

Bytes BufferBytes(const v1::Operator& op) {
  Bytes bytes;
  for (const v1::Buffer& b : op.buffers()) {
    const uint64_t n = ::irontune::BufferBytes(b).value_or(kMaxU64);
    uint64_t& total = b.role() == v1::BUFFER_ROLE_IN ? bytes.in : bytes.out;
    total = Add(total, n);
  }
  return bytes;
}

// What timing `settings` settings of `op` in one Measure holds at its peak
// (admission.h), split into the inputs (once per distinct step, whose
// buffers each hold them on an NPU) and the rest: each loaded
// setting's outputs per step of its two images, and the outputs read back
// (each setting's, kept for judging, and the default's of two batches).
struct OperatorBytes {
  uint64_t inputs = 0;
  uint64_t rest = 0;
};

OperatorBytes OperatorMemory(const v1::Operator& op, uint64_t settings,
                             int repeats, const Platform& platform) {
  const Bytes bytes = BufferBytes(op);
  const uint64_t batch =
      std::min<uint64_t>(settings, std::max(1, platform.hw_contexts / 2));
  const uint64_t distinct_steps = Add(bytes.in, bytes.out) <= kDistinctBytes
                                      ? static_cast<uint64_t>(repeats)
                                      : 1;
  const uint64_t images = Mul(batch, Mul(bytes.out, 1 + distinct_steps));
  const uint64_t read = Mul(Add(settings, 1), bytes.out);
  return {Mul(bytes.in, distinct_steps), Add(images, read)};
}

// What an Autotune's judging of `shape` adds to its Measure's peak
// (tune/verdicts.h): the last point's outputs (`settings` of them), held
// while the next point is measured (the default's inputs with them are
// shared, counted once already), and the shape's CPU references, one per
// point of each member, each as large as the outputs.
uint64_t JudgingMemory(const Shape& shape, const v1::Operator& op,
                       uint64_t settings) {
  const Bytes bytes = BufferBytes(op);
  uint64_t points = 0;
  for (const ShapeMember& member : shape.members) {
    points = Add(points, member.points.size());
  }
  return Add(Mul(settings, bytes.out), Mul(points, bytes.out));
}

// Device seconds at least, for `settings` settings timed at `timing`.
double DeviceSeconds(uint64_t settings, const ResolvedTiming& t, int repeats) {
  const double runs_us = 2 * kDispatchFloorUs + (1 + repeats) * kStepFloorUs;
  return static_cast<double>(settings) * t.rounds() * t.calls() * runs_us / 1e6;
}

// The most settings of `settings` one Measure times: all of them up to
// kExhaustive; above, a coordinate descent's line, which varies one
// tunable: at most its distinct values (and the point it starts from).
uint64_t SettingsAtOnce(const std::vector<TunableValues>& settings) {
  if (settings.size() <= static_cast<size_t>(kExhaustive)) {
    return std::max<uint64_t>(settings.size(), 1);
  }
  uint64_t line = 1;
  for (const auto& [name, count] : DistinctValueCounts(settings)) {
    line = std::max<uint64_t>(line, count + 1);
  }
  return std::min<uint64_t>(line, kExhaustive);
}

// The peak of `k` shapes searched at once, at most: the `k` largest of
// `inputs` (their own seeded inputs, each shape's `inputs[i]`), counted at
// least at the input cache's cap, which holds them all, plus the `k`
// largest of `rests` (the rest of each one's peak).
uint64_t AtOnce(std::vector<uint64_t> inputs, std::vector<uint64_t> rests,
                int k) {
  const auto largest = [k](std::vector<uint64_t>& v) {
    std::sort(v.begin(), v.end(), std::greater<>());
    uint64_t sum = 0;
    for (size_t i = 0; i < v.size() && i < static_cast<size_t>(k); ++i) {
      sum = Add(sum, v[i]);
    }
    return sum;
  };
  return Add(std::max(largest(inputs), InputCache::kDefaultBytes),
             largest(rests));
}

absl::Status Exhausted(const std::string& what, const std::string& figure,
                       const std::string& limit, const std::string& flag) {
  return absl::ResourceExhaustedError(absl::StrCat(
      what, ": ", figure, " exceeds the limit of ", limit, " (", flag, ")"));
}

absl::Status CheckCost(const JobCost& cost, const AdmissionLimits& limits) {
  if (cost.memory_bytes > limits.job_memory_bytes) {
    return Exhausted("the job's estimated peak memory",
                     FormatBytes(cost.memory_bytes),
                     FormatBytes(limits.job_memory_bytes), "--job-memory");
  }
  if (cost.memory_bytes > limits.memory_limit_bytes) {
    return Exhausted("the job's estimated peak memory",
                     FormatBytes(cost.memory_bytes),
                     FormatBytes(limits.memory_limit_bytes), "--memory-limit");
  }
  if (cost.device_seconds > limits.job_device_seconds) {
    return Exhausted(
        "the job's estimated device time",
        absl::StrFormat("%.0f s", cost.device_seconds),
        absl::StrFormat("%.0f s", limits.job_device_seconds),
        "--job-device-seconds; fewer settings, rounds, calls or repeats");
  }
  return absl::OkStatus();
}

absl::Status CheckRecordingSize(const v1::Calls& calls,
                                const AdmissionLimits& limits) {
  const uint64_t bytes = calls.ByteSizeLong();
  if (bytes > limits.recording_bytes) {
    return Exhausted("calls", FormatBytes(bytes),
                     FormatBytes(limits.recording_bytes),
                     "--max-recording-bytes");
  }
  if (static_cast<uint64_t>(calls.operators_size()) >
      limits.recording_operators) {
    return Exhausted(
        "calls.operators", absl::StrCat(calls.operators_size(), " operators"),
        absl::StrCat(limits.recording_operators), "--max-recording-operators");
  }
  uint64_t steps = 0;
  for (const v1::Timed& call : calls.calls()) {
    steps += static_cast<uint64_t>(call.recording().steps_size());
  }
  if (steps > limits.recording_steps) {
    return Exhausted("calls.calls", absl::StrCat(steps, " steps"),
                     absl::StrCat(limits.recording_steps),
                     "--max-recording-steps");
  }
  return absl::OkStatus();
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes == kMaxU64) return "more than 16 EiB";
  double x = static_cast<double>(bytes);
  int unit = 0;
  while (x >= 1024 && unit < 5) {
    x /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.1f %s", x, kUnits[unit]);
}

absl::StatusOr<JobCost> AdmitMeasure(const v1::MeasureRequest& request,
                                     const Platform& platform,
                                     const AdmissionLimits& limits) {
  const int repeats = RepeatsOf(request.repeats());
  const uint64_t settings = 1 + static_cast<uint64_t>(request.settings_size());
  JobCost cost;
  // A Measure's seeded inputs are its own: its job's cache starts empty.
  const OperatorBytes bytes =
      OperatorMemory(request.operator_(), settings, repeats, platform);
  cost.memory_bytes = Add(Add(bytes.inputs, bytes.rest),
                          Add(request.ByteSizeLong(), kJobOverheadBytes));
  cost.device_seconds =
      DeviceSeconds(settings, ResolvedTiming(request.timing()), repeats);
  RETURN_IF_ERROR(CheckCost(cost, limits));
  return cost;
}

absl::StatusOr<JobCost> AdmitAutotune(const v1::AutotuneRequest& request,
                                      const Platform& platform,
                                      const AdmissionLimits& limits,
                                      int shapes_at_once) {
  const uint64_t profile_bytes = request.profile().ByteSizeLong();
  if (profile_bytes > limits.profile_bytes) {
    return Exhausted("profile", FormatBytes(profile_bytes),
                     FormatBytes(limits.profile_bytes), "--max-profile-bytes");
  }
  RETURN_IF_ERROR(CheckRecordingSize(request.calls(), limits));
  const int repeats = RepeatsOf(request.repeats());
  const SearchSpace space = DefaultSearchSpace();
  ASSIGN_OR_RETURN(std::vector<Shape> shapes,
                   Shapes(request.calls(), space, platform.generation));
  JobCost cost;
  uint64_t peak = 0;
  // Each shape's own inputs, and the rest of its peak.
  std::vector<uint64_t> inputs, rests;
  for (const Shape& shape : shapes) {
    const v1::Operator& op =
        request.calls().operators(static_cast<int>(shape.members[0].op));
    ASSIGN_OR_RETURN(std::vector<TunableValues> settings,
                     Settings(op, platform, shape.pinned, space));
    const uint64_t n = std::max<uint64_t>(settings.size(), 1);
    const uint64_t at_once = SettingsAtOnce(settings);
    // Besides a shape's own inputs, the job's input cache may still keep
    // up to its cap of earlier shapes' (inputs.h).
    const OperatorBytes bytes = OperatorMemory(op, at_once, repeats, platform);
    inputs.push_back(bytes.inputs);
    rests.push_back(Add(bytes.rest, JudgingMemory(shape, op, at_once)));
    peak = std::max(peak, Add(std::max(bytes.inputs, InputCache::kDefaultBytes),
                              rests.back()));
    cost.device_seconds +=
        DeviceSeconds(n, ResolvedTiming(request.timing()), repeats);
  }
  // One shape at a time keeps the exact figure above; AtOnce's sums of
  // separate largest figures would only loosen it.
  if (shapes_at_once > 1) {
    peak = std::max(peak, AtOnce(inputs, rests, shapes_at_once));
  }
  // A budget stops the job from beginning a shape past it.
  if (request.budget_seconds() > 0) {
    cost.device_seconds =
        std::min(cost.device_seconds, request.budget_seconds());
  }
  cost.memory_bytes = Add(Add(peak, kAutotuneSlackBytes),
                          Add(request.ByteSizeLong(), kJobOverheadBytes));
  RETURN_IF_ERROR(CheckCost(cost, limits));
  return cost;
}

}  // namespace irontune
