#include "daemon/sim/sim_builder.h"

#include <time.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/design.h"
#include "common/status_macros.h"
#include "daemon/base/sha256.h"
#include "daemon/sim/design.h"
#include "daemon/sim/presets.h"
#include "daemon/sim/sim_limits.h"

namespace irontune {
namespace {

constexpr char kEnvironment[] = "sim-builder/1";

// A value in the sim-recipe/1 text. Recipe hashes, and so the verdicts and
// measurements cached under them, follow this text: it stays as it is (a
// double keeps StrCat's six significant digits) where common/value.h's
// ValueKey would be the choice for a new key.
std::string RecipeValue(const v1::Value& v) {
  switch (v.kind_case()) {
    case v1::Value::kIntValue:
      return absl::StrCat("i:", v.int_value());
    case v1::Value::kBoolValue:
      return v.bool_value() ? "b:1" : "b:0";
    case v1::Value::kStringValue:
      return absl::StrCat("s:", absl::CEscape(v.string_value()));
    case v1::Value::kDoubleValue:
      return absl::StrCat("d:", v.double_value());
    default:
      return "unset";
  }
}

std::string BufferName(const v1::Operator& op, int index) {
  const std::string& name = op.buffers(index).name();
  int same = 0;
  for (const v1::Buffer& b : op.buffers()) same += b.name() == name;
  const bool usable = !name.empty() && same == 1 &&
                      name.find_first_of(" \t\n") == std::string::npos;
  return usable ? name : absl::StrCat(index);
}

// The preset `request` builds for, or InvalidArgument for a bad request.
absl::StatusOr<const sim::SimPreset*> CheckRequest(
    const BuildRequest& request) {
  const sim::SimPreset* preset =
      sim::FindSimPresetByGeneration(request.platform.generation);
  if (preset == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("the sim builder builds for npu1 and npu2, not \"",
                     request.platform.generation, "\""));
  }
  RETURN_IF_ERROR(CheckBuildRequest(request));
  return preset;
}

// Each operator buffer's size in bytes; InvalidArgument for an unknown
// dtype or an absurd size.
absl::StatusOr<std::vector<uint64_t>> BufferSizes(const v1::Operator& op) {
  std::vector<uint64_t> nbytes;
  for (int i = 0; i < op.buffers_size(); ++i) {
    const v1::Buffer& b = op.buffers(i);
    std::optional<uint64_t> size = sim::BufferBytes(b);
    if (sim::DTypeBytes(b.dtype()) == 0 || !size) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffers[", i, "] (", b.name(),
                       "): unknown dtype or a size past 2^62 bytes"));
    }
    nbytes.push_back(*size);
  }
  return nbytes;
}

// Why `preset` does not take `op` in `packaging`; "" when it does.
std::string Refusal(const v1::Operator& op, v1::Packaging packaging,
                    const sim::SimPreset& preset) {
  if (packaging == v1::PACKAGING_FULL_ELF && !preset.full_elf) {
    // docs/npu-facts.md: "npu1 has no full-ELF dispatch".
    return absl::StrCat(preset.generation,
                        " has no full-ELF dispatch (xclbin chain only)");
  }
  const sim::CallValues no_values;
  return sim::SimRefusal(sim::OpView(op, no_values), preset);
}

// The artifact's buffers: per step (every step when distinct, else step
// 0's), one per operator buffer.
std::vector<ArtifactBuffer> ArtifactBuffers(const v1::Operator& op,
                                            const std::vector<uint64_t>& nbytes,
                                            const BuildRequest& request) {
  std::vector<ArtifactBuffer> out;
  const int steps = request.distinct ? request.steps : 1;
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < op.buffers_size(); ++i) {
      ArtifactBuffer b;
      b.name = absl::StrCat("s", s, ".", BufferName(op, i));
      b.step = s;
      b.op_buffer = i;
      b.nbytes = nbytes[i];
      b.fills = op.buffers(i).fills();
      b.drains = op.buffers(i).drains();
      out.push_back(std::move(b));
    }
  }
  return out;
}

// The calling thread's CPU time.
absl::Duration ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return absl::DurationFromTimespec(ts);
}

// Keeps the calling thread's CPU busy for `d` of its own CPU time.
// Spends `d` of this thread's CPU time, or less once `stop` is true.
void SpinFor(absl::Duration d, const std::atomic<bool>& stop) {
  const absl::Duration end = ThreadCpu() + d;
  volatile uint64_t sink = 0;
  while (ThreadCpu() < end && !stop.load()) {
    for (int i = 0; i < 10000; ++i) sink = sink + i;
  }
}

// Sleeps `d`, or less once `stop` is true.
void SleepFor(absl::Duration d, const std::atomic<bool>& stop) {
  const absl::Time end = absl::Now() + d;
  while (!stop.load()) {
    const absl::Duration left = end - absl::Now();
    if (left <= absl::ZeroDuration()) return;
    absl::SleepFor(std::min(left, absl::Milliseconds(20)));
  }
}

}  // namespace

