#include "daemon/store/sqlite.h"

#include <sqlite3.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace irontune::sqlite {
namespace {

// Debian's Abseil has its own string_view type, not std::string_view.
absl::string_view AsAbsl(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace

absl::Status ErrorStatus(int code, std::string_view context,
                         std::string_view message) {
  std::string text = absl::StrCat(AsAbsl(context), ": ", AsAbsl(message),
                                  " (sqlite ", code, ")");
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(text);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(text);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(text);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return absl::FailedPreconditionError(text);
    default:
      return absl::InternalError(text);
  }
}

namespace {

std::atomic<int64_t> max_page_count{0};

// The directory `path` is in, for messages ("." for a bare name).
std::string DirectoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

}  // namespace

void SetMaxPageCountForTesting(int64_t pages) { max_page_count = pages; }

absl::Status Db::Error(int code, std::string_view context,
                       std::string_view message) const {
  const int errno_value = sqlite3_system_errno(db_);
  const bool full = (code & 0xff) == SQLITE_FULL ||
                    ((code & 0xff) == SQLITE_IOERR &&
                     (errno_value == ENOSPC || errno_value == EDQUOT ||
                      errno_value == EFBIG));
  if (full) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no space left in ", DirectoryOf(path_), " (", AsAbsl(context), ": ",
        AsAbsl(message), ", sqlite ", code, "); free space there"));
  }
  return ErrorStatus(code, context, message);
}

absl::StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& path,
                                             OpenMode mode) {
  int flags = SQLITE_OPEN_NOMUTEX;
  flags |= mode == OpenMode::kReadOnly
               ? SQLITE_OPEN_READONLY
               : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  sqlite3* handle = nullptr;
  int code = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  if (code != SQLITE_OK) {
    absl::Status status =
        ErrorStatus(code, absl::StrCat("opening ", path),
                    handle ? sqlite3_errmsg(handle) : sqlite3_errstr(code));
    sqlite3_close(handle);
    return status;
  }
  sqlite3_extended_result_codes(handle, 1);
  auto db = std::unique_ptr<Db>(new Db(handle, path));
  if (const int64_t pages = max_page_count.load(); pages > 0) {
    RETURN_IF_ERROR(db->Exec(absl::StrCat("PRAGMA max_page_count=", pages)));
  }
  return db;
}

Db::~Db() { sqlite3_close(db_); }

absl::Status Db::LastError(std::string_view context) const {
  return Error(sqlite3_extended_errcode(db_),
               absl::StrCat(path_, ": ", AsAbsl(context)), sqlite3_errmsg(db_));
}

int64_t Db::Changes() const { return sqlite3_changes64(db_); }

absl::Status Db::Exec(std::string_view sql) {
  std::string text(sql);
  char* message = nullptr;
  int code = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (code == SQLITE_OK) return absl::OkStatus();
  absl::Status status = Error(code, absl::StrCat(path_, ": ", AsAbsl(sql)),
                              message ? message : sqlite3_errstr(code));
  sqlite3_free(message);
  return status;
}

absl::StatusOr<Statement> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int code = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (code != SQLITE_OK) {
    return LastError(absl::StrCat("preparing ", AsAbsl(sql)));
  }
  return Statement(this, stmt);
}

absl::StatusOr<Statement> Db::QueryRow(std::string_view sql) {
  absl::StatusOr<Statement> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row)
    return absl::InternalError(absl::StrCat(AsAbsl(sql), ": returned no row"));
  return stmt;
}

absl::StatusOr<int64_t> Db::QueryInt(std::string_view sql) {
  absl::StatusOr<Statement> stmt = QueryRow(sql);
  if (!stmt.ok()) return stmt.status();
  return stmt->ColumnInt(0);
}

absl::StatusOr<std::string> Db::QueryText(std::string_view sql) {
  absl::StatusOr<Statement> stmt = QueryRow(sql);
  if (!stmt.ok()) return stmt.status();
  return std::string(stmt->ColumnText(0));
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

absl::Status Statement::Check(int code, std::string_view what) {
  if (code == SQLITE_OK) return absl::OkStatus();
  return db_->LastError(absl::StrCat(AsAbsl(what), " in ", sqlite3_sql(stmt_)));
}

absl::Status Statement::BindInt(int index, int64_t value) {
  return Check(sqlite3_bind_int64(stmt_, index, value), "binding");
}

absl::Status Statement::BindDouble(int index, double value) {
  return Check(sqlite3_bind_double(stmt_, index, value), "binding");
}

absl::Status Statement::BindText(int index, std::string_view value) {
  return Check(sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                                   SQLITE_TRANSIENT, SQLITE_UTF8),
               "binding");
}

