// The measurement cache's outbox: what this box timed or decided that the
// fleet store (daemon/fleet/) does not have yet.
//
// Cache::KeepOutbox notes, from then on, the key of each figure and verdict
// the Cache stores (never an Import's rows) in the file's outbox tables;
// a CacheOutbox reads those rows for the publisher and removes them once
// the store has them. The outbox is in the file, so what was timed while
// the store could not be reached, or before irontuned was killed, is still
// there after a restart. Cache::Clear empties it with the rows.
//
// Ownership and threads: a CacheOutbox has its own connection to the file,
// so the publishing thread uses it while the device worker uses the Cache
// (WAL lets both write; each waits out the other's short transactions).
// One thread at a time.
#ifndef IRONTUNE_DAEMON_STORE_CACHE_OUTBOX_H_
#define IRONTUNE_DAEMON_STORE_CACHE_OUTBOX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/store/cache.h"
#include "daemon/store/sqlite.h"

namespace irontune {

// What the outbox holds for the fleet store.
struct Outbox {
  std::vector<CacheEntry> figures;   // the partition's
  std::vector<VerdictRow> verdicts;  // the platform's
  bool empty() const { return figures.empty() && verdicts.empty(); }
};

class CacheOutbox {
 public:
  CacheOutbox(const CacheOutbox&) = delete;
  CacheOutbox& operator=(const CacheOutbox&) = delete;

  // Up to `limit` figures of the Cache's partition and `limit` verdicts of
  // its platform; reads only. Entries whose row is gone or was written
  // under another row schema are dropped when the outbox is opened
  // (Cache::KeepOutbox) and never returned. Another partition's entries
  // wait for a box of that partition.
  absl::StatusOr<Outbox> Pending(size_t limit);
  // Removes `sent`'s entries, in one transaction.
  absl::Status Published(const Outbox& sent);
  // Entries in the outbox, every partition.
  absl::StatusOr<int64_t> Size();

 private:
  friend class Cache;
  CacheOutbox(std::unique_ptr<sqlite::Db> db, int64_t partition,
              std::string platform)
      : db_(std::move(db)),
        partition_(partition),
        platform_(std::move(platform)) {}
  // Removes the entries no current row stands behind (Cache::KeepOutbox).
  absl::Status DropOrphans();

  std::unique_ptr<sqlite::Db> db_;
  const int64_t partition_;
  const std::string platform_;  // slug
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_STORE_CACHE_OUTBOX_H_
