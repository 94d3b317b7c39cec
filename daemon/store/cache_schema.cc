#include "daemon/store/cache_schema.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace irontune {
namespace {

// Version 1. `partitions` names each (platform slug, power mode) once so rows
// carry a small integer. Rows are WITHOUT ROWID tables keyed on what a lookup
// gives, so a Get is one b-tree search. `measurement` is a serialized
// irontune.v1.Measurement; the other columns are copies for queries.
absl::Status CreateV1(sqlite::Db& db) {
  return db.Exec(R"sql(
    CREATE TABLE partitions(
      id INTEGER PRIMARY KEY,
      platform TEXT NOT NULL,
      power_mode TEXT NOT NULL,
      UNIQUE(platform, power_mode));
    CREATE TABLE measurements(
      partition INTEGER NOT NULL,
      key TEXT NOT NULL,
      row_schema INTEGER NOT NULL,
      t_step_us REAL NOT NULL,
      measured TEXT NOT NULL,
      written INTEGER NOT NULL,
      measurement BLOB NOT NULL,
      PRIMARY KEY(partition, key)) WITHOUT ROWID;
    CREATE TABLE iron_costs(
      partition INTEGER NOT NULL,
      key TEXT NOT NULL,
      written INTEGER NOT NULL,
      measurement BLOB NOT NULL,
      PRIMARY KEY(partition, key)) WITHOUT ROWID;
    CREATE TABLE verdicts(
      platform TEXT NOT NULL,
      recipe_hash TEXT NOT NULL,
      environment TEXT NOT NULL,
      row_schema INTEGER NOT NULL,
      verdict TEXT NOT NULL,
      written INTEGER NOT NULL,
      PRIMARY KEY(platform, recipe_hash, environment)) WITHOUT ROWID;
  )sql");
}

// Version 2. Each ImportCache call becomes an `imports` row naming who
// imported what file, when; the rows it added carry its id in `import_id`
// (NULL: measured or decided on this box), so one import can be listed and
// dropped. Existing rows keep NULL: they predate the record.
absl::Status AddImportOrigins(sqlite::Db& db) {
  return db.Exec(R"sql(
    CREATE TABLE imports(
      id INTEGER PRIMARY KEY,
      imported_by TEXT NOT NULL,
      peer TEXT NOT NULL,
      source TEXT NOT NULL,
      written INTEGER NOT NULL,
      lines INTEGER NOT NULL,
      dropped INTEGER);
    ALTER TABLE measurements ADD COLUMN import_id INTEGER;
    ALTER TABLE iron_costs ADD COLUMN import_id INTEGER;
    ALTER TABLE verdicts ADD COLUMN import_id INTEGER;
    CREATE INDEX measurements_by_import ON measurements(import_id)
      WHERE import_id IS NOT NULL;
    CREATE INDEX iron_costs_by_import ON iron_costs(import_id)
      WHERE import_id IS NOT NULL;
    CREATE INDEX verdicts_by_import ON verdicts(import_id)
      WHERE import_id IS NOT NULL;
  )sql");
}

// Version 3. The outbox (cache.h, KeepOutbox): the figures and verdicts
// timed or decided here that the fleet store does not have yet, by their
// rows' keys. Filled only while irontuned is in a fleet; kept across
// restarts, so nothing timed while the store was unreachable is lost.
absl::Status AddOutbox(sqlite::Db& db) {
  return db.Exec(R"sql(
    CREATE TABLE outbox_measurements(
      partition INTEGER NOT NULL,
      key TEXT NOT NULL,
      PRIMARY KEY(partition, key)) WITHOUT ROWID;
    CREATE TABLE outbox_verdicts(
      platform TEXT NOT NULL,
      recipe_hash TEXT NOT NULL,
      environment TEXT NOT NULL,
      PRIMARY KEY(platform, recipe_hash, environment)) WITHOUT ROWID;
  )sql");
}

// Version 4. Figures of one key are kept per Timing (FigureTiming in
// cache_key.h): `rounds` and `calls` join the measurements' primary key
// and the outbox's, so a figure timed at a shorter Timing is stored beside
// a more precise one instead of replacing it. Rows from before keep their
// figures at Timing {0, 0}, unknown. Each row also keeps the history of
// the figures stored under its key and Timing, the last of which it holds
// (`figures_seen`; the mean and the sum of squared deviations of their
// log step times; the sum of their rounds' squared relative standard
// errors): the cache learns from it how far repeats of a measurement
// spread (RepeatSpread in cache.h, summed over the rows through the index
// measurements_repeated). Rows from before have none (0).
absl::Status KeepTimings(sqlite::Db& db) {
  return db.Exec(R"sql(
    CREATE TABLE measurements_v4(
      partition INTEGER NOT NULL,
      key TEXT NOT NULL,
      rounds INTEGER NOT NULL,
      calls INTEGER NOT NULL,
      row_schema INTEGER NOT NULL,
      t_step_us REAL NOT NULL,
      measured TEXT NOT NULL,
      written INTEGER NOT NULL,
      measurement BLOB NOT NULL,
      import_id INTEGER,
      figures_seen INTEGER NOT NULL,
      log_mean REAL NOT NULL,
      log_m2 REAL NOT NULL,
      within_sq REAL NOT NULL,
      PRIMARY KEY(partition, key, rounds, calls)) WITHOUT ROWID;
    INSERT INTO measurements_v4
      SELECT partition, key, 0, 0, row_schema, t_step_us, measured, written,
             measurement, import_id, 0, 0, 0, 0
      FROM measurements;
    DROP TABLE measurements;
    ALTER TABLE measurements_v4 RENAME TO measurements;
    CREATE INDEX measurements_by_import ON measurements(import_id)
      WHERE import_id IS NOT NULL;
    CREATE INDEX measurements_repeated
      ON measurements(partition, row_schema, figures_seen, log_m2, within_sq)
      WHERE figures_seen > 1;
    CREATE TABLE outbox_measurements_v4(
      partition INTEGER NOT NULL,
      key TEXT NOT NULL,
      rounds INTEGER NOT NULL,
      calls INTEGER NOT NULL,
      PRIMARY KEY(partition, key, rounds, calls)) WITHOUT ROWID;
    INSERT INTO outbox_measurements_v4
      SELECT partition, key, 0, 0 FROM outbox_measurements;
    DROP TABLE outbox_measurements;
    ALTER TABLE outbox_measurements_v4 RENAME TO outbox_measurements;
  )sql");
}

constexpr Migration kMigrations[] = {
    {1, "measurements, IRON imports and build verdicts", &CreateV1},
    {2, "the origin of imported rows", &AddImportOrigins},
    {3, "the fleet's outbox", &AddOutbox},
    {4, "figures kept per Timing, with their history", &KeepTimings},
};
static_assert(std::size(kMigrations) == kCacheSchemaVersion);

}  // namespace

