#include "daemon/store/jobs_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace irontune {

absl::StatusOr<std::unique_ptr<JobStore>> JobStore::Open(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Db> db,
                   sqlite::Db::Open(path, sqlite::OpenMode::kReadWriteCreate));
  RETURN_IF_ERROR(
      db->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
               "PRAGMA busy_timeout=5000;"
               "CREATE TABLE IF NOT EXISTS jobs ("
               "  id TEXT PRIMARY KEY,"
               "  kind INTEGER NOT NULL,"
               "  client TEXT NOT NULL,"
               "  state INTEGER NOT NULL,"
               "  submitted_ms INTEGER NOT NULL,"
               "  ended_ms INTEGER NOT NULL,"
               "  events TEXT NOT NULL,"
               "  result BLOB NOT NULL);"
               "CREATE INDEX IF NOT EXISTS jobs_by_time ON jobs(submitted_ms);"
               "PRAGMA user_version=1;"));
  return std::unique_ptr<JobStore>(new JobStore(std::move(db)));
}

absl::Status JobStore::Save(const JobRecord& job) {
  const v1::JobResult& result = job.result;
  std::string blob;
  if (!result.SerializeToString(&blob)) {
    return absl::InternalError(
        absl::StrCat("job ", job.id, ": result does not serialize"));
  }
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db_->Prepare("INSERT OR REPLACE INTO jobs (id, kind, client, state,"
                   " submitted_ms, ended_ms, events, result)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
  RETURN_IF_ERROR(stmt.BindText(1, job.id));
  RETURN_IF_ERROR(stmt.BindInt(2, result.summary().kind()));
  RETURN_IF_ERROR(stmt.BindText(3, job.client));
  RETURN_IF_ERROR(stmt.BindInt(4, result.summary().state()));
  RETURN_IF_ERROR(stmt.BindInt(5, result.summary().submitted_unix_ms()));
  RETURN_IF_ERROR(stmt.BindInt(6, result.summary().ended_unix_ms()));
  RETURN_IF_ERROR(stmt.BindText(7, job.events));
  RETURN_IF_ERROR(stmt.BindBlob(8, blob));
  return stmt.Run();
}

absl::StatusOr<std::optional<v1::JobResult>> JobStore::Load(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(sqlite::Statement stmt,
                   db_->Prepare("SELECT result FROM jobs WHERE id = ?"));
  RETURN_IF_ERROR(stmt.BindText(1, id));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::nullopt;
  v1::JobResult result;
  const std::string_view blob = stmt.ColumnBlob(0);
  if (!result.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
    return std::nullopt;
  }
  return result;
}

absl::StatusOr<std::vector<v1::JobSummary>> JobStore::List(int limit) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(sqlite::Statement stmt,
                   db_->Prepare("SELECT result FROM jobs"
                                " ORDER BY submitted_ms DESC LIMIT ?"));
  RETURN_IF_ERROR(stmt.BindInt(1, limit));
  std::vector<v1::JobSummary> out;
  RETURN_IF_ERROR(stmt.ForEachRow([&] {
    v1::JobResult result;
    const std::string_view blob = stmt.ColumnBlob(0);
    if (result.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
      out.push_back(result.summary());
    }
  }));
  return out;
}

}  // namespace irontune
