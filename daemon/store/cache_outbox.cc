#include "daemon/store/cache_outbox.h"

#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/store/cache_schema.h"
#include "spdlog/spdlog.h"

namespace irontune {

absl::Status CacheOutbox::DropOrphans() {
  return db_->Exec(absl::StrCat(R"sql(
    DELETE FROM outbox_measurements AS o WHERE NOT EXISTS (
      SELECT 1 FROM measurements AS m WHERE m.partition = o.partition
        AND m.key = o.key AND m.rounds = o.rounds AND m.calls = o.calls
        AND m.row_schema = )sql",
                                kCacheRowSchema, R"sql();
    DELETE FROM outbox_verdicts AS o WHERE NOT EXISTS (
      SELECT 1 FROM verdicts AS v WHERE v.platform = o.platform
        AND v.recipe_hash = o.recipe_hash AND v.environment = o.environment
        AND v.row_schema = )sql",
                                kCacheRowSchema, ")"));
}

absl::StatusOr<Outbox> CacheOutbox::Pending(size_t limit) {
  // A read only: the publisher calls it every second or so, and the
  // entries without a current row were dropped when the outbox opened.
  Outbox out;
  ASSIGN_OR_RETURN(
      sqlite::Statement figures,
      db_->Prepare(absl::StrCat(
          "SELECT o.key, m.measurement, o.rounds, o.calls FROM "
          "outbox_measurements AS o JOIN measurements AS m USING "
          "(partition, key, rounds, calls) WHERE o.partition = ?1 AND "
          "m.row_schema = ",
          kCacheRowSchema, " LIMIT ?2")));
  RETURN_IF_ERROR(figures.BindInt(1, partition_));
  RETURN_IF_ERROR(figures.BindInt(2, static_cast<int64_t>(limit)));
  RETURN_IF_ERROR(figures.ForEachRow([&] {
    CacheEntry e;
    e.key = std::string(figures.ColumnText(0));
    e.timing = {static_cast<uint32_t>(figures.ColumnInt(2)),
                static_cast<uint32_t>(figures.ColumnInt(3))};
    const std::string_view blob = figures.ColumnBlob(1);
    if (e.measurement.ParseFromArray(blob.data(),
                                     static_cast<int>(blob.size()))) {
      out.figures.push_back(std::move(e));
    } else {
      spdlog::warn("cache: outbox row {} does not decode; not sent", e.key);
    }
  }));
  ASSIGN_OR_RETURN(
      sqlite::Statement verdicts,
      db_->Prepare(absl::StrCat(
          "SELECT o.recipe_hash, o.environment, v.verdict FROM "
          "outbox_verdicts AS o JOIN verdicts AS v USING (platform, "
          "recipe_hash, environment) WHERE o.platform = ?1 AND v.row_schema = ",
          kCacheRowSchema, " LIMIT ?2")));
  RETURN_IF_ERROR(verdicts.BindText(1, platform_));
  RETURN_IF_ERROR(verdicts.BindInt(2, static_cast<int64_t>(limit)));
  RETURN_IF_ERROR(verdicts.ForEachRow([&] {
    out.verdicts.push_back({VerdictKey{std::string(verdicts.ColumnText(0)),
                                       std::string(verdicts.ColumnText(1))},
                            std::string(verdicts.ColumnText(2))});
  }));
  return out;
}

absl::Status CacheOutbox::Published(const Outbox& sent) {
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  ASSIGN_OR_RETURN(sqlite::Statement figure,
                   db_->Prepare("DELETE FROM outbox_measurements WHERE "
                                "partition = ?1 AND key = ?2 AND rounds = ?3 "
                                "AND calls = ?4"));
  for (const CacheEntry& e : sent.figures) {
    RETURN_IF_ERROR(figure.BindInt(1, partition_));
    RETURN_IF_ERROR(figure.BindText(2, e.key));
    RETURN_IF_ERROR(figure.BindInt(3, e.timing.rounds));
    RETURN_IF_ERROR(figure.BindInt(4, e.timing.calls));
    RETURN_IF_ERROR(figure.Run());
    figure.Reset();
  }
  ASSIGN_OR_RETURN(
      sqlite::Statement verdict,
      db_->Prepare("DELETE FROM outbox_verdicts WHERE platform = "
                   "?1 AND recipe_hash = ?2 AND environment = ?3"));
  for (const auto& [key, text] : sent.verdicts) {
    RETURN_IF_ERROR(verdict.BindText(1, platform_));
    RETURN_IF_ERROR(verdict.BindText(2, key.recipe_hash));
    RETURN_IF_ERROR(verdict.BindText(3, key.environment));
    RETURN_IF_ERROR(verdict.Run());
    verdict.Reset();
  }
  return txn.Commit();
}

absl::StatusOr<int64_t> CacheOutbox::Size() {
  return db_->QueryInt(
      "SELECT (SELECT count(*) FROM outbox_measurements) + "
      "(SELECT count(*) FROM outbox_verdicts)");
}

absl::StatusOr<int64_t> Cache::MergeFromFleet(
    absl::Span<const CacheEntry> figures, const ImportOrigin& origin,
    absl::Span<const VerdictRow> verdicts) {
  if (figures.empty() && verdicts.empty()) return 0;
  ASSIGN_OR_RETURN(Inserts add, PrepareInserts(*db_, "IGNORE"));
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  int64_t id = 0;
  if (fleet_import_) {
    id = *fleet_import_;
  } else {
    ASSIGN_OR_RETURN(id, RecordImport(origin));
  }
  import_id_ = id;
  absl::Cleanup clear = [this] { import_id_.reset(); };
  int64_t added = 0;
  for (const CacheEntry& e : figures) {
    if (!Validate(e.key, e.measurement, e.timing).ok()) continue;
    RETURN_IF_ERROR(Insert(add.measurement, e.key, kCacheRowSchema,
                           e.measurement, e.timing,
                           FigureHistory{}.With(e.measurement)));
    added += db_->Changes();
  }
  for (const auto& [key, verdict] : verdicts) {
    if (key.recipe_hash.empty() || verdict.empty()) continue;
    RETURN_IF_ERROR(InsertVerdict(add.verdict, key, kCacheRowSchema, verdict));
    added += db_->Changes();
  }
  ASSIGN_OR_RETURN(
      sqlite::Statement lines,
      db_->Prepare("UPDATE imports SET lines = lines + ?1 WHERE id = ?2"));
  RETURN_IF_ERROR(lines.BindInt(1, added));
  RETURN_IF_ERROR(lines.BindInt(2, id));
  RETURN_IF_ERROR(lines.Run());
  RETURN_IF_ERROR(txn.Commit());
  fleet_import_ = id;
  if (added > 0) {
    Changed();
    verdict_memo_.clear();
    spread_.reset();
  }
  return added;
}

}  // namespace irontune