std::span<const Migration> CacheMigrations() { return kMigrations; }

absl::Status MigrateSchema(sqlite::Db& db,
                           std::span<const Migration> migrations) {
  const int target = migrations.empty() ? 0 : migrations.back().version;
  // Read the version inside the write transaction, so two processes opening
  // one new file do not both create it.
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(db));
  ASSIGN_OR_RETURN(int64_t version, db.QueryInt("PRAGMA user_version"));
  if (version > target) {
    return absl::FailedPreconditionError(
        absl::StrCat(db.path(), ": the cache's schema version is ", version,
                     ", newer than this irontune understands (", target,
                     "); upgrade irontune or give it another cache file"));
  }
  if (version < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(db.path(), ": invalid schema version ", version));
  }
  if (version == target) return absl::OkStatus();  // rolls back a no-op
  for (const Migration& step : migrations) {
    if (step.version <= version) continue;
    absl::Status status = step.apply(db);
    if (!status.ok()) {
      return absl::Status(
          status.code(),
          absl::StrCat("migrating the cache to schema version ", step.version,
                       " (",
                       absl::string_view(step.description.data(),
                                         step.description.size()),
                       "): ", status.message()));
    }
  }
  RETURN_IF_ERROR(db.Exec(absl::StrCat("PRAGMA user_version = ", target)));
  return txn.Commit();
}

}  // namespace irontune
