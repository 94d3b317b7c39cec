#include "daemon/tune/measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/recording.h"
#include "common/status_macros.h"
#include "daemon/base/sha256.h"
#include "daemon/base/stats.h"
#include "daemon/base/thread_roles.h"
#include "daemon/npu/build_pool.h"
#include "daemon/store/cache.h"
#include "daemon/store/cache_key.h"
#include "daemon/tune/inputs.h"
#include "daemon/tune/judge.h"
#include "daemon/tune/settings.h"

namespace irontune {
namespace {

// Buffers' bytes by operator buffer name.
using OutputMap = std::map<std::string, std::string>;

// "GEMM tile_m=64 ...": the class and its tunables' values, for logs.
std::string OperatorText(const v1::Operator& op) {
  const std::string tunables = SettingText(RecordedSetting(op));
  return tunables.empty() ? op.class_name()
                          : absl::StrCat(op.class_name(), " ", tunables);
}

// A setting built and loaded twice: 1 step and `repeats` steps.
struct Probe {
  int index = 0;
  Artifact one_artifact;
  std::unique_ptr<Image> one;
  std::unique_ptr<Image> many;
  // The inputs `one` was given, by operator buffer name.
  std::map<std::string, SharedBytes> fed;
};

// The given inputs' sha256s by name, sorted: part of the cache key.
std::map<std::string, std::string> GivenDigests(const MeasurePlan& request) {
  std::map<std::string, std::string> out;
  for (const auto& [name, bytes] : request.inputs) {
    out[name] = InputDigest(bytes);
  }
  return out;
}

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

uint64_t TotalBytes(const v1::Operator& op) {
  uint64_t total = 0;
  for (const v1::Buffer& b : op.buffers()) {
    total += BufferBytes(b).value_or(0);
  }
  return total;
}

// One Measure call: its plan, the context, and what it has found so far.
// Plan() takes from the cache what it holds (without building where the
// cache keeps a setting's built identity) and builds the rest's 1-step
// designs; then each batch is loaded, run once for its output, timed
// interleaved and recorded, the later batches' designs building meanwhile.
class Measurer {
 public:
  Measurer(const MeasurePlan& plan, TuneContext& context)
      : plan_(plan),
        context_(context),
        n_(static_cast<int>(plan.settings.size())),
        ones_(n_),
        keys_(n_) {}

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
      absl::Status timed = TimeBatch(batch);
      if (timed.ok()) timed = PlanUpTo(begin + 2 * batch_size);
      if (!timed.ok()) {
        // The batches timed before still count.
        FinishDigests().IgnoreError();
        return timed;
      }
    }
    RETURN_IF_ERROR(FinishDigests());
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
    distinct_ = MeasureRequest(plan_.settings[0], plan_.settings[0], platform_,
                               plan_.repeats, plan_.packaging)
                    .distinct;
    return absl::OkStatus();
  }

  BuildRequest OneStep(int i) const {
    return MeasureRequest(plan_.settings[i], plan_.settings[0], platform_, 1,
                          plan_.packaging);
  }
  BuildRequest ManySteps(int i) const {
    return MeasureRequest(plan_.settings[i], plan_.settings[0], platform_,
                          plan_.repeats, plan_.packaging);
  }

  // The builder's outcome for `request`, giving up once cancelled.
  absl::StatusOr<BuildOutcome> BuildOf(const BuildRequest& request) {
    return context_.builder().Await(request,
                                    [this] { return context_.cancelled(); });
  }

  // Takes what the cache holds without building (KnownFigures) and queues
  // the rest's designs, each setting's 1-step design with its many-step
  // one behind it, in the order they are timed, so a builder with threads
  // builds the first batch's first; then waits for the default's 1-step
  // design. The rest are waited for batch by batch (PlanUpTo), so the
  // first batch is timed while the later ones build.
  absl::Status Plan() {
    given_ = GivenDigests(plan_);
    for (const auto& [name, bytes] : plan_.inputs) {
      given_bytes_[name] = std::make_shared<const std::string>(bytes);
    }
    std::vector<bool> known(n_, false);
    RETURN_IF_ERROR(KnownFigures(known));
    for (int i = 0; i < n_; ++i) {
      if (!known[i]) unplanned_.push_back(i);
    }
    if (!unplanned_.empty() && unplanned_.front() != 0) {
      unplanned_.push_front(0);
    }
    default_known_ = known[0];
    for (int i : unplanned_) {
      context_.builder().Prefetch(OneStep(i));
      context_.builder().Prefetch(ManySteps(i));
    }
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

  // The settings whose built identity (recipe and artifact hash of the
  // 1-step design) the cache keeps and whose figure it holds, taken with
  // two lookups for all of them: no build. Marks them in `known`.
  absl::Status KnownFigures(std::vector<bool>& known) {
    Cache* cache = context_.cache();
    if (cache == nullptr || plan_.remeasure) return absl::OkStatus();
    std::vector<VerdictKey> ids;
    for (int i = 0; i < n_; ++i) ids.push_back(IdentityKey(OneStep(i)));
    ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> found,
                     cache->GetVerdicts(ids));
    std::vector<int> which;
    std::vector<std::string> digests;
    for (int i = 0; i < n_; ++i) {
      if (!found[i]) continue;
      const std::vector<std::string> parts = absl::StrSplit(*found[i], ' ');
      if (parts.size() != 2) continue;
      keys_[i] = KeyOf(parts[0], parts[1]);
      which.push_back(i);
      digests.push_back(keys_[i]);
    }
    ASSIGN_OR_RETURN(std::vector<std::optional<v1::Measurement>> hits,
                     cache->GetMany(digests));
    for (size_t k = 0; k < which.size(); ++k) {
      if (!hits[k]) continue;
      outcome_.measurements[which[k]] = *std::move(hits[k]);
      outcome_.cached.push_back(which[k]);
      known[which[k]] = true;
    }
    return absl::OkStatus();
  }