absl::Status Statement::BindTextUncopied(int index, std::string_view value) {
  return Check(sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                                   SQLITE_STATIC, SQLITE_UTF8),
               "binding");
}

absl::Status Statement::BindBlob(int index, std::string_view value) {
  // A zero-length blob must still be a blob, not NULL: give a non-null
  // pointer.
  const char* data = value.empty() ? "" : value.data();
  return Check(
      sqlite3_bind_blob64(stmt_, index, data, value.size(), SQLITE_TRANSIENT),
      "binding");
}

absl::StatusOr<bool> Statement::Step() {
  int code = sqlite3_step(stmt_);
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  absl::Status status =
      db_->LastError(absl::StrCat("running ", sqlite3_sql(stmt_)));
  sqlite3_reset(stmt_);
  return status;
}

absl::Status Statement::ForEachRow(absl::FunctionRef<void()> on_row) {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    on_row();
  }
}

absl::Status Statement::Run() {
  return ForEachRow([] {});
}

void Statement::Reset() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::ColumnInt(int index) const {
  return sqlite3_column_int64(stmt_, index);
}

double Statement::ColumnDouble(int index) const {
  return sqlite3_column_double(stmt_, index);
}

std::string_view Statement::ColumnText(int index) const {
  const unsigned char* text = sqlite3_column_text(stmt_, index);
  if (text == nullptr) return {};
  return std::string_view(reinterpret_cast<const char*>(text),
                          sqlite3_column_bytes(stmt_, index));
}

std::string_view Statement::ColumnBlob(int index) const {
  const void* data = sqlite3_column_blob(stmt_, index);
  if (data == nullptr) return {};
  return std::string_view(static_cast<const char*>(data),
                          sqlite3_column_bytes(stmt_, index));
}

bool Statement::ColumnIsNull(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

absl::Status QuickCheck(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::unique_ptr<Db> db,
                   Db::Open(path, OpenMode::kReadWriteCreate));
  absl::StatusOr<Statement> stmt = db->Prepare("PRAGMA quick_check");
  std::string problem;
  if (stmt.ok()) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) {
      problem = std::string(row.status().message());
    } else if (*row && stmt->ColumnText(0) != "ok") {
      problem = std::string(stmt->ColumnText(0));
    }
  } else {
    problem = std::string(stmt.status().message());
    if (!absl::IsDataLoss(stmt.status())) return stmt.status();
  }
  if (problem.empty()) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(path, " is damaged (", problem, ")"));
}

absl::StatusOr<std::string> MoveAside(const std::string& path) {
  const std::string base =
      absl::StrCat(path, ".corrupt-", absl::ToUnixSeconds(absl::Now()));
  std::string aside = base;
  std::error_code ec;
  for (int i = 1; std::filesystem::exists(aside, ec); ++i) {
    aside = absl::StrCat(base, ".", i);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string from = absl::StrCat(path, suffix);
    if (!std::filesystem::exists(from, ec)) continue;
    std::filesystem::rename(from, absl::StrCat(aside, suffix), ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot move ", from, " aside: ", ec.message()));
    }
  }
  return aside;
}

template <TransactionKind kKind>
absl::StatusOr<BasicTransaction<kKind>> BasicTransaction<kKind>::Begin(Db& db) {
  absl::Status status =
      db.Exec(kKind == TransactionKind::kWrite ? "BEGIN IMMEDIATE" : "BEGIN");
  if (!status.ok()) return status;
  return BasicTransaction(&db);
}

template <TransactionKind kKind>
BasicTransaction<kKind>::~BasicTransaction() {
  if (db_ == nullptr) return;
  // Nothing to report to: an uncommitted write's work is dropped either
  // way, and ending a transaction that only read cannot lose anything.
  (void)db_->Exec(kKind == TransactionKind::kWrite ? "ROLLBACK" : "COMMIT");
}

template <TransactionKind kKind>
absl::Status BasicTransaction<kKind>::Commit() requires(
    kKind == TransactionKind::kWrite) {
  if (db_ == nullptr) {
    return absl::FailedPreconditionError("transaction already finished");
  }
  Db* db = std::exchange(db_, nullptr);
  absl::Status status = db->Exec("COMMIT");
  // A failed COMMIT (e.g. SQLITE_BUSY) leaves the transaction open: roll it
  // back so the connection is usable.
  if (!status.ok()) (void)db->Exec("ROLLBACK");
  return status;
}

template class BasicTransaction<TransactionKind::kWrite>;
template class BasicTransaction<TransactionKind::kRead>;

}  // namespace irontune::sqlite
