#include "daemon/tune/measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/recording.h"
#include "daemon/base/sha256.h"
#include "daemon/base/stats.h"
#include "common/status_macros.h"
#include "daemon/store/cache.h"
#include "daemon/store/cache_key.h"
#include "daemon/tune/inputs.h"

namespace irontune {
namespace {

void Log(const MeasureDeps& deps, const std::string& line) {
  if (deps.env.log) deps.env.log(line);
}

std::string SettingText(const v1::Operator& op) {
  std::string out = op.class_name();
  for (const v1::Tunable& t : op.tunables()) {
    switch (t.value().kind_case()) {
      case v1::Value::kIntValue:
        absl::StrAppend(&out, " ", t.name(), "=", t.value().int_value());
        break;
      case v1::Value::kBoolValue:
        absl::StrAppend(&out, " ", t.name(), "=",
                        t.value().bool_value() ? "true" : "false");
        break;
      case v1::Value::kStringValue:
        absl::StrAppend(&out, " ", t.name(), "=", t.value().string_value());
        break;
      case v1::Value::kDoubleValue:
        absl::StrAppend(&out, " ", t.name(), "=", t.value().double_value());
        break;
      case v1::Value::KIND_NOT_SET:
        break;
    }
  }
  return out;
}

// A setting built and loaded twice: 1 step and `repeats` steps.
struct Probe {
  int index = 0;
  Artifact one_artifact;
  std::unique_ptr<Image> one;
  std::unique_ptr<Image> many;
};

// The given inputs' sha256s by name, sorted: part of the cache key.
std::map<std::string, std::string> GivenDigests(const MeasurePlan& request) {
  std::map<std::string, std::string> out;
  for (const auto& [name, bytes] : request.inputs) {
    out[name] = InputDigest(bytes);
  }
  return out;
}

// Seeded inputs by (dtype, bytes, seed): every setting of a design gets the
// same ones, so they are made once per Measure call.
absl::Status PrepareImage(const v1::Operator& op, const Artifact& artifact,
                          const MeasurePlan& request, InputCache& memo,
                          Image& image) {
  std::map<std::string, int64_t> symbols;
  for (const auto& [name, value] : request.values) {
    auto it =
        std::find_if(op.values().begin(), op.values().end(),
                     [&](const v1::CallValue& v) { return v.name() == name; });
    if (it == op.values().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("values: ", op.class_name(), " has no per-call value \"",
                       name, "\""));
    }
    symbols[it->symbol()] = value;
  }
  if (!symbols.empty()) RETURN_IF_ERROR(image.WriteValues(symbols));
  for (const ArtifactBuffer& buf : artifact.buffers) {
    if (!buf.fills) continue;
    if (buf.op_buffer < 0 || buf.op_buffer >= op.buffers_size()) {
      return absl::InternalError(absl::StrCat("artifact buffer ", buf.name,
                                              " names no operator buffer"));
    }
    const v1::Buffer& ob = op.buffers(buf.op_buffer);
    auto given = request.inputs.find(ob.name());
    if (given != request.inputs.end()) {
      if (given->second.size() != buf.nbytes) {
        return absl::InvalidArgumentError(
            absl::StrFormat("inputs.%s: %d bytes given, the buffer holds %d",
                            ob.name(), given->second.size(), buf.nbytes));
      }
      RETURN_IF_ERROR(image.WriteBuffer(buf.name, given->second));
    } else {
      RETURN_IF_ERROR(image.ShareBuffer(
          buf.name,
          memo.Get(ob.dtype(), buf.nbytes,
                   InputSeed(request.seed, buf.step, buf.op_buffer))));
    }
  }
  return absl::OkStatus();
}

// Runs the 1-step image once and returns what it wrote and was given.
absl::StatusOr<SettingOutput> RunOnce(const v1::Operator& op,
                                      const Artifact& artifact, Image& image) {
  ASSIGN_OR_RETURN(RunResult r, image.Run());
  (void)r;
  SettingOutput out;
  for (const ArtifactBuffer& buf : artifact.buffers) {
    if (buf.op_buffer < 0 || buf.op_buffer >= op.buffers_size()) continue;
    const std::string& name = op.buffers(buf.op_buffer).name();
    if (buf.drains) {
      ASSIGN_OR_RETURN(out.written[name], image.ReadBuffer(buf.name));
    } else if (buf.fills) {
      ASSIGN_OR_RETURN(out.inputs[name], image.ReadBuffer(buf.name));
    }
  }
  return out;
}

std::string Digest(const SettingOutput& out) {
  Sha256 hash;
  for (const auto& [name, bytes] : out.written) hash.Update(bytes);
  return hash.HexDigest();
}

std::string Today() {
  return absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone());
}