  // Where the cache keeps what `request` built as: "RECIPE ARTIFACT".
  VerdictKey IdentityKey(const BuildRequest& request) {
    if (environment_.empty()) environment_ = context_.builder().Environment();
    return BuiltIdentityKey(request, environment_);
  }

  // Setting `i`'s 1-step build: refused (left out; the default's refusal
  // is an error), or built, its identity kept, its figure taken from the
  // cache unless `taken` already or there is none. A build error of a
  // setting other than the default is its verdict too.
  absl::Status PlanBuilt(int i, bool taken) {
    absl::StatusOr<BuildOutcome> outcome = BuildOf(OneStep(i));
    if (!outcome.ok()) {
      if (i == 0 || absl::IsCancelled(outcome.status())) {
        return outcome.status();
      }
      outcome = BuildOutcome{
          std::nullopt,
          absl::StrCat("the build failed: ", outcome.status().ToString())};
    }
    if (!outcome->artifact) {
      if (i == 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the recorded setting ", OperatorText(plan_.settings[0]),
            " does not build: ", outcome->refusal));
      }
      context_.Log(
          absl::StrCat("    ", OperatorText(plan_.settings[i]),
                       " does not build, not measured: ", outcome->refusal));
      outcome_.refused[i] = outcome->refusal;
      return absl::OkStatus();
    }
    ones_[i] = *std::move(outcome->artifact);
    keys_[i] = KeyOf(ones_[i].recipe_hash, ones_[i].artifact_hash);
    if (context_.cache() != nullptr) {
      RETURN_IF_ERROR(context_.cache()->PutVerdict(
          IdentityKey(OneStep(i)),
          absl::StrCat(ones_[i].recipe_hash, " ", ones_[i].artifact_hash)));
    }
    if (taken) return absl::OkStatus();
    ASSIGN_OR_RETURN(bool cached, TakeCached(i));
    if (!cached && i != 0) todo_.push_back(i);
    return absl::OkStatus();
  }

  std::string KeyOf(const std::string& recipe_hash,
                    const std::string& artifact_hash) const {
    CacheKey key;
    key.recipe_hash = recipe_hash;
    key.artifact_hash = artifact_hash;
    key.values.insert(plan_.values.begin(), plan_.values.end());
    key.input_sha256 = given_;
    key.packaging = plan_.packaging;
    key.repeats = plan_.repeats;
    key.distinct = distinct_;
    key.tag = plan_.cache_tag;
    return key.Digest();
  }

  absl::StatusOr<bool> TakeCached(int i) {
    if (context_.cache() == nullptr || plan_.remeasure) return false;
    ASSIGN_OR_RETURN(std::optional<v1::Measurement> hit,
                     context_.cache()->Get(keys_[i]));
    if (!hit) return false;
    outcome_.measurements[i] = *std::move(hit);
    outcome_.cached.push_back(i);
    return true;
  }

  // Loads a batch, runs each 1-step image once for its output, times the
  // batch interleaved, then reads the outputs (made ready meanwhile) and
  // records the figures, their digests made on a helper thread while the
  // next batch runs.
  absl::Status TimeBatch(const std::vector<int>& batch) {
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
    RETURN_IF_ERROR(FinishDigests());
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
  absl::Status FinishDigests() {
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
      if (context_.cache() != nullptr) {
        RETURN_IF_ERROR(context_.cache()->Put(keys_[i], m));
      }
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
      ASSIGN_OR_RETURN(std::optional<Artifact> many, ManyOf(i));
      if (many) built.emplace_back(i, *std::move(many));
    }
    std::vector<InputCache::Want> wants;
    for (const auto& [i, many] : built) {
      AddArtifactWants(plan_.settings[i], ones_[i], plan_.inputs, plan_.seed,
                       wants);
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
      probe.one_artifact = ones_[i];
      // A failed load is the device's state, not the setting's: not caught.
      ASSIGN_OR_RETURN(probe.one, context_.device().Load(ones_[i]));
      ASSIGN_OR_RETURN(probe.many, context_.device().Load(many));
      RETURN_IF_ERROR(
          Fill(plan_.settings[i], ones_[i], *probe.one, &probe.fed));
      RETURN_IF_ERROR(Fill(plan_.settings[i], many, *probe.many, nullptr));
      probes.push_back(std::move(probe));
    }
    return probes;
  }

  // Setting `i`'s `repeats`-step design; nullopt where it is refused or
  // its build fails (then recorded in outcome_.refused), an error for the
  // default's.
  absl::StatusOr<std::optional<Artifact>> ManyOf(int i) {
    absl::StatusOr<BuildOutcome> built = BuildOf(ManySteps(i));
    if (!built.ok() && i != 0 && !absl::IsCancelled(built.status())) {
      built = BuildOutcome{
          std::nullopt,
          absl::StrCat("the build failed: ", built.status().ToString())};
    }
    RETURN_IF_ERROR(built.status());
    if (built->artifact) return std::move(built->artifact);
    if (i == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("the recorded setting's ", plan_.repeats,
                       "-step runlist does not build: ", built->refusal));
    }
    outcome_.refused[i] = built->refusal;
    return std::nullopt;
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
        Sha256Hex(absl::StrCat(plan_.seed, "/", batch_number_++, "/", keys_[0],
                               "/", absl::ToUnixNanos(absl::Now())))
            .substr(0, 32);
    const size_t m = probes.size();
    Pending pending;
    std::vector<double> default_steps;
    double drift = kDriftFloor;  // between batches, a share of the step
    for (size_t j = 0; j < m; ++j) {
      const auto& many = times.runs[m + j].rounds_us;
      const std::vector<double> steps =
          StepTimes(times.runs[j].rounds_us, many);
      if (j == 0) {
        default_steps = steps;
        drift = BetweenBatches(Median(steps));
      }
      v1::Measurement out;
      out.set_t_step_us(Median(steps));
      if (const std::optional<double> within = MedianStandardError(steps)) {
        out.set_t_step_noise_us(std::hypot(*within, drift * out.t_step_us()));
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
  TuneContext& context_;
  const int n_;
  Platform platform_;
  bool distinct_ = true;
  std::vector<Artifact> ones_;                // each setting's 1-step artifact
  std::vector<std::string> keys_;             // each setting's cache key
  std::map<std::string, std::string> given_;  // GivenDigests
  // The plan's inputs, made shared once for every image of the call.
  std::map<std::string, SharedBytes> given_bytes_;
  std::string environment_;  // the builder's, for IdentityKey
  std::vector<int> todo_;    // settings to time, default left out
  // Settings whose 1-step design is not waited for yet, in order, and
  // whether the default's figure was found in the cache.
  std::deque<int> unplanned_;
  bool default_known_ = false;
  double fastest_ = std::numeric_limits<double>::infinity();
  int batch_number_ = 0;
  std::vector<double> default_batches_;  // the default's figure, each batch
  MeasureOutcome outcome_;
  // Last, so its digests are waited for before the members they read (the
  // plan's settings and values) are gone.
  std::optional<Pending> pending_;
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
  def.clear_t_step_noise_us();  // m's noise; the drift share is m's
  for (double r : m.default_round_us()) def.add_round_us(r);
  def.set_t_step_us(
      m.default_round_us().empty()
          ? m.t_step_us()
          : Median(std::vector<double>(m.default_round_us().begin(),
                                       m.default_round_us().end())));
  return MeasurementDifference(m, def);
}

namespace {

// The share of `m`'s step that moved its whole batch (drift): its
// t_step_noise_us less the rounds' own standard error, over its step time
// (kDriftFloor or the spread between batches, as Record set it); 0 where
// it has no noise or no rounds.
double DriftShare(const v1::Measurement& m) {
  if (!m.has_t_step_noise_us() || !(m.t_step_us() > 0)) return 0;
  const std::vector<double> rounds(m.round_us().begin(), m.round_us().end());
  const double within = MedianStandardError(rounds).value_or(0);
  const double noise = m.t_step_noise_us();
  return std::sqrt(std::max(0.0, noise * noise - within * within)) /
         m.t_step_us();
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
  // differences but scales the delta itself: that share of |delta| is
  // added in quadrature. Measured apart, each figure's own drift counts.
  if (a.run() == b.run() && ra.size() == rb.size() && !ra.empty()) {
    const Difference d = PairedDifference(ra, rb);
    out.delta_us = d.delta;
    if (d.noise) {
      const double drift = std::max(DriftShare(a), DriftShare(b));
      out.noise_us = std::hypot(*d.noise, drift * d.delta);
    }
  } else if (!ra.empty() && !rb.empty()) {
    const Difference d = UnpairedDifference(ra, rb);
    out.delta_us = d.delta;
    if (d.noise) {
      out.noise_us = std::hypot(*d.noise, DriftShare(a) * a.t_step_us(),
                                DriftShare(b) * b.t_step_us());
    }
  } else {
    out.delta_us = a.t_step_us() - b.t_step_us();
  }
  return out;
}

}  // namespace irontune
