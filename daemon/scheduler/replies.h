// The wire boundary's outward half: the method's and the store's values as
// irontune.v1's reply messages (requests.h is the inward half). One home
// for each conversion, so the edge and the job context only copy messages.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_SCHEDULER_REPLIES_H_
#define IRONTUNE_DAEMON_SCHEDULER_REPLIES_H_

#include "daemon/builder/build_pool.h"
#include "daemon/npu/device.h"
#include "daemon/store/cache.h"
#include "daemon/tune/autotune.h"
#include "daemon/tune/measure.h"
#include "daemon/tune/search.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// A setting timed against the recorded one; noise_us unset from one round.
v1::Trial TrialOf(const Comparison& comparison);

// The best setting of a shape so far, in a progress event.
void SetBest(const Comparison& best, v1::ShapeProgress* progress);

// The cache's figures for GetStatus: rows, bytes, hits, misses and their
// hit rate (0 before any lookup).
v1::CacheSummary CacheSummaryOf(const CacheStats& stats);

// The platform's fields of GetStatus: name, generation, power mode,
// columns, clock and hardware contexts.
void SetPlatform(const Platform& platform, v1::StatusResponse* response);

// What ClearCache removed.
v1::ClearCacheResponse ClearCacheResponseOf(const ClearCounts& cleared);

// A Measure's answer: a SettingMeasurement per setting, the recorded one
// first, with its delta against the recorded setting (AgainstDefault).
v1::MeasureResult MeasureResultOf(const v1::MeasureRequest& request,
                                  const MeasurePlan& plan,
                                  const MeasureOutcome& outcome);

// A build pool's figures (BuildPool::stats, or a job's share of them:
// StatsSince) with its `jobs` threads, as the service reports them.
v1::BuildStats BuildStatsOf(const BuildPoolStats& stats, int jobs);

// The best utilisation (device time over wall time) a job that spent
// `device_seconds` on the device could reach with `builds`' build time
// spread over its jobs: device / max(device, build_seconds / jobs) (a
// throughput bound: the device waits at least for the builds the pool
// cannot run beside it). Without pool threads (jobs 0) the builds run on
// the worker's thread, between the device's runs: device / (device +
// build_seconds). 0 with no device time.
double UtilisationBound(double device_seconds, const v1::BuildStats& builds);

// An Autotune's answer, with the device and wall time it took.
v1::AutotuneResult AutotuneResultOf(const TuneResult& tuned,
                                    double device_seconds, double wall_seconds);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_REPLIES_H_
