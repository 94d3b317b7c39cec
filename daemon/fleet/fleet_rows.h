// The fleet store's rows, read and written on a connection the caller
// holds: what FleetStore and FleetQueue (a shard's outcome) share, so each
// row kind is checked and written in one place.
//
// Threads: as the connection (one thread at a time).
// REQUIRES (every Insert): the caller has begun a transaction.
#ifndef IRONTUNE_DAEMON_FLEET_FLEET_ROWS_H_
#define IRONTUNE_DAEMON_FLEET_FLEET_ROWS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "daemon/fleet/pg.h"
#include "daemon/npu/platform.h"
#include "daemon/store/cache.h"

namespace irontune {

// Where a figure or decision belongs.
struct FleetPartition {
  std::string platform;  // slug (PlatformSlug): "npu-strix"
  PowerMode power_mode = PowerMode::kDefault;
  // What the box's figures also follow: firmware, driver, XRT and builder
  // (IRON) versions, as FleetToolchain (fleet_toolchain.h) writes them.
  std::string toolchain;
};

// How a merge went: rows added, rows already present (kept), and each row
// refused with why ("key K: ...").
struct MergeCounts {
  int64_t inserted = 0;
  int64_t present = 0;
  std::vector<std::string> refused;
};

// The partition's id, its row created on first use.
absl::StatusOr<int64_t> PartitionId(pg::Connection& conn,
                                    const FleetPartition& partition);

// Inserts the figures not already present (the same key and Timing; a
// figure at another Timing is kept beside them), `box` naming who timed
// them. A figure whose key is not a digest, whose power mode is another
// partition's, whose step time is not a finite non-negative number, or
// whose Timing has one part 0 or a part above 2^31 - 1 is refused (listed
// and logged), the rest inserted.
absl::StatusOr<MergeCounts> InsertFigures(pg::Connection& conn,
                                          const FleetPartition& partition,
                                          std::string_view box,
                                          absl::Span<const CacheEntry> rows);
// Result i is keys[i]'s most precise figure (as the SQLite cache ranks
// them: the most rounds x calls, then the newest, then the most rounds;
// unknown Timings last); nullopt where none, or written under another row
// schema, or undecodable (logged).
absl::StatusOr<std::vector<std::optional<v1::Measurement>>> SelectFigures(
    pg::Connection& conn, const FleetPartition& partition,
    absl::Span<const std::string> keys);

// A figure as the store holds it: its key and measurement, and when it was
// written (the store's clock).
struct StoredFigure {
  CacheEntry entry;
  absl::Time written;
};

// Where a read of the store's figures in written order stopped: after the
// figure written at `written` under `key`.
struct FigureCursor {
  absl::Time written = absl::UnixEpoch();
  std::string key;
};

// The figures of up to `limit` (written, key) pairs of the partition after
// `after`, in (written, key) order, written by another box than `box` (the
// current row schema only), each with its Timing. The figures of one pair
// (one key at several Timings, stored in one transaction) come together,
// the most precise first, so a page never splits them.
// A figure whose transaction committed late may carry an earlier time than
// one read before it: a caller following the store starts its next read a
// while back (FleetBox: a minute) and merges what it has already.
absl::StatusOr<std::vector<StoredFigure>> SelectFiguresAfter(
    pg::Connection& conn, const FleetPartition& partition, std::string_view box,
    const FigureCursor& after, size_t limit);

// A verdict as the store holds it, and when it was written.
struct StoredVerdict {
  VerdictRow row;
  absl::Time written;
};

// Where a read of a platform's verdicts in written order stopped.
struct VerdictCursor {
  absl::Time written = absl::UnixEpoch();
  std::string recipe_hash;
  std::string environment;
};

// Up to `limit` verdicts of the platform (slug) after `after`, in
// (written, recipe hash, environment) order, of another box than `box`
// (the current row schema only); as SelectFiguresAfter.
absl::StatusOr<std::vector<StoredVerdict>> SelectVerdictsAfter(
    pg::Connection& conn, std::string_view platform, std::string_view box,
    const VerdictCursor& after, size_t limit);

// The same for builder verdicts of a platform (slug). A verdict with an
// empty recipe hash or verdict is refused.
absl::StatusOr<MergeCounts> InsertVerdicts(pg::Connection& conn,
                                           std::string_view platform,
                                           std::string_view box,
                                           absl::Span<const VerdictRow> rows);
absl::StatusOr<std::vector<std::optional<std::string>>> SelectVerdicts(
    pg::Connection& conn, std::string_view platform,
    absl::Span<const VerdictKey> keys);

// Records `entry` as the shape's decision unless one is committed already;
// returns the one that stands.
absl::StatusOr<std::string> InsertDecision(pg::Connection& conn,
                                           const FleetPartition& partition,
                                           std::string_view box,
                                           std::string_view shape_key,
                                           std::string_view entry,
                                           std::optional<int64_t> job_id);
absl::StatusOr<std::optional<std::string>> SelectDecision(
    pg::Connection& conn, const FleetPartition& partition,
    std::string_view shape_key);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_FLEET_FLEET_ROWS_H_
