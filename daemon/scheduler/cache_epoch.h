// CacheEpoch: a version of what the measurement cache file holds, for the
// readers beside its writer (cached answers, cached_answers.h): the shape
// memo's version of their contexts (TuneContext::cache_version) and the
// check that an answer read one state of the file.
//
// The device worker's Cache is the file's only writer, and its generation
// moves before a write is committed; a reader on another connection needs a
// version that moves once the write is there to read. CacheEpoch watches
// the file through a read-only connection of its own (SQLite's PRAGMA
// data_version, which moves whenever another connection commits to the
// file, a checkpoint included) and maps each value it sees to a number
// unique in the process, never a Cache's generation.
//
// Threads: thread-safe (one connection behind a mutex). Ownership: owns its
// connection. Failure: Open's SQLite errors; a failed read in Now() returns
// a number never returned before (the file counts as changed).
#ifndef IRONTUNE_DAEMON_SCHEDULER_CACHE_EPOCH_H_
#define IRONTUNE_DAEMON_SCHEDULER_CACHE_EPOCH_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/store/sqlite.h"

namespace irontune {

// A number unique in the process and never a Cache's generation: what
// CacheEpoch::Now() and CacheWrites (cache_writes.h) give out. Any thread.
uint64_t NextCacheVersion();

class CacheEpoch {
 public:
  // Watches the cache file at `path`. REQUIRES: a Cache has created it.
  static absl::StatusOr<std::unique_ptr<CacheEpoch>> Open(
      const std::string& path);
  CacheEpoch(const CacheEpoch&) = delete;
  CacheEpoch& operator=(const CacheEpoch&) = delete;
  ~CacheEpoch();

  // Two calls return the same number only when nothing was committed to
  // the file between the first's read and the second's: what a reader read
  // in between, and anything worked out from it, holds while Now() returns
  // that number.
  uint64_t Now() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  CacheEpoch(std::unique_ptr<sqlite::Db> db, sqlite::Statement version);

  absl::Mutex mu_;
  // Declared before the statement, which is finalized first.
  std::unique_ptr<sqlite::Db> db_ ABSL_GUARDED_BY(mu_);
  sqlite::Statement version_ ABSL_GUARDED_BY(mu_);  // PRAGMA data_version
  bool seen_ ABSL_GUARDED_BY(mu_) = false;
  int64_t data_version_ ABSL_GUARDED_BY(mu_) = 0;  // the last one read
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;        // its number
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_CACHE_EPOCH_H_
