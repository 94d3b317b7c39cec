#include "daemon/scheduler/replies.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

namespace irontune {

v1::Trial TrialOf(const Comparison& comparison) {
  v1::Trial trial;
  for (const v1::Field& f : comparison.tunables) *trial.add_tunables() = f;
  trial.set_delta_us(comparison.delta_us);
  if (comparison.noise_us.has_value()) {
    trial.set_noise_us(*comparison.noise_us);
  }
  trial.set_refused(comparison.refused);
  return trial;
}

void SetBest(const Comparison& best, v1::ShapeProgress* progress) {
  progress->set_has_best(true);
  for (const v1::Field& f : best.tunables) *progress->add_best() = f;
  progress->set_best_delta_us(best.delta_us);
  progress->set_best_noise_us(best.noise_us.value_or(0));
}

v1::CacheSummary CacheSummaryOf(const CacheStats& stats) {
  v1::CacheSummary s;
  s.set_rows(stats.rows);
  s.set_bytes(stats.database_bytes);
  s.set_hits(stats.hits);
  s.set_misses(stats.misses);
  const int64_t lookups = stats.hits + stats.misses;
  s.set_hit_rate(lookups == 0 ? 0.0
                              : static_cast<double>(stats.hits) /
                                    static_cast<double>(lookups));
  return s;
}

void SetPlatform(const Platform& platform, v1::StatusResponse* response) {
  response->set_platform(platform.name);
  response->set_generation(platform.generation);
  response->set_power_mode(std::string(PowerModeName(platform.power_mode)));
  response->set_columns(platform.columns);
  response->set_core_mhz(platform.core_mhz);
  response->set_hw_contexts(platform.hw_contexts);
}

v1::ClearCacheResponse ClearCacheResponseOf(const ClearCounts& cleared) {
  v1::ClearCacheResponse response;
  response.set_measurements(static_cast<uint64_t>(cleared.measurements));
  response.set_iron_costs(static_cast<uint64_t>(cleared.iron_costs));
  response.set_verdicts(static_cast<uint64_t>(cleared.verdicts));
  return response;
}

v1::MeasureResult MeasureResultOf(const v1::MeasureRequest& request,
                                  const MeasurePlan& plan,
                                  const MeasureOutcome& outcome) {
  v1::MeasureResult result;
  const std::set<int> cached(outcome.cached.begin(), outcome.cached.end());
  for (int i = 0; i < static_cast<int>(plan.settings.size()); ++i) {
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
    if (auto it = outcome.refused.find(i); it != outcome.refused.end()) {
      sm->set_refused(it->second);
    }
    auto it = outcome.measurements.find(i);
    if (it == outcome.measurements.end()) continue;
    *sm->mutable_measurement() = it->second;
    if (i == 0) continue;
    const Delta d = AgainstDefault(it->second);
    sm->set_has_delta(true);
    sm->set_delta_us(d.delta_us);
    if (d.noise_us) sm->set_noise_us(*d.noise_us);
  }
  return result;
}

v1::BuildStats BuildStatsOf(const BuildPoolStats& stats, int jobs) {
  v1::BuildStats out;
  out.set_jobs(static_cast<uint32_t>(std::max(0, jobs)));
  out.set_asked_one_step(static_cast<uint64_t>(stats.asked_one_step));
  out.set_asked_many_step(static_cast<uint64_t>(stats.asked_many_step));
  out.set_needed(static_cast<uint64_t>(stats.needed));
  out.set_built_one_step(static_cast<uint64_t>(stats.built_one_step));
  out.set_built_many_step(static_cast<uint64_t>(stats.built_many_step));
  out.set_build_seconds(stats.build_seconds);
  out.set_fit_checks(static_cast<uint64_t>(stats.fit_checks));
  out.set_fit_seconds(stats.fit_seconds);
  out.set_remembered(static_cast<uint64_t>(stats.remembered));
  out.set_waited_seconds(stats.waited_seconds);
  out.set_waited_unqueued_seconds(stats.waited_unqueued_seconds);
  out.set_waited_queued_seconds(stats.waited_queued_seconds);
  out.set_spare(static_cast<uint64_t>(stats.spare));
  return out;
}

double UtilisationBound(double device_seconds, const v1::BuildStats& builds) {
  if (device_seconds <= 0) return 0;
  if (builds.jobs() == 0) {
    return device_seconds / (device_seconds + builds.build_seconds());
  }
  const double building = builds.build_seconds() / builds.jobs();
  return device_seconds / std::max(device_seconds, building);
}

v1::AutotuneResult AutotuneResultOf(const TuneResult& tuned,
                                    double device_seconds,
                                    double wall_seconds) {
  v1::AutotuneResult result;
  *result.mutable_profile() = tuned.profile.proto();
  *result.mutable_diff() = tuned.diff;
  v1::AutotuneStats* stats = result.mutable_stats();
  stats->set_shapes(static_cast<uint32_t>(tuned.shapes.size()));
  stats->set_settings_timed(static_cast<uint32_t>(tuned.stats.device_timed));
  stats->set_cache_hits(static_cast<uint32_t>(tuned.stats.cache_hits));
  stats->set_device_seconds(device_seconds);
  stats->set_wall_seconds(wall_seconds);
  stats->set_build_wait_seconds(tuned.build_wait_seconds);
  return result;
}

}  // namespace irontune
