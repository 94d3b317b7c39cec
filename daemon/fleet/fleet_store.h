// The fleet's shared store in PostgreSQL (docs/fleet.md): the figures and
// verdicts every box has timed and one decision per shape. The work queue
// over the same connection is FleetQueue (fleet_queue.h).
//
// Partitions: figures and decisions are bound to a FleetPartition (platform
// slug, power mode, toolchain) as the SQLite cache binds its rows; nothing
// is read or merged across one. A merge is an insert that ignores rows
// already present, so the first figure stored for a key and Timing wins
// and merging twice is harmless; a key's figures at other Timings are
// kept beside it, and a lookup reads the most precise (fleet_rows.h).
//
// Threads: a FleetStore is one connection, used by one thread at a time.
// Failure: the store's errors as pg.h maps them (Unavailable while the
// server cannot be reached); a row that fails its checks is refused and
// logged, never merged.
#ifndef IRONTUNE_DAEMON_FLEET_FLEET_STORE_H_
#define IRONTUNE_DAEMON_FLEET_FLEET_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/fleet/fleet_rows.h"
#include "daemon/fleet/fleet_schema.h"
#include "daemon/fleet/fleet_url.h"
#include "daemon/fleet/pg.h"

namespace irontune {

class FleetStore {
 public:
  // Connects, and brings the store's schema up to date (or refuses a newer
  // one: FailedPrecondition). `name` is this process as leases and rows
  // name it ("box npu-strix-01", "front"). The errors of Connection::Open
  // and MigrateFleetSchema, each naming the store (`connection.display`).
  static absl::StatusOr<std::unique_ptr<FleetStore>> Open(
      const FleetConnection& connection, std::string_view name);
  FleetStore(const FleetStore&) = delete;
  FleetStore& operator=(const FleetStore&) = delete;

  // InsertFigures (fleet_rows.h), in a transaction of its own.
  absl::StatusOr<MergeCounts> MergeFigures(
      const FleetPartition& partition, absl::Span<const CacheEntry> figures);
  // SelectFigures.
  absl::StatusOr<std::vector<std::optional<v1::Measurement>>> GetFigures(
      const FleetPartition& partition, absl::Span<const std::string> keys);

  // SelectFiguresAfter, of the other boxes than this one.
  absl::StatusOr<std::vector<StoredFigure>> FiguresAfter(
      const FleetPartition& partition, const FigureCursor& after, size_t limit);
  // SelectVerdictsAfter, of the other boxes than this one.
  absl::StatusOr<std::vector<StoredVerdict>> VerdictsAfter(
      std::string_view platform, const VerdictCursor& after, size_t limit);
  // InsertVerdicts in a transaction of its own; SelectVerdicts.
  absl::StatusOr<MergeCounts> MergeVerdicts(
      std::string_view platform, absl::Span<const VerdictRow> verdicts);
  absl::StatusOr<std::vector<std::optional<std::string>>> GetVerdicts(
      std::string_view platform, absl::Span<const VerdictKey> keys);

  // InsertDecision; SelectDecision.
  absl::StatusOr<std::string> Decide(const FleetPartition& partition,
                                     std::string_view shape_key,
                                     std::string_view entry,
                                     std::optional<int64_t> job_id);
  absl::StatusOr<std::optional<std::string>> GetDecision(
      const FleetPartition& partition, std::string_view shape_key);

  // The connection, for FleetQueue, LISTEN and tests.
  pg::Connection& connection() { return *conn_; }
  const std::string& name() const { return name_; }
  // The server and database, for messages (never a secret).
  const std::string& display() const { return display_; }
  // What Open found and did to the schema.
  const FleetSchemaState& schema() const { return schema_; }

 private:
  FleetStore(std::unique_ptr<pg::Connection> conn, std::string name,
             std::string display, FleetSchemaState schema)
      : conn_(std::move(conn)),
        name_(std::move(name)),
        display_(std::move(display)),
        schema_(schema) {}
  std::unique_ptr<pg::Connection> conn_;
  const std::string name_;
  const std::string display_;
  const FleetSchemaState schema_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_FLEET_FLEET_STORE_H_
