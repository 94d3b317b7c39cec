// The measurement cache's database layout and how an older file is brought
// up to date.
//
// Two versions are kept apart on purpose:
//   - The schema version (PRAGMA user_version): which tables and columns the
//     file has. Migrations bring an older file forward, one step each, in one
//     transaction with the version bump. A file newer than this build is
//     refused, never written.
//   - The row schema (kCacheRowSchema, a column of every row): what a row's
//     figure means. When the measuring method changes so that old figures
//     would be wrong, bump it: old rows stay in the file but every Get of
//     them misses, so they are remeasured, never reused.
//
// Threads: MigrateSchema uses its connection as any other call on it does
// (one thread at a time, see sqlite.h).
#ifndef IRONTUNE_DAEMON_STORE_CACHE_SCHEMA_H_
#define IRONTUNE_DAEMON_STORE_CACHE_SCHEMA_H_

#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "daemon/store/sqlite.h"

namespace irontune {

// The layout this build writes (PRAGMA user_version).
inline constexpr int kCacheSchemaVersion = 4;
// What a row's figure means; see above.
inline constexpr int kCacheRowSchema = 1;

// One step forward: `apply` turns a file at version `version - 1` into one
// at `version`. It runs inside the migration's transaction and must not
// begin or end transactions itself.
struct Migration {
  int version;
  std::string_view description;
  absl::Status (*apply)(sqlite::Db& db);
};

// This build's migrations, from an empty file (version 0) up to
// kCacheSchemaVersion, in order.
std::span<const Migration> CacheMigrations();

// Brings `db` to `migrations.back().version` (0 when empty), applying the
// steps above the file's user_version in order, all in one write
// transaction: on any failure nothing changes. FailedPrecondition when the
// file's version is newer than the last step (it was written by a newer
// irontune). REQUIRES: `migrations` sorted by version, no gaps, from 1.
absl::Status MigrateSchema(sqlite::Db& db,
                           std::span<const Migration> migrations);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_STORE_CACHE_SCHEMA_H_
