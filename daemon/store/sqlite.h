// A thin RAII layer over the sqlite3 C API: a connection (Db), a prepared
// statement (Statement) and transactions (Transaction, ReadTransaction).
// Errors come back as absl::Status carrying SQLite's message; nothing throws.
//
// Threads: a Db and its Statements are used by one thread at a time (SQLite's
// own serialization is not relied upon). Separate Db objects on one file may
// be used from separate threads; WAL mode lets readers run beside the writer.
#ifndef IRONTUNE_DAEMON_STORE_SQLITE_H_
#define IRONTUNE_DAEMON_STORE_SQLITE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;
struct sqlite3_stmt;

namespace irontune::sqlite {

// Maps an SQLite result code to a status: BUSY/LOCKED -> Unavailable,
// CORRUPT/NOTADB -> DataLoss, FULL -> ResourceExhausted,
// CANTOPEN/PERM/READONLY -> FailedPrecondition, others -> Internal.
absl::Status ErrorStatus(int code, std::string_view context,
                         std::string_view message);

// Checks the database at `path` with PRAGMA quick_check. OK when it passes
// or there is no such file; DataLoss "PATH is damaged (FIRST PROBLEM)" when
// it fails or the file is not a database; the error of opening it
// otherwise. Opens and closes its own connection.
absl::Status QuickCheck(const std::string& path);

// Renames `path` and its -wal and -shm files to PATH.corrupt-UNIXTIME[...]
// (a name not taken) and returns the new name of `path`.
// FailedPrecondition when a rename fails.
absl::StatusOr<std::string> MoveAside(const std::string& path);

// Fault hook for tests: every connection opened after this call may grow
// its database to at most `pages` pages (PRAGMA max_page_count; SQLite keeps
// a database at least at its size), so writes that need more fail with
// SQLITE_FULL as on a full disk. 0 (the default): no limit.
void SetMaxPageCountForTesting(int64_t pages);

enum class OpenMode { kReadWriteCreate, kReadOnly };

class Statement;

// One connection. Owns the sqlite3 handle and closes it in the destructor.
// REQUIRES: the Statements prepared on it, and its transactions, are
// destroyed first.
class Db {
 public:
  // Opens (or, with kReadWriteCreate, creates) the database at `path`.
  // REQUIRES: the parent directory exists. FailedPrecondition when the file
  // cannot be opened (see ErrorStatus for the other codes).
  static absl::StatusOr<std::unique_ptr<Db>> Open(const std::string& path,
                                                  OpenMode mode);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs one or more statements that return no rows the caller wants.
  absl::Status Exec(std::string_view sql);
  // Prepares a statement meant to be kept and reused
  // (SQLITE_PREPARE_PERSISTENT).
  absl::StatusOr<Statement> Prepare(std::string_view sql);
  // Runs `sql`, which must return one row, and gives its first column as an
  // integer (e.g. "PRAGMA user_version").
  absl::StatusOr<int64_t> QueryInt(std::string_view sql);
  // Same, as text.
  absl::StatusOr<std::string> QueryText(std::string_view sql);

  // Rows the last INSERT, UPDATE or DELETE changed.
  int64_t Changes() const;

  // A status for the connection's last error, prefixed with `context`.
  // A full disk (SQLITE_FULL, or an I/O error of ENOSPC, EDQUOT or EFBIG)
  // is ResourceExhausted "no space left in DIR (...)", DIR the database's
  // directory.
  absl::Status LastError(std::string_view context) const;
  const std::string& path() const { return path_; }
  // The connection, still owned by this Db: not to be closed.
  sqlite3* handle() const { return db_; }

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // `sql` prepared and stepped to its first row; Internal when it returns
  // none.
  absl::StatusOr<Statement> QueryRow(std::string_view sql);
  // The status of `code` (with the connection's system errno) as LastError
  // describes.
  absl::Status Error(int code, std::string_view context,
                     std::string_view message) const;