uint64_t TotalBytes(const v1::Operator& op) {
  uint64_t total = 0;
  for (const v1::Buffer& b : op.buffers()) {
    uint64_t n = DTypeSize(b.dtype());
    for (uint64_t d : b.shape()) {
      n = (d != 0 && n > std::numeric_limits<uint64_t>::max() / d) ? 0 : n * d;
    }
    total += n;
  }
  return total;
}

}  // namespace

absl::StatusOr<MeasureOutcome> Measure(const MeasurePlan& request,
                                      MeasureDeps deps) {
  if (request.settings.empty()) {
    return absl::InvalidArgumentError("settings: none given");
  }
  if (request.repeats < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeats: ", request.repeats, " (at least 2)"));
  }
  deps.env.device = deps.device;
  ASSIGN_OR_RETURN(Platform platform, deps.device->GetPlatform());
  if (request.packaging == v1::PACKAGING_FULL_ELF && !platform.full_elf) {
    return absl::FailedPreconditionError(absl::StrCat(
        platform.name, " has no full-ELF dispatch; use the xclbin chain"));
  }
  if (deps.cache != nullptr) {
    RETURN_IF_ERROR(deps.cache->CheckPowerMode(platform.power_mode));
  }
  const v1::Timing timing = WithDefaults(request.timing);
  const std::map<std::string, std::string> given = GivenDigests(request);
  const bool distinct = TotalBytes(request.settings[0]) <= kDistinctBytes;
  const int n = static_cast<int>(request.settings.size());

  MeasureOutcome result;
  std::vector<Artifact> ones(n);
  std::vector<std::string> keys(n);
  std::vector<int> todo;
  for (int i = 0; i < n; ++i) {
    BuildRequest build{request.settings[i], platform, 1, true,
                       request.packaging};
    ASSIGN_OR_RETURN(BuildOutcome outcome, deps.builder->Build(build));
    if (!outcome.artifact) {
      if (i == 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the recorded setting ", SettingText(request.settings[0]),
            " does not build: ", outcome.refusal));
      }
      Log(deps,
          absl::StrCat("    ", SettingText(request.settings[i]),
                       " does not build, not measured: ", outcome.refusal));
      result.refused[i] = outcome.refusal;
      continue;
    }
    ones[i] = *std::move(outcome.artifact);
    CacheKey key;
    key.recipe_hash = ones[i].recipe_hash;
    key.artifact_hash = ones[i].artifact_hash;
    key.values.insert(request.values.begin(), request.values.end());
    key.input_sha256 = given;
    key.packaging = request.packaging;
    key.repeats = request.repeats;
    key.distinct = distinct;
    keys[i] = key.Digest();
    if (deps.cache != nullptr && !request.remeasure) {
      ASSIGN_OR_RETURN(std::optional<v1::Measurement> hit,
                       deps.cache->Get(keys[i]));
      if (hit) {
        result.measurements[i] = *std::move(hit);
        result.cached.push_back(i);
        continue;
      }
    }
    if (i != 0) todo.push_back(i);
  }
  const bool default_cached = result.measurements.count(0) > 0;
  if (todo.empty() && default_cached) return result;

  // Each setting is two images, one context each; one pair is the default's.
  const int batch_size = std::max(1, platform.hw_contexts / 2 - 1);
  double fastest = std::numeric_limits<double>::infinity();
  int batch_number = 0;
  InputCache local_inputs;
  InputCache& memo = deps.inputs != nullptr ? *deps.inputs : local_inputs;
  for (size_t begin = 0; begin < std::max<size_t>(todo.size(), 1);
       begin += batch_size) {
    std::vector<int> batch = {0};
    for (size_t k = begin; k < std::min(todo.size(), begin + batch_size); ++k) {
      batch.push_back(todo[k]);
    }
    Log(deps, absl::StrFormat("    timing %d settings, %d to go", batch.size(),
                              todo.size() - begin));
    ASSIGN_OR_RETURN(Platform before, deps.device->GetPlatform());
    if (deps.cache != nullptr) {
      RETURN_IF_ERROR(deps.cache->CheckPowerMode(before.power_mode));
    }
    std::vector<Probe> probes;
    for (int i : batch) {
      // Building, loading and filling a large design takes a while: look
      // for cancellation before each.
      if (deps.env.cancelled && deps.env.cancelled()) {
        return absl::CancelledError("cancelled while preparing a batch");
      }
      BuildRequest build{request.settings[i], platform, request.repeats,
                         distinct, request.packaging};
      ASSIGN_OR_RETURN(BuildOutcome many, deps.builder->Build(build));
      if (!many.artifact) {
        if (i == 0) {
          return absl::FailedPreconditionError(
              absl::StrCat("the recorded setting's ", request.repeats,
                           "-step runlist does not build: ", many.refusal));
        }
        result.refused[i] = many.refusal;
        continue;
      }
      Probe probe;
      probe.index = i;
      probe.one_artifact = ones[i];
      // A failed load is the device's state, not the setting's: not caught.
      ASSIGN_OR_RETURN(probe.one, deps.device->Load(ones[i]));
      ASSIGN_OR_RETURN(probe.many, deps.device->Load(*many.artifact));
      RETURN_IF_ERROR(PrepareImage(request.settings[i], ones[i], request, memo,
                                   *probe.one));
      RETURN_IF_ERROR(PrepareImage(request.settings[i], *many.artifact, request,
                                   memo, *probe.many));
      probes.push_back(std::move(probe));
    }
    std::vector<std::string> digests;
    for (Probe& p : probes) {
      ASSIGN_OR_RETURN(SettingOutput out, RunOnce(request.settings[p.index],
                                                  p.one_artifact, *p.one));
      digests.push_back(Digest(out));
      result.outputs[p.index] = std::move(out);
    }
    std::vector<Image*> images;
    std::vector<int> groups;
    for (Probe& p : probes) {
      images.push_back(p.one.get());
      groups.push_back(p.index);
    }
    for (Probe& p : probes) {
      images.push_back(p.many.get());
      groups.push_back(p.index);
    }
    ASSIGN_OR_RETURN(
        InterleaveResult times,
        TimeInterleaved(images, groups, timing, fastest, deps.env));
    ASSIGN_OR_RETURN(Platform after, deps.device->GetPlatform());
    if (after.power_mode != before.power_mode) {
      Log(deps,
          absl::StrCat("    the power mode changed from ",
                       std::string(PowerModeName(before.power_mode)), " to ",
                       std::string(PowerModeName(after.power_mode)),
                       " during the batch; its figures are discarded"));
      return absl::FailedPreconditionError(
          absl::StrCat("the NPU's power mode changed from ",
                       std::string(PowerModeName(before.power_mode)), " to ",
                       std::string(PowerModeName(after.power_mode)),
                       " while timing; the batch was discarded"));
    }
    const std::string run =
        Sha256Hex(absl::StrCat(request.seed, "/", batch_number++, "/", keys[0],
                               "/", absl::ToUnixNanos(absl::Now())))
            .substr(0, 32);
    const size_t m = probes.size();
    std::vector<double> default_steps;
    for (size_t j = 0; j < m; ++j) {
      const auto& one = times.runs[j].rounds_us;
      const auto& many = times.runs[m + j].rounds_us;
      std::vector<double> steps;
      for (size_t r = 0; r < std::min(one.size(), many.size()); ++r) {
        steps.push_back((many[r] - one[r]) / (request.repeats - 1));
      }
      if (j == 0) default_steps = steps;
      v1::Measurement out;
      out.set_t_step_us(Median(steps));
      for (double s : steps) out.add_round_us(s);
      out.set_output(digests[j]);
      out.set_run(run);
      out.set_power_mode(std::string(PowerModeName(after.power_mode)));
      out.set_calls(timing.calls());
      if (probes[j].index != 0) {
        for (double s : default_steps) out.add_default_round_us(s);
      }
      out.set_measured(Today());
      out.set_discarded_rounds(times.discarded_rounds);
      out.set_refused_calls(times.refused_calls);
      if (deps.cache != nullptr) {
        RETURN_IF_ERROR(deps.cache->Put(keys[probes[j].index], out));
      }
      result.measurements[probes[j].index] = std::move(out);
      fastest = std::min(fastest, Median(many));
    }
    // The probes release their contexts here, before the next batch loads.
  }
  return result;
}

Delta AgainstDefault(const v1::Measurement& m) {
  v1::Measurement def = m;
  def.clear_round_us();
  for (double r : m.default_round_us()) def.add_round_us(r);
  def.set_t_step_us(
      m.default_round_us().empty()
          ? m.t_step_us()
          : Median(std::vector<double>(m.default_round_us().begin(),
                                       m.default_round_us().end())));
  return MeasurementDifference(m, def);
}

Delta MeasurementDifference(const v1::Measurement& a,
                            const v1::Measurement& b) {
  std::vector<double> ra(a.round_us().begin(), a.round_us().end());
  std::vector<double> rb(b.round_us().begin(), b.round_us().end());
  Delta out;
  out.delta_us = a.t_step_us() - b.t_step_us();
  if (a.run() == b.run() && ra.size() == rb.size() && !ra.empty()) {
    out.noise_us = PairedDifference(ra, rb).noise;
  } else if (!ra.empty() && !rb.empty()) {
    out.noise_us = UnpairedDifference(ra, rb).noise;
  }
  return out;
}

}  // namespace irontune
