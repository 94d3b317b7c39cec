#include "daemon/fleet/fleet_schema.h"

#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace irontune {
namespace {

// The advisory lock the migration holds: "irontune" in ASCII.
constexpr int64_t kMigrationLock = 0x69726f6e74756e65;

// Version 1.
//  - partitions: each (platform slug, power mode) once, as in the SQLite
//    cache; figures and decisions carry its small id and never cross it.
//  - figures: the cache's measurements under the same content-addressed key
//    digest, and the toolchain (firmware, XRT, IRON) of the box that timed
//    them, so another toolchain is a miss. Inserted ON CONFLICT DO NOTHING:
//    the first figure stored wins and a merge never replaces one (from
//    version 2, per Timing).
//  - verdicts: the builder's verdicts, per platform, as in the cache.
//  - decisions: the profile entry chosen for a shape, one per (partition,
//    toolchain, shape key); the first committed wins.
//  - jobs: a submit, its owner, what it must run on, and how it ended. At
//    most one live job per request digest (jobs_live_by_request), so
//    identical concurrent submits attach to one.
//  - shards: a job's shapes, one row each, claimed by boxes with
//    SELECT ... FOR UPDATE SKIP LOCKED under a lease (owner, expiry) whose
//    attempt number fences a box that lost it.
constexpr std::string_view kCreateV1 = R"sql(
  CREATE TABLE irontune.partitions(
    id serial PRIMARY KEY,
    platform text NOT NULL,
    power_mode text NOT NULL,
    UNIQUE(platform, power_mode));
  CREATE TABLE irontune.figures(
    partition integer NOT NULL REFERENCES irontune.partitions(id),
    toolchain text NOT NULL,
    key text NOT NULL CHECK (key ~ '^[0-9a-f]{32}$'),
    row_schema integer NOT NULL,
    t_step_us double precision NOT NULL,
    measurement bytea NOT NULL,
    box text NOT NULL,
    written timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY(partition, toolchain, key));
  CREATE TABLE irontune.verdicts(
    platform text NOT NULL,
    recipe_hash text NOT NULL,
    environment text NOT NULL,
    row_schema integer NOT NULL,
    verdict text NOT NULL,
    box text NOT NULL,
    written timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY(platform, recipe_hash, environment));
  CREATE TABLE irontune.decisions(
    partition integer NOT NULL REFERENCES irontune.partitions(id),
    toolchain text NOT NULL,
    shape_key text NOT NULL,
    entry bytea NOT NULL,
    job_id bigint,
    box text NOT NULL,
    written timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY(partition, toolchain, shape_key));
  CREATE TABLE irontune.jobs(
    id bigserial PRIMARY KEY,
    kind text NOT NULL,
    owner text NOT NULL,
    request_digest text NOT NULL,
    platform text NOT NULL,
    power_mode text NOT NULL,
    priority integer NOT NULL,
    interactive boolean NOT NULL,
    state text NOT NULL
      CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    request bytea NOT NULL,
    result bytea,
    error text NOT NULL DEFAULT '',
    created timestamptz NOT NULL DEFAULT now(),
    updated timestamptz NOT NULL DEFAULT now());
  CREATE UNIQUE INDEX jobs_live_by_request ON irontune.jobs(request_digest)
    WHERE state IN ('queued', 'running');
  CREATE TABLE irontune.shards(
    job_id bigint NOT NULL REFERENCES irontune.jobs(id) ON DELETE CASCADE,
    shard integer NOT NULL,
    shape_key text NOT NULL,
    platform text NOT NULL,
    power_mode text NOT NULL,
    priority integer NOT NULL,
    task bytea NOT NULL,
    state text NOT NULL
      CHECK (state IN ('queued', 'leased', 'done', 'failed', 'cancelled')),
    lease_owner text,
    lease_expires timestamptz,
    attempts integer NOT NULL DEFAULT 0,
    last_error text NOT NULL DEFAULT '',
    result bytea,
    completed_by text,
    created timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY(job_id, shard));
  CREATE INDEX shards_to_claim
    ON irontune.shards(platform, power_mode, priority DESC, created, job_id,
                       shard)
    WHERE state IN ('queued', 'leased');
)sql";

