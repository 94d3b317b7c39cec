#include "daemon/server/runner.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/profile.h"
#include "common/recording.h"
#include "common/status_macros.h"
#include "daemon/npu/metered.h"
#include "daemon/tune/autotune.h"
#include "daemon/tune/measure.h"

namespace irontune {
namespace {

// Settings one Measure request may time.
constexpr int kMaxSettings = 1024;

absl::Status Invalid(const std::string& text) {
  return absl::InvalidArgumentError(text);
}

}  // namespace

void JobContext::Log(std::string text) {
  v1::AutotuneEvent event;
  event.mutable_log()->set_text(std::move(text));
  Emit(std::move(event));
}

absl::Status ValidateMeasureRequest(const v1::MeasureRequest& request) {
  if (!request.has_operator_()) return Invalid("operator: missing");
  // The operator is checked exactly as a recording's operators[0] would be.
  v1::Calls calls;
  calls.set_format_version(v1::FORMAT_VERSION_1);
  *calls.add_operators() = request.operator_();
  if (absl::Status s = ValidateRecording(calls); !s.ok()) {
    std::string message(s.message());
    const std::string prefix = "operators[0]";
    if (absl::StartsWith(message, prefix)) {
      message = "operator" + message.substr(prefix.size());
    }
    return Invalid(message);
  }
  const v1::Operator& op = request.operator_();
  std::set<std::string> tunables;
  for (const v1::Tunable& t : op.tunables()) tunables.insert(t.name());
  if (request.settings_size() > kMaxSettings) {
    return Invalid(absl::StrCat("settings: ", request.settings_size(),
                                " settings exceed the limit of ",
                                kMaxSettings));
  }
  for (int i = 0; i < request.settings_size(); ++i) {
    std::set<std::string> seen;
    const v1::Setting& setting = request.settings(i);
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
    }
  }
  std::set<std::string> call_values;
  for (const v1::CallValue& v : op.values()) call_values.insert(v.name());
  for (const auto& [name, value] : request.values()) {
    if (!call_values.count(name)) {
      return Invalid(absl::StrCat("values[\"", name,
                                  "\"]: the operator has no such call value"));
    }
  }
  std::map<std::string, uint64_t> sizes;
  for (const v1::Buffer& b : op.buffers()) {
    uint64_t n = DTypeSize(b.dtype());
    for (uint64_t d : b.shape()) n *= d;  // bounded by validation above
    sizes[b.name()] = n;
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
  if (request.repeats() == 1) {
    return Invalid("repeats: must be 0 (9) or at least 2");
  }
  if (request.repeats() > 65536) {
    return Invalid("repeats: at most 65536");
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

namespace {

// Streams the tuner's progress as job events. Between shapes it lets queued
// Measure jobs run (JobContext::Yield).
class JobProgress : public AutotuneProgress {
 public:
  JobProgress(JobContext& context, const MeteredDevice& meter,
              const absl::Time start)
      : context_(context), meter_(meter), start_(start) {}

  void OnShape(int index, int total, const std::string& key) override {
    if (index > 0) {
      context_.SetShapes(index, total);
      context_.Yield();
    }
    shape_ = key;
    timed_ = 0;
    best_.reset();
    v1::AutotuneEvent event;
    v1::ShapeProgress* p = event.mutable_progress();
    p->set_index(index);
    p->set_total(total);
    p->set_shape(key);
    if (index > 0) {
      const double per_shape =
          absl::ToDoubleSeconds(absl::Now() - start_) / index;
      p->set_eta_seconds(per_shape * (total - index));
    }
    index_ = index;
    total_ = total;
    context_.Emit(std::move(event));
  }

  void OnTrial(int, const Comparison& trial) override {
    ++timed_;
    if (trial.Gains() && (!best_ || trial.delta_us < best_->delta_us)) {
      best_ = trial;
    }
    v1::AutotuneEvent event;
    v1::TrialEvent* t = event.mutable_trial();
    t->set_shape(shape_);
    *t->mutable_trial() = trial.ToProto();
    context_.Emit(std::move(event));
    v1::AutotuneEvent progress;
    v1::ShapeProgress* p = progress.mutable_progress();
    p->set_index(index_);
    p->set_total(total_);
    p->set_shape(shape_);
    p->set_settings_timed(timed_);
    if (best_) {
      p->set_has_best(true);
      for (const v1::Field& f : best_->tunables) *p->add_best() = f;
      p->set_best_delta_us(best_->delta_us);
      p->set_best_noise_us(best_->noise_us.value_or(0));
    }
    context_.Emit(std::move(progress));
  }

  void OnLog(const std::string& line) override { context_.Log(line); }

 private:
  JobContext& context_;
  const MeteredDevice& meter_;
  const absl::Time start_;
  std::string shape_;
  int index_ = 0;
  int total_ = 0;
  uint32_t timed_ = 0;
  std::optional<Comparison> best_;
};

}  // namespace

absl::StatusOr<v1::AutotuneResult> DeviceJobRunner::RunAutotune(
    const v1::AutotuneRequest& request, JobContext& context) {
  const absl::Time start = absl::Now();
  AutotuneOptions options;
  options.timing = request.timing();
  options.repeats =
      request.repeats() == 0 ? 9 : static_cast<int>(request.repeats());
  if (request.packaging() != v1::PACKAGING_UNSPECIFIED) {
    options.packaging = request.packaging();
  }
  options.remeasure = request.remeasure();
  options.seed = request.seed();
  options.cycles_path = cycles_path_;

  MeteredDevice meter(device_);
  JobProgress progress(context, meter, start);
  AutotuneDeps deps;
  deps.device = &meter;
  deps.builder = builder_;
  deps.cache = cache_;
  deps.progress = &progress;
  deps.cancelled = [&context] { return context.cancelled(); };
  deps.env.sleep = [&context](absl::Duration d) { context.Sleep(d); };
  ASSIGN_OR_RETURN(
      TuneResult tuned,
      Autotune(request.calls(), Profile(request.profile()), options, deps));

  v1::AutotuneResult result;
  *result.mutable_profile() = tuned.profile.proto();
  *result.mutable_diff() = tuned.diff;
  v1::AutotuneStats* stats = result.mutable_stats();
  stats->set_shapes(static_cast<uint32_t>(tuned.shapes.size()));
  stats->set_settings_timed(static_cast<uint32_t>(tuned.stats.device_timed));
  stats->set_cache_hits(static_cast<uint32_t>(tuned.stats.cache_hits));
  stats->set_device_seconds(meter.device_us() / 1e6);
  stats->set_wall_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  context.SetShapes(stats->shapes(), stats->shapes());
  return result;
}

absl::StatusOr<v1::MeasureResult> DeviceJobRunner::RunMeasure(
    const v1::MeasureRequest& request, JobContext& context) {
  ASSIGN_OR_RETURN(Platform platform, device_->GetPlatform());
  MeasurePlan m;
  m.settings.push_back(request.operator_());
  for (const v1::Setting& s : request.settings()) {
    m.settings.push_back(ApplySetting(request.operator_(), s));
  }
  m.timing = request.timing();
  m.repeats = request.repeats() == 0 ? 9 : static_cast<int>(request.repeats());
  m.packaging = request.packaging();
  if (m.packaging == v1::PACKAGING_UNSPECIFIED) {
    m.packaging =
        platform.full_elf ? v1::PACKAGING_FULL_ELF : v1::PACKAGING_XCLBIN_CHAIN;
  }
  for (const auto& [name, value] : request.values()) m.values[name] = value;
  for (const v1::Content& c : request.inputs()) m.inputs[c.buffer()] = c.data();
  m.remeasure = request.remeasure();
  m.seed = request.seed();

  MeasureDeps deps;
  deps.device = device_;
  deps.builder = builder_;
  deps.cache = cache_;
  deps.env.cancelled = [&context] { return context.cancelled(); };
  deps.env.sleep = [&context](absl::Duration d) { context.Sleep(d); };
  deps.env.log = [&context](const std::string& line) { context.Log(line); };
  context.SetShapes(0, 1);
  ASSIGN_OR_RETURN(MeasureOutcome measured, Measure(m, deps));
  context.SetShapes(1, 1);

  v1::MeasureResult result;
  std::set<int> cached(measured.cached.begin(), measured.cached.end());
  for (int i = 0; i < static_cast<int>(m.settings.size()); ++i) {
    v1::SettingMeasurement* sm = result.add_settings();
    if (i == 0) {
      for (const v1::Tunable& t : request.operator_().tunables()) {
        v1::Field* f = sm->mutable_setting()->add_tunables();
        f->set_name(t.name());
        *f->mutable_value() = t.value();
      }
    } else {
      *sm->mutable_setting() = request.settings(i - 1);
    }
    sm->set_cached(cached.count(i) > 0);
    if (auto it = measured.refused.find(i); it != measured.refused.end()) {
      sm->set_refused(it->second);
    }
    auto it = measured.measurements.find(i);
    if (it == measured.measurements.end()) continue;
    *sm->mutable_measurement() = it->second;
    if (i > 0) {
      const Delta d = AgainstDefault(it->second);
      sm->set_has_delta(true);
      sm->set_delta_us(d.delta_us);
      if (d.noise_us) sm->set_noise_us(*d.noise_us);
    }
  }
  return result;
}

}  // namespace irontune