  sqlite3* db_;  // owned
  std::string path_;
};

// A prepared statement. Movable; finalized in the destructor. Bind indices
// are 1-based, column indices 0-based, as in SQLite. A failed Bind or Step
// comes back as the connection's error, naming the statement's SQL.
// REQUIRES: valid() for all but Reset and destruction; the Db it was
// prepared on outlives it.
class Statement {
 public:
  Statement() = default;
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  ~Statement();

  // Bound text and blobs are copied (SQLITE_TRANSIENT), so the arguments
  // need not outlive the call.
  absl::Status BindInt(int index, int64_t value);
  absl::Status BindDouble(int index, double value);
  absl::Status BindText(int index, std::string_view value);
  absl::Status BindBlob(int index, std::string_view value);
  // Binds without copying, for hot lookups. REQUIRES: `value` outlives the
  // next Reset (which clears the bindings) or Bind of the same index.
  absl::Status BindTextUncopied(int index, std::string_view value);

  // Advances: true when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Steps to completion, calling `on_row` at each row; the columns are
  // read from this statement inside it. Stops at the first error.
  absl::Status ForEachRow(absl::FunctionRef<void()> on_row);
  // Steps to completion, for statements that return no rows.
  absl::Status Run();
  // Resets for reuse and clears the bindings. Always safe to call.
  void Reset();

  // The columns of the current row. REQUIRES: the last Step returned true.
  int64_t ColumnInt(int index) const;
  double ColumnDouble(int index) const;
  // The views stay valid until the next Step, Reset or destruction.
  std::string_view ColumnText(int index) const;
  std::string_view ColumnBlob(int index) const;
  bool ColumnIsNull(int index) const;

  bool valid() const { return stmt_ != nullptr; }

 private:
  friend class Db;
  Statement(Db* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  absl::Status Check(int code, std::string_view what);

  Db* db_ = nullptr;              // not owned; outlives the statement
  sqlite3_stmt* stmt_ = nullptr;  // owned
};

// Resets a statement when the scope ends, so a kept statement never holds a
// read transaction open between uses. REQUIRES: the statement outlives it.
class ScopedReset {
 public:
  explicit ScopedReset(Statement& s) : s_(s) {}
  ~ScopedReset() { s_.Reset(); }
  ScopedReset(const ScopedReset&) = delete;
  ScopedReset& operator=(const ScopedReset&) = delete;

 private:
  Statement& s_;
};

enum class TransactionKind {
  // BEGIN IMMEDIATE: takes the write lock at once. Rolled back when the
  // scope ends unless committed.
  kWrite,
  // Deferred BEGIN: the reads inside see one snapshot and take the WAL read
  // lock once. Ended (nothing to lose) when the scope ends.
  kRead,
};

// A transaction open on a connection until Commit (kWrite only) or the end
// of its scope. Movable, not assignable. REQUIRES: `db` outlives it, and
// statements stepped inside are reset before it ends. Use the aliases
// below.
template <TransactionKind kKind>
class BasicTransaction {
 public:
  // Begins on `db`; the connection's error when it cannot (Unavailable
  // while another connection holds the write lock past the busy timeout).
  static absl::StatusOr<BasicTransaction> Begin(Db& db);
  BasicTransaction(BasicTransaction&& other) noexcept
      : db_(std::exchange(other.db_, nullptr)) {}
  BasicTransaction& operator=(BasicTransaction&&) = delete;
  ~BasicTransaction();

  // Commits. On failure (e.g. SQLITE_BUSY) the transaction is rolled back,
  // so the connection stays usable. FailedPrecondition when already
  // committed.
  absl::Status Commit() requires(kKind == TransactionKind::kWrite);

 private:
  explicit BasicTransaction(Db* db) : db_(db) {}
  Db* db_;  // not owned; null once committed or moved from
};

using Transaction = BasicTransaction<TransactionKind::kWrite>;
using ReadTransaction = BasicTransaction<TransactionKind::kRead>;

extern template class BasicTransaction<TransactionKind::kWrite>;
extern template class BasicTransaction<TransactionKind::kRead>;

}  // namespace irontune::sqlite

#endif  // IRONTUNE_DAEMON_STORE_SQLITE_H_
