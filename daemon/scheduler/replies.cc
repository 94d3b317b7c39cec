#include "daemon/scheduler/replies.h"

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

}  // namespace irontune
