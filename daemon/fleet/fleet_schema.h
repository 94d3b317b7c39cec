// The fleet store's tables in PostgreSQL, and how an older store is brought
// up to date.
//
// Every table lives in the schema `irontune`. The layout's version is the
// highest row of irontune.schema_versions; each step forward is a
// Migration, and MigrateFleetSchema applies those above the store's version
// in one transaction, under a transaction-scoped advisory lock: of several
// processes starting together, the first migrates and the others wait for
// its commit, then find nothing to do. A store newer than this build is
// refused, never written.
//
// What a figure means is versioned apart, as in the SQLite cache: each
// figure row carries the cache's row schema (kCacheRowSchema), and a row of
// another is a miss.
//
// Threads: as the Connection it is given (one thread at a time).
#ifndef IRONTUNE_DAEMON_FLEET_FLEET_SCHEMA_H_
#define IRONTUNE_DAEMON_FLEET_FLEET_SCHEMA_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/fleet/pg.h"

namespace irontune {

// The layout this build writes.
inline constexpr int kFleetSchemaVersion = 2;

// One step forward: `sql` turns a store at `version - 1` into one at
// `version`. It runs inside the migration's transaction and must not begin
// or end transactions itself.
struct FleetMigration {
  int version;
  std::string_view description;
  std::string_view sql;
};

// This build's migrations, from an empty database up to
// kFleetSchemaVersion, in order.
std::span<const FleetMigration> FleetMigrations();

// How MigrateFleetSchema went.
struct FleetSchemaState {
  int64_t found = 0;      // the store's version before (0: empty)
  int64_t version = 0;    // after
  bool migrated = false;  // whether this call applied steps
};

// Brings the store on `conn` to `migrations.back().version`, as the file
// comment says. FailedPrecondition naming both versions when the store is
// newer; the step's error (nothing applied) when a step fails. `by` is
// recorded with each step applied ("box npu-strix-01", "front").
// REQUIRES: `migrations` sorted by version, no gaps, from 1.
absl::StatusOr<FleetSchemaState> MigrateFleetSchema(
    pg::Connection& conn, std::span<const FleetMigration> migrations,
    std::string_view by);

// The store's version (0 when it has none), without changing anything.
absl::StatusOr<int64_t> FleetSchemaVersion(pg::Connection& conn);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_FLEET_FLEET_SCHEMA_H_
