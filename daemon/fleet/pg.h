// A thin RAII layer over libpq, PostgreSQL's C client: a connection
// (Connection), a result (Result), a transaction (Transaction) and LISTEN /
// NOTIFY. Errors come back as absl::Status naming what was being done and
// PostgreSQL's message; nothing throws.
//
// Why libpq and not libpqxx: libpq is PostgreSQL's own client (Debian's
// libpq5, the library every other client wraps), so its conventions are the
// documented ones (conninfo URIs, passfile, sslmode, PGSERVICE); it gives the
// socket for waiting on notifications with a timeout; and the few calls the
// fleet needs are wrapped here in one small file. libpqxx 6.4 (Debian 12)
// adds a C++ exception-based layer over the same calls and an ABI tied to
// its minor version, for nothing the fleet uses.
//
// Parameters are sent as text (or bytes for bytea) with PQexecParams, never
// spliced into SQL. Results come back as text; Bytes() decodes bytea.
//
// Threads: a Connection, its Results and its Transactions are used by one
// thread at a time. Separate Connections may be used from separate threads.
#ifndef IRONTUNE_DAEMON_FLEET_PG_H_
#define IRONTUNE_DAEMON_FLEET_PG_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

struct pg_conn;
struct pg_result;

namespace irontune::pg {

// Maps a SQLSTATE (PostgreSQL's five-character error code) to a status code:
// class 08 (connection), 57P01-57P03 (shutdown, cannot connect now) ->
// Unavailable; class 28 (authorization) -> Unauthenticated; class 22 (data:
// bad encoding, out of range) -> InvalidArgument; 42501 ->
// PermissionDenied; 23505 -> AlreadyExists; other class 23 (integrity) ->
// FailedPrecondition; 40001, 40P01 (serialization, deadlock) -> Aborted;
// class 53 (resources) -> ResourceExhausted; 57014 (statement timeout,
// cancel) -> DeadlineExceeded; others -> Internal.
absl::StatusCode CodeOfSqlState(std::string_view sqlstate);

// One parameter of a statement: text, bytes (bytea, sent in binary) or
// NULL.
class Param {
 public:
  static Param Text(std::string value) { return Param(std::move(value), 0); }
  static Param Bytes(std::string value) { return Param(std::move(value), 1); }
  static Param Int(int64_t value) { return Text(std::to_string(value)); }
  static Param Null() { return Param(); }

  bool is_null() const { return !value_.has_value(); }
  const std::string& value() const { return *value_; }
  int format() const { return format_; }

 private:
  Param() = default;
  Param(std::string value, int format)
      : value_(std::move(value)), format_(format) {}
  std::optional<std::string> value_;
  int format_ = 0;  // 0 text, 1 binary
};

// The rows a statement returned. Movable; cleared in the destructor.
// Row and column indices are 0-based.
class Result {
 public:
  Result() = default;
  explicit Result(pg_result* result) : result_(result) {}
  Result(Result&& other) noexcept
      : result_(std::exchange(other.result_, nullptr)) {}
  Result& operator=(Result&& other) noexcept;
  ~Result();

  int rows() const;
  // The command tag: "COMMIT", "INSERT 0 1", ...
  std::string tag() const;
  // The rows an INSERT, UPDATE or DELETE changed (0 for others).
  int64_t affected() const;
  bool IsNull(int row, int column) const;
  // The view lives as long as the Result.
  std::string_view Text(int row, int column) const;
  // The column as an integer; Internal when it is NULL or not one.
  absl::StatusOr<int64_t> Int(int row, int column) const;
  // A bytea column decoded; Internal when it does not decode.
  absl::StatusOr<std::string> Bytes(int row, int column) const;

 private:
  pg_result* result_ = nullptr;  // owned
};

// A NOTIFY received on a channel this connection LISTENs to.
struct Notification {
  std::string channel;
  std::string payload;
};

// One connection to the server. Owns the PGconn and closes it in the
// destructor. REQUIRES: its Results may outlive it; its Transactions may
// not.
class Connection {
 public:
  // Connects with `conninfo` (a postgresql:// URI or key=value pairs, as
  // libpq takes them). Unauthenticated when the server refused the
  // credentials (or asked for a password none was given), Unavailable when
  // it could not be reached, InvalidArgument when `conninfo` does not
  // parse; each message names `what` ("the fleet store") and libpq's reason.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(
      const std::string& conninfo, std::string_view what);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one statement with `params` ($1, $2, ...); a text parameter with a
  // NUL byte is InvalidArgument (text cannot hold one). A failure's status
  // carries CodeOfSqlState of the server's SQLSTATE; an error libpq raises
  // itself (no SQLSTATE: the connection lost) is Unavailable. The message
  // names the statement's first words.
  absl::StatusOr<Result> Exec(std::string_view sql,
                              absl::Span<const Param> params = {});
  // Runs statements that take no parameters and return nothing wanted
  // (several separated by ';' are allowed).
  absl::Status ExecScript(std::string_view sql);

  // LISTENs to `channel` (an identifier of letters, digits and '_').
  absl::Status Listen(std::string_view channel);
  // The next notification received, waiting up to `timeout` for one;
  // nullopt when none came. Unavailable when the connection is lost.
  absl::StatusOr<std::optional<Notification>> WaitForNotification(
      absl::Duration timeout);

  // False once the server or the network has dropped the connection.
  bool healthy() const;
  // The server's version as PQserverVersion gives it (150004 for 15.4).
  int server_version() const;

 private:
  Connection(pg_conn* conn, std::string what)
      : conn_(conn), what_(std::move(what)) {}
  // The notification waiting in libpq's queue, if any.
  std::optional<Notification> TakeNotification();
  // ExecScript's statement, giving its command tag.
  absl::StatusOr<std::string> ExecTagged(std::string_view sql);
  friend class Transaction;
  // `raw` (a result of `sql`, owned) as a Result, or its error.
  absl::StatusOr<Result> Checked(pg_result* raw, std::string_view sql) const;
  // The status of a failed statement `sql` whose result is `result`.
  absl::Status StatementError(pg_result* result, std::string_view sql) const;

  pg_conn* conn_;     // owned
  std::string what_;  // for messages: "the fleet store"
};

// A transaction open on a connection until Commit or the end of its scope
// (which rolls back). Movable, not assignable. REQUIRES: the connection
// outlives it.
class Transaction {
 public:
  // BEGIN, at the default isolation (READ COMMITTED).
  static absl::StatusOr<Transaction> Begin(Connection& conn);
  Transaction(Transaction&& other) noexcept
      : conn_(std::exchange(other.conn_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  // COMMIT. On failure the transaction is over (PostgreSQL rolls it back).
  // FailedPrecondition when already committed.
  absl::Status Commit();

 private:
  explicit Transaction(Connection* conn) : conn_(conn) {}
  Connection* conn_;  // not owned; null once committed or moved from
};

}  // namespace irontune::pg

#endif  // IRONTUNE_DAEMON_FLEET_PG_H_