// Version 2. Figures are kept per Timing, as in the SQLite cache (its
// schema version 4): `rounds` and `calls` of the Timing a figure was taken
// at join the primary key, so a figure timed at a shorter Timing is stored
// beside a more precise one of the same key instead of being refused by
// it (or, first, refusing it). Rows from before are of unknown Timing
// (0, 0), ranked last.
constexpr std::string_view kTimingsV2 = R"sql(
  ALTER TABLE irontune.figures
    ADD COLUMN rounds integer NOT NULL DEFAULT 0 CHECK (rounds >= 0),
    ADD COLUMN calls integer NOT NULL DEFAULT 0 CHECK (calls >= 0);
  ALTER TABLE irontune.figures DROP CONSTRAINT figures_pkey,
    ADD PRIMARY KEY (partition, toolchain, key, rounds, calls);
)sql";

constexpr FleetMigration kMigrations[] = {
    {1, "figures, verdicts, decisions, jobs and shards", kCreateV1},
    {2, "figures kept per Timing", kTimingsV2},
};
static_assert(std::size(kMigrations) == kFleetSchemaVersion);

absl::Status NewerThanThisBuild(int64_t found, int64_t target) {
  return absl::FailedPreconditionError(absl::StrCat(
      "the fleet store's schema version is ", found,
      ", newer than this irontuned understands (", target,
      "); upgrade irontuned, or point --fleet at another database"));
}

// Applies the steps above `from` and records each. REQUIRES: inside the
// migration's transaction, holding its lock.
absl::Status ApplySteps(pg::Connection& conn,
                        std::span<const FleetMigration> migrations,
                        int64_t from, std::string_view by) {
  for (const FleetMigration& step : migrations) {
    if (step.version <= from) continue;
    absl::Status status = conn.ExecScript(step.sql);
    if (status.ok()) {
      status = conn.Exec(
                       "INSERT INTO irontune.schema_versions"
                       "(version, description, applied_by) VALUES ($1, $2, $3)",
                       {pg::Param::Int(step.version),
                        pg::Param::Text(std::string(step.description)),
                        pg::Param::Text(std::string(by))})
                   .status();
    }
    if (!status.ok()) {
      return absl::Status(
          status.code(),
          absl::StrCat("migrating the fleet store to schema version ",
                       step.version, " (", std::string(step.description),
                       "): ", status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::span<const FleetMigration> FleetMigrations() { return kMigrations; }

absl::StatusOr<int64_t> FleetSchemaVersion(pg::Connection& conn) {
  ASSIGN_OR_RETURN(
      pg::Result exists,
      conn.Exec("SELECT to_regclass('irontune.schema_versions') IS NOT NULL"));
  if (exists.Text(0, 0) != "t") return 0;
  ASSIGN_OR_RETURN(pg::Result version,
                   conn.Exec("SELECT coalesce(max(version), 0) FROM "
                             "irontune.schema_versions"));
  return version.Int(0, 0);
}

absl::StatusOr<FleetSchemaState> MigrateFleetSchema(
    pg::Connection& conn, std::span<const FleetMigration> migrations,
    std::string_view by) {
  const int64_t target = migrations.empty() ? 0 : migrations.back().version;
  FleetSchemaState state;
  // A store already current needs no lock and no write privilege.
  ASSIGN_OR_RETURN(state.found, FleetSchemaVersion(conn));
  if (state.found > target) return NewerThanThisBuild(state.found, target);
  state.version = state.found;
  if (state.found == target) return state;
  ASSIGN_OR_RETURN(pg::Transaction txn, pg::Transaction::Begin(conn));
  RETURN_IF_ERROR(conn.Exec("SELECT pg_advisory_xact_lock($1)",
                            {pg::Param::Int(kMigrationLock)})
                      .status());
  RETURN_IF_ERROR(conn.ExecScript(R"sql(
    CREATE SCHEMA IF NOT EXISTS irontune;
    CREATE TABLE IF NOT EXISTS irontune.schema_versions(
      version integer PRIMARY KEY,
      description text NOT NULL,
      applied timestamptz NOT NULL DEFAULT now(),
      applied_by text NOT NULL);
  )sql"));
  // Read again under the lock: another process may have migrated meanwhile.
  ASSIGN_OR_RETURN(state.found, FleetSchemaVersion(conn));
  if (state.found > target) return NewerThanThisBuild(state.found, target);
  state.version = target;
  if (state.found == target) return state;  // rolls back a no-op
  RETURN_IF_ERROR(ApplySteps(conn, migrations, state.found, by));
  RETURN_IF_ERROR(txn.Commit());
  state.migrated = true;
  return state;
}

}  // namespace irontune
