// CacheWrites: which shapes' stored rows the device worker may be
// rewriting now, so that a reader beside it (cached answers,
// cached_answers.h) knows which of the shape searches it kept still hold
// while the worker writes others.
//
// What a search of a shape reads and what is kept of it change only where
// a stored row it read is replaced or removed: a row added under a key it
// did not find cannot change it, since it found every row it asked for
// (else it would have needed the device). Rows are replaced only by the
// job that times their designs (a remeasure, a rebuilt design's identity),
// and removed only by tasks (import, drop, clear, a fleet merge). So the
// worker exposes a shape from the moment it begins a search of it
// (JobContext::OnShape) or a Measure of one of its operators, until that
// job ends, and every shape while a task runs (Expose, ExposeAll,
// Release, keyed by the job).
//
// Version(key) is then a number that stays the same only while shape
// `key`'s rows cannot have been replaced or removed: while the shape is
// not exposed, a number that moves when it is exposed or released (or
// every shape is); while it is exposed, CacheEpoch::Now(), which moves at
// every commit to the file. Numbers come from NextCacheVersion(): unique in
// the process, never a Cache's generation.
//
// Threads: thread-safe. Ownership: owns its CacheEpoch.
#ifndef IRONTUNE_DAEMON_SCHEDULER_CACHE_WRITES_H_
#define IRONTUNE_DAEMON_SCHEDULER_CACHE_WRITES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "daemon/scheduler/cache_epoch.h"

namespace irontune {

class CacheWrites {
 public:
  // REQUIRES: `epoch` non-null; it watches the cache file written.
  explicit CacheWrites(std::unique_ptr<CacheEpoch> epoch);
  CacheWrites(const CacheWrites&) = delete;
  CacheWrites& operator=(const CacheWrites&) = delete;

  // From now until Release(job), shape `key`'s rows may be replaced.
  void Expose(const std::string& job, const std::string& key)
      ABSL_LOCKS_EXCLUDED(mu_);
  // From now until Release(job), every shape's rows may be replaced or
  // removed.
  void ExposeAll(const std::string& job) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends what `job` exposed; nothing when it exposed nothing.
  void Release(const std::string& job) ABSL_LOCKS_EXCLUDED(mu_);

  // See the file comment.
  uint64_t Version(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether shape `key` is exposed now (by its own job or by every shape's).
  bool exposed(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);

  CacheEpoch& epoch() { return *epoch_; }

 private:
  struct Exposed {
    std::set<std::string> keys;
    bool all = false;
  };

  const std::unique_ptr<CacheEpoch> epoch_;
  absl::Mutex mu_;
  std::map<std::string, Exposed> by_job_ ABSL_GUARDED_BY(mu_);
  // How many jobs expose each shape, and every shape.
  absl::flat_hash_map<std::string, int> exposed_ ABSL_GUARDED_BY(mu_);
  int all_ ABSL_GUARDED_BY(mu_) = 0;
  // Each shape's number, set as it is exposed or released; every shape's,
  // set as all are. A shape's version is the larger.
  absl::flat_hash_map<std::string, uint64_t> version_ ABSL_GUARDED_BY(mu_);
  uint64_t base_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_CACHE_WRITES_H_
