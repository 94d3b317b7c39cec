#include "daemon/tune/measure_batch.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "daemon/base/sha256.h"
#include "daemon/base/stats.h"
#include "daemon/base/thread_roles.h"
#include "daemon/tune/inputs.h"
#include "daemon/tune/interleave.h"
#include "daemon/tune/judge.h"

namespace irontune {
namespace {

// Buffers' bytes by operator buffer name.
using OutputMap = std::map<std::string, std::string>;

// A setting built and loaded twice: 1 step and `repeats` steps.
struct Probe {
  int index = 0;
  Artifact one_artifact;
  std::unique_ptr<Image> one;
  std::unique_ptr<Image> many;
  // The inputs `one` was given, by operator buffer name.
  std::map<std::string, SharedBytes> fed;
};

// Writes the per-call values and hands `image` its inputs: those given
// (`given`, the plan's inputs made shared once per Measure call) and the
// rest seeded, from `memo` by (dtype, bytes, seed), so every setting of a
// design shares one copy of each. Each input handed over is also put in
// `fed` (may be null) by operator buffer name.
absl::Status PrepareImage(const v1::Operator& op, const Artifact& artifact,
                          const MeasurePlan& request,
                          const std::map<std::string, SharedBytes>& given,
                          InputCache& memo, Image& image,
                          std::map<std::string, SharedBytes>* fed) {
  std::map<std::string, int64_t> symbols;
  for (const auto& [value_name, value] : request.values) {
    const std::string& name = value_name;  // a lambda cannot capture a binding
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
    SharedBytes bytes;
    if (auto it = given.find(ob.name()); it != given.end()) {
      if (it->second->size() != buf.nbytes) {
        return absl::InvalidArgumentError(
            absl::StrFormat("inputs.%s: %d bytes given, the buffer holds %d",
                            ob.name(), it->second->size(), buf.nbytes));
      }
      bytes = it->second;
    } else {
      bytes = memo.Get(ob.dtype(), buf.nbytes,
                       OperatorInputSeed(request.seed, buf.op_buffer));
    }
    if (fed != nullptr) (*fed)[ob.name()] = bytes;
    RETURN_IF_ERROR(image.ShareBuffer(buf.name, std::move(bytes)));
  }
  return absl::OkStatus();
}

// Whether a run of `artifact` changes a buffer it also reads (in place):
// then what one run wrote differs from what later runs leave.
bool InPlace(const Artifact& artifact) {
  return std::any_of(
      artifact.buffers.begin(), artifact.buffers.end(),
      [](const ArtifactBuffer& b) { return b.fills && b.drains; });
}

// What the 1-step image of `p` wrote; with `last`, taken (Image::TakeBuffer):
// the image is not read again. REQUIRES: the image has run, and no run
// since the first changed its outputs (see InPlace).
absl::StatusOr<OutputMap> ReadWritten(const v1::Operator& op, const Probe& p,
                                      bool last) {
  OutputMap written;
  for (const ArtifactBuffer& buf : p.one_artifact.buffers) {
    if (buf.op_buffer < 0 || buf.op_buffer >= op.buffers_size()) continue;
    if (!buf.drains) continue;
    ASSIGN_OR_RETURN(
        written[op.buffers(buf.op_buffer).name()],
        last ? p.one->TakeBuffer(buf.name) : p.one->ReadBuffer(buf.name));
  }
  return written;
}

// The inputs the 1-step image of `p` was given that no run changes (those
// a run also writes are its output): the same bytes, shared.
std::map<std::string, SharedBytes> InputsOf(const v1::Operator& op,
                                            const Probe& p) {
  std::map<std::string, SharedBytes> inputs;
  for (const ArtifactBuffer& buf : p.one_artifact.buffers) {
    if (buf.op_buffer < 0 || buf.op_buffer >= op.buffers_size()) continue;
    if (!buf.fills || buf.drains) continue;
    const std::string& name = op.buffers(buf.op_buffer).name();
    if (auto it = p.fed.find(name); it != p.fed.end()) {
      inputs[name] = it->second;
    }
  }
  return inputs;
}

std::string Today() {
  return absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone());
}

}  // namespace

