#include "daemon/store/jobs_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace irontune {

namespace {

bool Ended(v1::JobState state) {
  return state != v1::JOB_STATE_QUEUED && state != v1::JOB_STATE_RUNNING &&
         state != v1::JOB_STATE_UNSPECIFIED;
}

// What an interrupted job's error says.
std::string InterruptedError(const v1::JobSummary& s) {
  std::string progress;
  if (s.shapes_total() > 0) {
    progress = absl::StrCat(" after ", s.shapes_done(), " of ",
                            s.shapes_total(), " shapes");
  }
  return absl::StrCat(
      "interrupted: irontuned stopped while the job ",
      s.state() == v1::JOB_STATE_RUNNING ? "ran" : "waited", progress,
      "; submit it again: what it had timed is in the cache and is not "
      "timed again");
}

}  // namespace

absl::StatusOr<std::unique_ptr<JobStore>> JobStore::Open(
    const std::string& path, JobStoreLimits limits) {
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
  auto store = std::unique_ptr<JobStore>(new JobStore(std::move(db), limits));
  RETURN_IF_ERROR(store->Prune().status());
  return store;
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
  RETURN_IF_ERROR(stmt.Run());
  if (Ended(result.summary().state())) (void)PruneLocked();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> JobStore::MarkInterrupted() {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, v1::JobResult>> found;
  {
    ASSIGN_OR_RETURN(sqlite::Statement stmt,
                     db_->Prepare("SELECT id, result FROM jobs"
                                  " WHERE state IN (?, ?)"));
    RETURN_IF_ERROR(stmt.BindInt(1, v1::JOB_STATE_QUEUED));
    RETURN_IF_ERROR(stmt.BindInt(2, v1::JOB_STATE_RUNNING));
    RETURN_IF_ERROR(stmt.ForEachRow([&] {
      v1::JobResult result;
      const std::string_view blob = stmt.ColumnBlob(1);
      result.ParseFromArray(blob.data(), static_cast<int>(blob.size()));
      found.emplace_back(std::string(stmt.ColumnText(0)), std::move(result));
    }));
  }
  std::vector<std::string> ids;
  for (auto& [id, result] : found) {
    v1::JobSummary* s = result.mutable_summary();
    s->set_job_id(id);
    s->set_error(InterruptedError(*s));
    s->set_state(v1::JOB_STATE_INTERRUPTED);
    std::string blob;
    result.SerializeToString(&blob);
    ASSIGN_OR_RETURN(
        sqlite::Statement stmt,
        db_->Prepare("UPDATE jobs SET state = ?, result = ? WHERE id = ?"));
    RETURN_IF_ERROR(stmt.BindInt(1, v1::JOB_STATE_INTERRUPTED));
    RETURN_IF_ERROR(stmt.BindBlob(2, blob));
    RETURN_IF_ERROR(stmt.BindText(3, id));
    RETURN_IF_ERROR(stmt.Run());
    ids.push_back(id);
  }
  return ids;
}

absl::StatusOr<int64_t> JobStore::Prune() {
  absl::MutexLock lock(&mu_);
  return PruneLocked();
}

absl::StatusOr<int64_t> JobStore::PruneLocked() {
  const int64_t cutoff_ms = absl::ToUnixMillis(absl::Now() - limits_.max_age);
  ASSIGN_OR_RETURN(sqlite::Statement old,
                   db_->Prepare("DELETE FROM jobs WHERE state NOT IN (?, ?)"
                                " AND ended_ms < ?"));
  RETURN_IF_ERROR(old.BindInt(1, v1::JOB_STATE_QUEUED));
  RETURN_IF_ERROR(old.BindInt(2, v1::JOB_STATE_RUNNING));
  RETURN_IF_ERROR(old.BindInt(3, cutoff_ms));
  RETURN_IF_ERROR(old.Run());
  int64_t deleted = db_->Changes();
  // The newest records that fit in max_bytes stay; running jobs always do.
  ASSIGN_OR_RETURN(
      sqlite::Statement big,
      db_->Prepare("DELETE FROM jobs WHERE id IN (SELECT id FROM ("
                   "  SELECT id, state, SUM(LENGTH(result) + LENGTH(events))"
                   "    OVER (ORDER BY submitted_ms DESC, id) AS total"
                   "  FROM jobs) WHERE total > ? AND state NOT IN (?, ?))"));
  RETURN_IF_ERROR(big.BindInt(1, limits_.max_bytes));
  RETURN_IF_ERROR(big.BindInt(2, v1::JOB_STATE_QUEUED));
  RETURN_IF_ERROR(big.BindInt(3, v1::JOB_STATE_RUNNING));
  RETURN_IF_ERROR(big.Run());
  deleted += db_->Changes();
  return deleted;
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