std::string SimRecipeHash(const v1::Operator& op, std::string_view generation) {
  std::vector<std::string> params, tunables;
  for (const v1::Param& p : op.params()) {
    params.push_back(absl::StrCat("param ", absl::CEscape(p.name()), "=",
                                  RecipeValue(p.value())));
  }
  for (const v1::Tunable& t : op.tunables()) {
    tunables.push_back(absl::StrCat("tunable ", absl::CEscape(t.name()), "=",
                                    RecipeValue(t.value())));
  }
  std::sort(params.begin(), params.end());
  std::sort(tunables.begin(), tunables.end());
  std::string text =
      absl::StrCat("sim-recipe/1\nclass ", absl::CEscape(op.class_name()),
                   "\ngeneration ", sim::AsAbsl(generation), "\n");
  for (const std::string& line : params) absl::StrAppend(&text, line, "\n");
  for (const std::string& line : tunables) absl::StrAppend(&text, line, "\n");
  for (const v1::Buffer& b : op.buffers()) {
    absl::StrAppend(&text, "buffer ", static_cast<int>(b.role()), " ",
                    static_cast<int>(b.dtype()));
    for (uint64_t e : b.shape()) absl::StrAppend(&text, " ", e);
    absl::StrAppend(&text, "\n");
  }
  for (const v1::CallValue& v : op.values()) {
    absl::StrAppend(&text, "value ", absl::CEscape(v.symbol()), " ",
                    absl::CEscape(v.bounds()), "\n");
  }
  return Sha256Hex(text);
}

bool SimBuilder::Ready(const BuildRequest& /*request*/) {
  return cost_.spend == SimBuildCost::Spend::kCount ||
         cost_.per_design == absl::ZeroDuration();
}

absl::StatusOr<std::string> SimBuilder::Fit(const BuildRequest& request) {
  ASSIGN_OR_RETURN(const sim::SimPreset* preset, CheckRequest(request));
  if (std::string why = sim::SimUnsupported(request.op.class_name());
      !why.empty()) {
    return absl::UnimplementedError(why);
  }
  RETURN_IF_ERROR(BufferSizes(request.op).status());
  return Refusal(request.op, request.packaging, *preset);
}

absl::StatusOr<BuildOutcome> SimBuilder::Build(const BuildRequest& request) {
  ASSIGN_OR_RETURN(const sim::SimPreset* preset, CheckRequest(request));
  const v1::Operator& op = request.op;
  if (std::string why = sim::SimUnsupported(op.class_name()); !why.empty()) {
    return absl::UnimplementedError(why);
  }
  ASSIGN_OR_RETURN(std::vector<uint64_t> nbytes, BufferSizes(op));
  BuildOutcome outcome;
  outcome.refusal = Refusal(op, request.packaging, *preset);
  if (!outcome.refusal.empty()) return outcome;

  sim::SimDesign design;
  design.op = DesignOf(op);
  design.generation = preset->generation;
  design.packaging = request.packaging;
  design.steps = request.steps;
  design.distinct = request.distinct;

  Artifact artifact;
  artifact.payload = sim::EncodeSimDesign(design);
  artifact.artifact_hash = Sha256Hex(artifact.payload);
  artifact.recipe_hash = SimRecipeHash(design.op, preset->generation);
  artifact.packaging = request.packaging;
  artifact.steps = request.steps;
  artifact.distinct = request.distinct;
  artifact.buffers = ArtifactBuffers(op, nbytes, request);
  std::set<std::string> symbols;
  for (const v1::CallValue& v : op.values()) {
    if (symbols.insert(v.symbol()).second)
      artifact.symbols.push_back(v.symbol());
  }
  RETURN_IF_ERROR(Spend(artifact.recipe_hash));
  outcome.artifact = std::move(artifact);
  return outcome;
}

absl::Status SimBuilder::Spend(const std::string& recipe_hash) {
  if (stopped_) return absl::CancelledError("irontuned is shutting down");
  if (cost_.per_design <= absl::ZeroDuration()) return absl::OkStatus();
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    first = built_.insert(recipe_hash).second;
  }
  const absl::Duration d =
      first ? cost_.per_design : cost_.per_design * cost_.runlist_share;
  spent_us_ += absl::ToInt64Microseconds(d);
  switch (cost_.spend) {
    case SimBuildCost::Spend::kCount:
      break;
    case SimBuildCost::Spend::kSleep:
      SleepFor(d, stopped_);
      break;
    case SimBuildCost::Spend::kCpu:
      SpinFor(d, stopped_);
      break;
  }
  if (stopped_) return absl::CancelledError("irontuned is shutting down");
  return absl::OkStatus();
}

std::string SimBuilder::Environment() const { return kEnvironment; }

}  // namespace irontune
