#include "daemon/scheduler/requests.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "common/profile.h"
#include "common/recording.h"
#include "common/shape.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/base/log_safe.h"

namespace irontune {
namespace {

// Settings one Measure request may time.
constexpr int kMaxSettings = 1024;

absl::Status Invalid(const std::string& text) {
  return absl::InvalidArgumentError(text);
}

// The operator is checked exactly as a recording's operators[0] would be.
absl::Status CheckOperator(const v1::MeasureRequest& request) {
  if (!request.has_operator_()) return Invalid("operator: missing");
  v1::Calls calls;
  calls.set_format_version(v1::FORMAT_VERSION_1);
  *calls.add_operators() = request.operator_();
  absl::Status s = ValidateRecording(calls);
  if (s.ok()) return s;
  std::string message(s.message());
  const std::string prefix = "operators[0]";
  if (absl::StartsWith(message, prefix)) {
    message = "operator" + message.substr(prefix.size());
  }
  return Invalid(message);
}

// The operator's tunables and the kind of value each was recorded with.
using TunableKinds = std::map<std::string, v1::Value::KindCase>;

absl::Status CheckSetting(const v1::Setting& setting, int i,
                          const TunableKinds& tunables) {
  std::set<std::string> seen;
  for (int j = 0; j < setting.tunables_size(); ++j) {
    const v1::Field& f = setting.tunables(j);
    const std::string path =
        absl::StrCat("settings[", i, "].tunables[", j, "]");
    if (!tunables.count(f.name())) {
      return Invalid(absl::StrCat(path, ".name: \"", f.name(),
                                  "\" is not a tunable of the operator"));
    }
    if (!seen.insert(f.name()).second) {
      return Invalid(
          absl::StrCat(path, ".name: \"", f.name(), "\" given twice"));
    }
    if (f.value().kind_case() == v1::Value::KIND_NOT_SET) {
      return Invalid(absl::StrCat(path, ".value: missing"));
    }
    if (f.value().kind_case() != tunables.at(f.name())) {
      return Invalid(absl::StrCat(path, ".value: ", ValueToString(f.value()),
                                  " is not of the kind \"", f.name(),
                                  "\" was recorded with"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSettings(const v1::MeasureRequest& request) {
  if (request.settings_size() > kMaxSettings) {
    return Invalid(absl::StrCat("settings: ", request.settings_size(),
                                " settings exceed the limit of ",
                                kMaxSettings));
  }
  TunableKinds tunables;
  for (const v1::Tunable& t : request.operator_().tunables()) {
    tunables[t.name()] = t.value().kind_case();
  }
  for (int i = 0; i < request.settings_size(); ++i) {
    RETURN_IF_ERROR(CheckSetting(request.settings(i), i, tunables));
  }
  return absl::OkStatus();
}

absl::Status CheckValues(const v1::MeasureRequest& request) {
  std::set<std::string> call_values;
  for (const v1::CallValue& v : request.operator_().values()) {
    call_values.insert(v.name());
  }
  for (const auto& [name, value] : request.values()) {
    if (!call_values.count(name)) {
      return Invalid(absl::StrCat("values[\"", name,
                                  "\"]: the operator has no such call value"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInputs(const v1::MeasureRequest& request) {
  std::map<std::string, uint64_t> sizes;
  for (const v1::Buffer& b : request.operator_().buffers()) {
    sizes[b.name()] = BufferBytes(b).value_or(0);  // bounded by CheckOperator
  }
  std::set<std::string> given;
  for (int i = 0; i < request.inputs_size(); ++i) {
    const v1::Content& c = request.inputs(i);
    const std::string path = absl::StrCat("inputs[", i, "]");
    auto it = sizes.find(c.buffer());
    if (it == sizes.end()) {
      return Invalid(absl::StrCat(path, ".buffer: \"", c.buffer(),
                                  "\" is not a buffer of the operator"));
    }
    if (!given.insert(c.buffer()).second) {
      return Invalid(
          absl::StrCat(path, ".buffer: \"", c.buffer(), "\" given twice"));
    }
    if (c.data().size() != it->second) {
      return Invalid(absl::StrCat(path, ".data: ", c.data().size(),
                                  " bytes; the buffer holds ", it->second));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTiming(const v1::Timing& given) {
  const ResolvedTiming timing(given);
  if (timing.rounds() > kMaxRounds) {
    return Invalid(absl::StrCat("timing.rounds: ", timing.rounds(),
                                "; at most ", kMaxRounds));
  }
  if (timing.calls() > kMaxCalls) {
    return Invalid(absl::StrCat("timing.calls: ", timing.calls(), "; at most ",
                                kMaxCalls));
  }
  if (given.settle() > timing.rounds()) {
    return Invalid(absl::StrCat("timing.settle: ", given.settle(),
                                " is more than the ", timing.rounds(),
                                " rounds"));
  }
  // 0 means the default; anything else must be a finite ratio of at least 1.
  const double cutoff = given.cutoff();
  if (cutoff != 0 && !(cutoff >= 1 && std::isfinite(cutoff))) {
    return Invalid(absl::StrCat("timing.cutoff: ", cutoff, "; 0 (the default, ",
                                kDefaultCutoff,
                                ") or a finite ratio of at least 1"));
  }
  return absl::OkStatus();
}

absl::Status CheckPriority(v1::Priority priority) {
  if (v1::Priority_IsValid(priority)) return absl::OkStatus();
  return Invalid(absl::StrCat("priority: ", static_cast<int>(priority),
                              " is not a Priority"));
}

// A request's platform and power mode: printable ASCII of a sane length,
// and a power mode xrt-smi names.
inline constexpr size_t kMaxPlatformBytes = 64;

template <typename Request>
absl::Status CheckTarget(const Request& request) {
  const std::string& platform = request.platform();
  if (platform.size() > kMaxPlatformBytes) {
    return Invalid(absl::StrCat("platform: ", platform.size(),
                                " bytes; a platform is at most ",
                                kMaxPlatformBytes));
  }
  for (char ch : platform) {
    if (ch < 0x20 || ch > 0x7e) return Invalid("platform: not printable ASCII");
  }
  if (request.power_mode().empty()) return absl::OkStatus();
  absl::StatusOr<PowerMode> mode = ParsePowerMode(request.power_mode());
  if (!mode.ok()) {
    return Invalid(absl::StrCat("power_mode: ", mode.status().message()));
  }
  return absl::OkStatus();
}

// Each of `shapes` a shape the calls run. REQUIRES: the calls validated.
absl::Status CheckShapes(const v1::AutotuneRequest& request) {
  if (request.shapes().empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<ShapeGroup>> groups = GroupShapes(request.calls());
  if (!groups.ok()) return groups.status();
  std::set<std::string> known;
  for (const ShapeGroup& g : *groups) known.insert(g.key);
  for (int i = 0; i < request.shapes_size(); ++i) {
    if (!known.contains(request.shapes(i))) {
      return Invalid(absl::StrCat("shapes[", i, "]: \"",
                                  LogSafe(request.shapes(i), 200),
                                  "\" is not a shape the calls run"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRepeats(uint32_t repeats) {
  if (repeats == 1) {
    return Invalid(absl::StrCat("repeats: must be 0 (", kDefaultRepeats,
                                ") or at least 2"));
  }
  if (repeats > kMaxRepeats) {
    return Invalid(absl::StrCat("repeats: at most ", kMaxRepeats));
  }
  return absl::OkStatus();
}

// Every entry of the profile names its class; dims and tunables have names
// and values.
absl::Status CheckProfile(const v1::Profile& profile) {
  for (int i = 0; i < profile.entries_size(); ++i) {
    const v1::ProfileEntry& e = profile.entries(i);
    const std::string path = absl::StrCat("profile.entries[", i, "]");
    if (e.operator_class().empty()) {
      return Invalid(path + ".operator_class: empty");
    }
    for (const auto* fields : {&e.dims(), &e.tunables()}) {
      const char* what = fields == &e.dims() ? ".dims[" : ".tunables[";
      for (int j = 0; j < fields->size(); ++j) {
        const v1::Field& f = fields->Get(j);
        if (f.name().empty()) {
          return Invalid(absl::StrCat(path, what, j, "].name: empty"));
        }
        if (f.value().kind_case() == v1::Value::KIND_NOT_SET) {
          return Invalid(absl::StrCat(path, what, j, "].value: unset"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckMinGain(const v1::AutotuneRequest& request) {
  if (!request.has_min_gain()) return absl::OkStatus();
  const double g = request.min_gain();
  if (std::isfinite(g) && g >= 0 && g < 1) return absl::OkStatus();
  return Invalid(absl::StrCat("min_gain: ", g,
                              " is not a share of the step time in [0, 1)"));
}

absl::Status CheckBudget(const v1::AutotuneRequest& request) {
  const double b = request.budget_seconds();
  if (std::isfinite(b) && b >= 0) return absl::OkStatus();
  return Invalid(absl::StrCat(
      "budget_seconds: ", b,
      " is not a device time in seconds (finite, at least 0; 0: no budget)"));
}

}  // namespace

absl::Status ValidateMeasureRequest(const v1::MeasureRequest& request) {
  RETURN_IF_ERROR(CheckOperator(request));
  RETURN_IF_ERROR(CheckSettings(request));
  RETURN_IF_ERROR(CheckValues(request));
  RETURN_IF_ERROR(CheckInputs(request));
  RETURN_IF_ERROR(CheckTiming(request.timing()));
  RETURN_IF_ERROR(CheckPriority(request.priority()));
  RETURN_IF_ERROR(CheckTarget(request));
  return CheckRepeats(request.repeats());
}

absl::Status ValidateAutotuneRequest(const v1::AutotuneRequest& request) {
  if (!request.has_calls()) return Invalid("calls: missing");
  RETURN_IF_ERROR(ValidateRecording(request.calls()));
  if (request.calls().calls_size() == 0) {
    return Invalid("calls.calls: none; a recording to tune has at least one");
  }
  RETURN_IF_ERROR(CheckProfile(request.profile()));
  RETURN_IF_ERROR(CheckProfileFor(request.profile(), request.calls()));
  RETURN_IF_ERROR(CheckTiming(request.timing()));
  RETURN_IF_ERROR(CheckPriority(request.priority()));
  RETURN_IF_ERROR(CheckMinGain(request));
  RETURN_IF_ERROR(CheckBudget(request));
  RETURN_IF_ERROR(CheckTarget(request));
  RETURN_IF_ERROR(CheckShapes(request));
  return CheckRepeats(request.repeats());
}

absl::Status CheckRunsOn(const std::string& asked_platform,
                         const std::string& asked_mode,
                         const Platform& platform) {
  const absl::StatusOr<PowerMode> mode =
      asked_mode.empty() ? platform.power_mode : ParsePowerMode(asked_mode);
  if (!mode.ok())
    return Invalid(absl::StrCat("power_mode: ", mode.status().message()));
  if (PlatformAnswersTo(platform, asked_platform) &&
      *mode == platform.power_mode) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "the job asks for ",
      asked_platform.empty() ? "any NPU"
                             : absl::StrCat("\"", asked_platform, "\""),
      " at power mode ", std::string(PowerModeName(*mode)), "; this NPU is ",
      platform.name, " (", platform.generation, ") at power mode ",
      std::string(PowerModeName(platform.power_mode))));
}

absl::Status ValidateJobId(const std::string& id) {
  if (id.empty()) return Invalid("job_id: empty; give the id a job was given");
  if (id.size() > kMaxJobIdBytes) {
    return Invalid(absl::StrCat("job_id: ", id.size(),
                                " bytes; ids are at most ", kMaxJobIdBytes));
  }
  for (char ch : id) {
    if (ch < 0x21 || ch > 0x7e) {
      return Invalid("job_id: not printable ASCII");
    }
  }
  return absl::OkStatus();
}

v1::Operator ApplySetting(const v1::Operator& op, const v1::Setting& setting) {
  v1::Operator out = op;
  for (const v1::Field& f : setting.tunables()) {
    for (v1::Tunable& t : *out.mutable_tunables()) {
      if (t.name() == f.name()) *t.mutable_value() = f.value();
    }
  }
  return out;
}

int RepeatsOf(uint32_t repeats) {
  return repeats == 0 ? kDefaultRepeats : static_cast<int>(repeats);
}

v1::Packaging PackagingOf(v1::Packaging packaging, const Platform& platform) {
  return packaging == v1::PACKAGING_UNSPECIFIED ? DefaultPackaging(platform)
                                                : packaging;
}

MeasurePlan MeasurePlanOf(const v1::MeasureRequest& request,
                          const Platform& platform) {
  MeasurePlan plan;
  plan.settings.push_back(request.operator_());
  for (const v1::Setting& s : request.settings()) {
    plan.settings.push_back(ApplySetting(request.operator_(), s));
  }
  plan.timing = ResolvedTiming(request.timing());
  plan.repeats = RepeatsOf(request.repeats());
  plan.packaging = PackagingOf(request.packaging(), platform);
  for (const auto& [name, value] : request.values()) plan.values[name] = value;
  for (const v1::Content& c : request.inputs()) {
    plan.inputs[c.buffer()] = c.data();
  }
  plan.remeasure = request.remeasure();
  plan.seed = request.seed();
  return plan;
}

AutotuneOptions AutotuneOptionsOf(const v1::AutotuneRequest& request,
                                  const Platform& platform,
                                  const std::string& cycles_path) {
  AutotuneOptions options;
  options.timing = ResolvedTiming(request.timing());
  options.repeats = RepeatsOf(request.repeats());
  options.packaging = PackagingOf(request.packaging(), platform);
  options.remeasure = request.remeasure();
  options.seed = request.seed();
  options.cycles_path = cycles_path;
  if (request.has_min_gain()) options.min_gain = request.min_gain();
  options.budget_seconds = request.budget_seconds();
  options.only_shapes = {request.shapes().begin(), request.shapes().end()};
  return options;
}

}  // namespace irontune