class MeasureBatches::Impl {
 public:
  Impl(const MeasurePlan& plan, MeasureBuilds& builds, MeasureCache& cache,
       TuneContext& context, MeasureOutcome& outcome)
      : plan_(plan),
        builds_(builds),
        cache_(cache),
        context_(context),
        outcome_(outcome) {
    for (const auto& [name, bytes] : plan_.inputs) {
      given_bytes_[name] = std::make_shared<const std::string>(bytes);
    }
  }

  // Loads a batch, runs each 1-step image once for its output, times the
  // batch interleaved, then reads the outputs (made ready meanwhile) and
  // records the figures, their digests made on a helper thread while the
  // next batch runs.
  absl::Status Time(const std::vector<int>& batch) {
    ASSIGN_OR_RETURN(Platform before, context_.device().GetPlatform());
    if (context_.cache() != nullptr) {
      RETURN_IF_ERROR(context_.cache()->CheckPowerMode(before.power_mode));
    }
    ASSIGN_OR_RETURN(std::vector<Probe> probes, Load(batch));
    std::vector<const Probe*> later;   // outputs read after the timing
    std::map<int, OutputMap> written;  // by setting, until digested
    for (Probe& p : probes) {
      RETURN_IF_ERROR(p.one->Run().status());
      if (InPlace(p.one_artifact)) {
        RETURN_IF_ERROR(KeepOutput(p, /*last=*/false, written));
      } else {
        p.one->PrepareOutputs();
        later.push_back(&p);
      }
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
    ASSIGN_OR_RETURN(InterleaveResult times,
                     TimeInterleaved(images, groups, plan_.timing, fastest_,
                                     plan_.idle, context_));
    RETURN_IF_ERROR(Finish());
    for (const Probe* p : later) {
      RETURN_IF_ERROR(KeepOutput(*p, /*last=*/true, written));
    }
    ASSIGN_OR_RETURN(Platform after, context_.device().GetPlatform());
    RETURN_IF_ERROR(SamePowerMode(before, after));
    return Record(probes, times, after, std::move(written));
    // The probes release their contexts here, before the next batch loads.
  }

  // Reads what `p`'s 1-step image wrote into `written` (taken where the
  // image is `last` read); for the default, keeps the inputs it was given
  // (shared, not read back) for judging.
  absl::Status KeepOutput(const Probe& p, bool last,
                          std::map<int, OutputMap>& written) {
    const v1::Operator& op = plan_.settings[p.index];
    ASSIGN_OR_RETURN(written[p.index], ReadWritten(op, p, last));
    if (p.index == 0) outcome_.outputs[0].inputs = InputsOf(op, p);
    return absl::OkStatus();
  }

  // A setting's output digest, with the output until it is known whether
  // a judge needs it.
  struct Digested {
    std::string digest;
    OutputMap written;
  };

  // The figures of the last batch recorded, waiting for their digests.
  struct Pending {
    std::vector<int> index;  // the setting of each measurement
    std::vector<v1::Measurement> measurements;
    // Helper f digests measurements f, f + n, f + 2n... of the n helpers.
    std::vector<std::future<std::vector<Digested>>> digests;
  };

  // Digests `written` (by setting; each batch's outputs are its own) on up
  // to HelperThreads() helper threads, which hold the outputs meanwhile:
  // the last batch of a call is waited for as it ends.
  std::vector<std::future<std::vector<Digested>>> StartDigests(
      const std::vector<int>& index, std::map<int, OutputMap> written) {
    const size_t n = std::min<size_t>(index.size(), HelperThreads());
    std::vector<std::vector<std::pair<int, OutputMap>>> shares(n);
    for (size_t j = 0; j < index.size(); ++j) {
      OutputMap mine;
      if (auto it = written.find(index[j]); it != written.end()) {
        mine = std::move(it->second);
      }
      shares[j % n].emplace_back(index[j], std::move(mine));
    }
    std::vector<std::future<std::vector<Digested>>> out;
    for (auto& share : shares) {
      out.push_back(std::async(
          std::launch::async,
          // mutable: each output is moved out of `share`, not copied.
          [share = std::move(share), this]() mutable {
            BecomeHelperThread();
            std::vector<Digested> digested;
            for (auto& [i, mine] : share) {
              Digested d;
              d.written = std::move(mine);
              d.digest =
                  OutputDigest(plan_.settings[i], d.written, plan_.values);
              digested.push_back(std::move(d));
            }
            return digested;
          }));
    }
    return out;
  }

  // The digests of `pending`, in its measurements' order, once made.
  static std::vector<Digested> DigestsOf(Pending& pending) {
    std::vector<Digested> out(pending.index.size());
    const size_t n = pending.digests.size();
    for (size_t f = 0; f < n; ++f) {
      std::vector<Digested> part = pending.digests[f].get();
      for (size_t k = 0; k < part.size(); ++k) {
        out[f + k * n] = std::move(part[k]);
      }
    }
    return out;
  }

  // Waits for the pending digests, then caches and keeps the figures; keeps
  // a setting's output only where its digest differs from the default's
  // (MeasureOutcome::outputs).
  absl::Status Finish() {
    if (!pending_) return absl::OkStatus();
    Pending done = *std::move(pending_);
    pending_.reset();
    std::vector<Digested> digested = DigestsOf(done);
    const auto def = std::find(done.index.begin(), done.index.end(), 0);
    const std::string* default_digest =
        def == done.index.end() ? nullptr
                                : &digested[def - done.index.begin()].digest;
    for (size_t j = 0; j < done.index.size(); ++j) {
      const int i = done.index[j];
      v1::Measurement& m = done.measurements[j];
      m.set_output(digested[j].digest);
      RETURN_IF_ERROR(cache_.Put(i, m));
      outcome_.measurements[i] = std::move(m);
      if (i != 0 && (default_digest == nullptr ||
                     digested[j].digest != *default_digest)) {
        outcome_.outputs[i].written = std::move(digested[j].written);
      }
    }
    return absl::OkStatus();
  }

  // The `repeats`-step designs of `batch` (waited for: they were queued at
  // Plan), the batch's seeded inputs made at once on helper threads, then
  // both images of each loaded and filled.
  absl::StatusOr<std::vector<Probe>> Load(const std::vector<int>& batch) {
    std::vector<std::pair<int, Artifact>> built;
    for (int i : batch) {
      // Waiting for a build may take a while: look for cancellation first.
      if (context_.cancelled()) {
        return absl::CancelledError("cancelled while preparing a batch");
      }
      ASSIGN_OR_RETURN(std::optional<Artifact> many,
                       builds_.AwaitManySteps(i, outcome_.refused));
      if (many) built.emplace_back(i, *std::move(many));
    }
    std::vector<InputCache::Want> wants;
    for (const auto& [i, many] : built) {
      AddArtifactWants(plan_.settings[i], builds_.one(i), plan_.inputs,
                       plan_.seed, wants);
      AddArtifactWants(plan_.settings[i], many, plan_.inputs, plan_.seed,
                       wants);
    }
    context_.inputs().MakeAll(wants, HelperThreads(), context_.lane());
    std::vector<Probe> probes;
    for (const auto& [i, many] : built) {
      if (context_.cancelled()) {
        return absl::CancelledError("cancelled while preparing a batch");
      }
      Probe probe;
      probe.index = i;
      probe.one_artifact = builds_.one(i);
      // A failed load is the device's state, not the setting's: not caught.
      ASSIGN_OR_RETURN(probe.one, context_.device().Load(builds_.one(i)));
      ASSIGN_OR_RETURN(probe.many, context_.device().Load(many));
      RETURN_IF_ERROR(
          Fill(plan_.settings[i], builds_.one(i), *probe.one, &probe.fed));
      RETURN_IF_ERROR(Fill(plan_.settings[i], many, *probe.many, nullptr));
      probes.push_back(std::move(probe));
    }
    return probes;
  }

  static int HelperThreads() {
    return static_cast<int>(
        std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  }

  absl::Status Fill(const v1::Operator& op, const Artifact& artifact,
                    Image& image, std::map<std::string, SharedBytes>* fed) {
    return PrepareImage(op, artifact, plan_, given_bytes_, context_.inputs(),
                        image, fed);
  }

  absl::Status SamePowerMode(const Platform& before, const Platform& after) {
    if (after.power_mode == before.power_mode) return absl::OkStatus();
    const std::string from(PowerModeName(before.power_mode));
    const std::string to(PowerModeName(after.power_mode));
    context_.Log(absl::StrCat("    the power mode changed from ", from, " to ",
                              to,
                              " during the batch; its figures are "
                              "discarded"));
    return absl::FailedPreconditionError(
        absl::StrCat("the NPU's power mode changed from ", from, " to ", to,
                     " while timing; the batch was discarded"));
  }

  // Each probe's step times, from its 1-step and many-step rounds, as a
  // Measurement, cached and kept.
  absl::Status Record(const std::vector<Probe>& probes,
                      const InterleaveResult& times, const Platform& after,
                      std::map<int, OutputMap> written) {
    const std::string run =
        Sha256Hex(absl::StrCat(plan_.seed, "/", batch_number_++, "/",
                               cache_.key(0), "/",
                               absl::ToUnixNanos(absl::Now())))
            .substr(0, 32);
    const size_t m = probes.size();
    ASSIGN_OR_RETURN(const std::optional<double> repeats, cache_.RepeatDrift());
    Pending pending;
    std::vector<double> default_steps;
    // Shares of the step: what moved this batch (the floor, or the spread
    // of the call's batches), and what moves a repeat of it (at least
    // that, or the spread of the repeats the cache has seen).
    double batch = kDriftFloor, repeat = kDriftFloor;
    for (size_t j = 0; j < m; ++j) {
      const auto& many = times.runs[m + j].rounds_us;
      const std::vector<double> steps =
          StepTimes(times.runs[j].rounds_us, many);
      if (j == 0) {
        default_steps = steps;
        batch = BetweenBatches(Median(steps));
        repeat = std::max(batch, repeats.value_or(0));
      }
      v1::Measurement out;
      out.set_t_step_us(Median(steps));
      if (const std::optional<double> within = MedianStandardError(steps)) {
        out.set_t_step_noise_us(std::hypot(*within, repeat * out.t_step_us()));
        out.set_batch_drift_share(batch);
      }
      for (double s : steps) out.add_round_us(s);
      out.set_run(run);
      out.set_power_mode(std::string(PowerModeName(after.power_mode)));
      out.set_calls(plan_.timing.calls());
      if (probes[j].index != 0) {
        for (double s : default_steps) out.add_default_round_us(s);
      }
      out.set_measured(Today());
      out.set_discarded_rounds(times.discarded_rounds);
      out.set_refused_calls(times.refused_calls);
      pending.index.push_back(probes[j].index);
      pending.measurements.push_back(std::move(out));
      fastest_ = std::min(fastest_, Median(many));
    }
    pending.digests = StartDigests(pending.index, std::move(written));
    pending_ = std::move(pending);
    return absl::OkStatus();
  }

  // The default's figure of this batch added to those of the call's
  // earlier batches: their relative spread (BatchNoise over the median),
  // at least kDriftFloor.
  double BetweenBatches(double default_us) {
    default_batches_.push_back(default_us);
    const std::optional<double> spread = BatchNoise(default_batches_);
    const double middle = Median(default_batches_);
    if (!spread || !(middle > 0)) return kDriftFloor;
    return std::max(kDriftFloor, *spread / middle);
  }

  // A step's time per round: (many - one) / (repeats - 1).
  std::vector<double> StepTimes(const std::vector<double>& one,
                                const std::vector<double>& many) const {
    std::vector<double> steps;
    for (size_t r = 0; r < std::min(one.size(), many.size()); ++r) {
      steps.push_back((many[r] - one[r]) / (plan_.repeats - 1));
    }
    return steps;
  }

  const MeasurePlan& plan_;
  MeasureBuilds& builds_;
  MeasureCache& cache_;
  TuneContext& context_;
  MeasureOutcome& outcome_;
  // The plan's inputs, made shared once for every image of the call.
  std::map<std::string, SharedBytes> given_bytes_;
  double fastest_ = std::numeric_limits<double>::infinity();
  int batch_number_ = 0;
  std::vector<double> default_batches_;  // the default's figure, each batch
  // Last, so its digests are waited for before the members they read are
  // gone.
  std::optional<Pending> pending_;
};

MeasureBatches::MeasureBatches(const MeasurePlan& plan, MeasureBuilds& builds,
                               MeasureCache& cache, TuneContext& context,
                               MeasureOutcome& outcome)
    : impl_(std::make_unique<Impl>(plan, builds, cache, context, outcome)) {}

MeasureBatches::~MeasureBatches() = default;

absl::Status MeasureBatches::Time(const std::vector<int>& batch) {
  return impl_->Time(batch);
}

absl::Status MeasureBatches::Finish() { return impl_->Finish(); }

}  // namespace irontune
