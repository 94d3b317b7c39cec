#include "daemon/tune/measure_cache.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "daemon/store/cache.h"
#include "daemon/store/cache_key.h"
#include "daemon/tune/inputs.h"

namespace irontune {
namespace {

// The given inputs' sha256s by name, sorted: part of the cache key.
std::map<std::string, std::string> GivenDigests(const MeasurePlan& request) {
  std::map<std::string, std::string> out;
  for (const auto& [name, bytes] : request.inputs) {
    out[name] = InputDigest(bytes);
  }
  return out;
}

}  // namespace

MeasureCache::MeasureCache(const MeasurePlan& plan, const MeasureBuilds& builds,
                           TuneContext& context)
    : plan_(plan),
      builds_(builds),
      context_(context),
      keys_(plan.settings.size()),
      given_(GivenDigests(plan)) {}

absl::Status MeasureCache::KnownFigures(std::vector<bool>& known,
                                        MeasureOutcome& outcome) {
  Cache* cache = context_.cache();
  if (cache == nullptr || plan_.remeasure) return absl::OkStatus();
  const int n = static_cast<int>(plan_.settings.size());
  std::vector<VerdictKey> ids;
  for (int i = 0; i < n; ++i) ids.push_back(IdentityKey(builds_.OneStep(i)));
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> found,
                   cache->GetVerdicts(ids));
  std::vector<int> which;
  std::vector<std::string> digests;
  for (int i = 0; i < n; ++i) {
    if (!found[i]) continue;
    const std::vector<std::string> parts = absl::StrSplit(*found[i], ' ');
    if (parts.size() != 2) continue;
    keys_[i] = KeyOf(parts[0], parts[1]);
    which.push_back(i);
    digests.push_back(keys_[i]);
  }
  ASSIGN_OR_RETURN(std::vector<std::optional<v1::Measurement>> hits,
                   cache->GetMany(digests, FigureTiming::Of(plan_.timing)));
  for (size_t k = 0; k < which.size(); ++k) {
    if (!hits[k]) continue;
    outcome.measurements[which[k]] = *std::move(hits[k]);
    outcome.cached.push_back(which[k]);
    known[which[k]] = true;
  }
  return absl::OkStatus();
}

absl::Status MeasureCache::Built(int i, const Artifact& one) {
  keys_[i] = KeyOf(one.recipe_hash, one.artifact_hash);
  if (context_.cache() == nullptr) return absl::OkStatus();
  return context_.cache()->PutVerdict(
      IdentityKey(builds_.OneStep(i)),
      absl::StrCat(one.recipe_hash, " ", one.artifact_hash));
}

absl::StatusOr<bool> MeasureCache::TakeCached(int i, MeasureOutcome& outcome) {
  if (context_.cache() == nullptr || plan_.remeasure) return false;
  ASSIGN_OR_RETURN(
      std::optional<v1::Measurement> hit,
      context_.cache()->Get(keys_[i], FigureTiming::Of(plan_.timing)));
  if (!hit) return false;
  outcome.measurements[i] = *std::move(hit);
  outcome.cached.push_back(i);
  return true;
}

absl::Status MeasureCache::Put(int i, const v1::Measurement& m) {
  if (context_.cache() == nullptr) return absl::OkStatus();
  return context_.cache()->Put(keys_[i], m, FigureTiming::Of(plan_.timing));
}

absl::StatusOr<std::optional<double>> MeasureCache::RepeatDrift() {
  if (!repeat_drift_) {
    std::optional<double> share;
    if (context_.cache() != nullptr) {
      ASSIGN_OR_RETURN(const RepeatSpread spread, context_.cache()->Spread());
      share = spread.share();
    }
    repeat_drift_ = share;
  }
  return *repeat_drift_;
}

std::string MeasureCache::KeyOf(const std::string& recipe_hash,
                                const std::string& artifact_hash) const {
  CacheKey key;
  key.recipe_hash = recipe_hash;
  key.artifact_hash = artifact_hash;
  key.values.insert(plan_.values.begin(), plan_.values.end());
  key.input_sha256 = given_;
  key.packaging = plan_.packaging;
  key.repeats = plan_.repeats;
  key.distinct = builds_.distinct();
  key.tag = plan_.cache_tag;
  return key.Digest();
}

VerdictKey MeasureCache::IdentityKey(const BuildRequest& request) {
  if (environment_.empty()) environment_ = context_.builder().Environment();
  return BuiltIdentityKey(request, environment_);
}

}  // namespace irontune
