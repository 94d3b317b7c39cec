#include "daemon/fleet/fleet_store.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace irontune {

absl::StatusOr<std::unique_ptr<FleetStore>> FleetStore::Open(
    const FleetConnection& connection, std::string_view name) {
  const std::string what =
      absl::StrCat("the fleet store (", connection.display, ")");
  ASSIGN_OR_RETURN(std::unique_ptr<pg::Connection> conn,
                   pg::Connection::Open(connection.conninfo, what));
  absl::StatusOr<FleetSchemaState> schema =
      MigrateFleetSchema(*conn, FleetMigrations(), name);
  if (!schema.ok()) {
    return absl::Status(schema.status().code(),
                        absl::StrCat(what, ": ", schema.status().message()));
  }
  if (schema->migrated) {
    spdlog::info("{}: schema migrated from version {} to {}", what,
                 schema->found, schema->version);
  }
  return std::unique_ptr<FleetStore>(new FleetStore(
      std::move(conn), std::string(name), connection.display, *schema));
}

absl::StatusOr<MergeCounts> FleetStore::MergeFigures(
    const FleetPartition& partition, absl::Span<const CacheEntry> figures) {
  ASSIGN_OR_RETURN(pg::Transaction txn, pg::Transaction::Begin(*conn_));
  ASSIGN_OR_RETURN(MergeCounts counts,
                   InsertFigures(*conn_, partition, name_, figures));
  RETURN_IF_ERROR(txn.Commit());
  return counts;
}

absl::StatusOr<std::vector<std::optional<v1::Measurement>>>
FleetStore::GetFigures(const FleetPartition& partition,
                       absl::Span<const std::string> keys) {
  return SelectFigures(*conn_, partition, keys);
}

absl::StatusOr<std::vector<StoredFigure>> FleetStore::FiguresAfter(
    const FleetPartition& partition, const FigureCursor& after, size_t limit) {
  return SelectFiguresAfter(*conn_, partition, name_, after, limit);
}

absl::StatusOr<std::vector<StoredVerdict>> FleetStore::VerdictsAfter(
    std::string_view platform, const VerdictCursor& after, size_t limit) {
  return SelectVerdictsAfter(*conn_, platform, name_, after, limit);
}

absl::StatusOr<MergeCounts> FleetStore::MergeVerdicts(
    std::string_view platform, absl::Span<const VerdictRow> verdicts) {
  ASSIGN_OR_RETURN(pg::Transaction txn, pg::Transaction::Begin(*conn_));
  ASSIGN_OR_RETURN(MergeCounts counts,
                   InsertVerdicts(*conn_, platform, name_, verdicts));
  RETURN_IF_ERROR(txn.Commit());
  return counts;
}

absl::StatusOr<std::vector<std::optional<std::string>>> FleetStore::GetVerdicts(
    std::string_view platform, absl::Span<const VerdictKey> keys) {
  return SelectVerdicts(*conn_, platform, keys);
}

absl::StatusOr<std::string> FleetStore::Decide(const FleetPartition& partition,
                                               std::string_view shape_key,
                                               std::string_view entry,
                                               std::optional<int64_t> job_id) {
  return InsertDecision(*conn_, partition, name_, shape_key, entry, job_id);
}

absl::StatusOr<std::optional<std::string>> FleetStore::GetDecision(
    const FleetPartition& partition, std::string_view shape_key) {
  return SelectDecision(*conn_, partition, shape_key);
}

}  // namespace irontune
