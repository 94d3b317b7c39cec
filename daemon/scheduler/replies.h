// The wire boundary's outward half: the method's and the store's values as
// irontune.v1's reply messages (requests.h is the inward half). One home
// for each conversion, so the edge and the job context only copy messages.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_SCHEDULER_REPLIES_H_
#define IRONTUNE_DAEMON_SCHEDULER_REPLIES_H_

#include "daemon/npu/device.h"
#include "daemon/store/cache.h"
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

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_REPLIES_H_
