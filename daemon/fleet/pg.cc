#include "daemon/fleet/pg.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "spdlog/spdlog.h"

namespace irontune::pg {
namespace {

// libpq's messages end in a newline; the statuses' do not.
std::string Trimmed(const char* message) {
  if (message == nullptr) return "";
  return std::string(absl::StripTrailingAsciiWhitespace(message));
}

// The first few words of a statement, to name it in an error.
std::string StatementName(std::string_view sql) {
  std::string flat;
  for (char c :
       absl::StripAsciiWhitespace(absl::string_view(sql.data(), sql.size()))) {
    if (flat.size() >= 48) break;
    const bool space = absl::ascii_isspace(static_cast<unsigned char>(c));
    if (space && (flat.empty() || flat.back() == ' ')) continue;
    flat.push_back(space ? ' ' : c);
  }
  return flat.size() < sql.size() ? flat + "..." : flat;
}

bool IsAuthenticationFailure(pg_conn* conn, const std::string& message) {
  return PQconnectionNeedsPassword(conn) ||
         absl::StrContains(message, "authentication failed") ||
         absl::StrContains(message, "no password supplied") ||
         absl::StrContains(message, "password is required");
}

}  // namespace

absl::StatusCode CodeOfSqlState(std::string_view sqlstate) {
  if (sqlstate.size() != 5) return absl::StatusCode::kInternal;
  const std::string_view cls = sqlstate.substr(0, 2);
  if (cls == "08" || sqlstate == "57P01" || sqlstate == "57P02" ||
      sqlstate == "57P03") {
    return absl::StatusCode::kUnavailable;
  }
  if (cls == "28") return absl::StatusCode::kUnauthenticated;
  if (cls == "22") return absl::StatusCode::kInvalidArgument;
  if (sqlstate == "42501") return absl::StatusCode::kPermissionDenied;
  if (sqlstate == "23505") return absl::StatusCode::kAlreadyExists;
  if (cls == "23") return absl::StatusCode::kFailedPrecondition;
  if (sqlstate == "40001" || sqlstate == "40P01") {
    return absl::StatusCode::kAborted;
  }
  if (cls == "53") return absl::StatusCode::kResourceExhausted;
  if (sqlstate == "57014") return absl::StatusCode::kDeadlineExceeded;
  return absl::StatusCode::kInternal;
}

Result& Result::operator=(Result&& other) noexcept {
  if (this != &other) {
    if (result_ != nullptr) PQclear(result_);
    result_ = std::exchange(other.result_, nullptr);
  }
  return *this;
}

Result::~Result() {
  if (result_ != nullptr) PQclear(result_);
}

int Result::rows() const { return result_ == nullptr ? 0 : PQntuples(result_); }

std::string Result::tag() const {
  return result_ == nullptr ? "" : PQcmdStatus(result_);
}

int64_t Result::affected() const {
  if (result_ == nullptr) return 0;
  int64_t n = 0;
  return absl::SimpleAtoi(absl::string_view(PQcmdTuples(result_)), &n) ? n : 0;
}

bool Result::IsNull(int row, int column) const {
  return PQgetisnull(result_, row, column) != 0;
}

std::string_view Result::Text(int row, int column) const {
  return std::string_view(PQgetvalue(result_, row, column),
                          PQgetlength(result_, row, column));
}

absl::StatusOr<int64_t> Result::Int(int row, int column) const {
  int64_t value = 0;
  const std::string_view text = Text(row, column);
  if (IsNull(row, column) ||
      !absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &value)) {
    return absl::InternalError(absl::StrCat("column ", column, " of row ", row,
                                            " is not an integer: \"",
                                            std::string(text), "\""));
  }
  return value;
}

absl::StatusOr<std::string> Result::Bytes(int row, int column) const {
  size_t length = 0;
  unsigned char* bytes = PQunescapeBytea(
      reinterpret_cast<const unsigned char*>(PQgetvalue(result_, row, column)),
      &length);
  if (bytes == nullptr) {
    return absl::InternalError(absl::StrCat("column ", column, " of row ", row,
                                            " does not decode as bytea"));
  }
  std::string out(reinterpret_cast<const char*>(bytes), length);
  PQfreemem(bytes);
  return out;
}

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(
    const std::string& conninfo, std::string_view what_view) {
  const std::string what(what_view);
  char* parse_error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &parse_error);
  if (options == nullptr) {
    std::string reason = Trimmed(parse_error);
    PQfreemem(parse_error);
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the connection string does not parse: ", reason));
  }
  PQconninfoFree(options);
  pg_conn* conn = PQconnectdb(conninfo.c_str());
  if (conn == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": libpq could not allocate a connection"));
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string reason = Trimmed(PQerrorMessage(conn));
    const bool auth = IsAuthenticationFailure(conn, reason);
    PQfinish(conn);
    if (auth) {
      return absl::UnauthenticatedError(
          absl::StrCat(what, " refused the credentials: ", reason));
    }
    return absl::UnavailableError(
        absl::StrCat(what, " cannot be reached: ", reason));
  }
  // The server's notices ("schema ... already exists, skipping") are not
  // errors: the debug log, not stderr.
  PQsetNoticeProcessor(
      conn,
      [](void*, const char* message) {
        spdlog::debug("fleet store notice: {}", Trimmed(message));
      },
      nullptr);
  return std::unique_ptr<Connection>(new Connection(conn, what));
}

Connection::~Connection() { PQfinish(conn_); }

bool Connection::healthy() const { return PQstatus(conn_) == CONNECTION_OK; }

int Connection::server_version() const { return PQserverVersion(conn_); }

absl::Status Connection::StatementError(pg_result* result,
                                        std::string_view sql) const {
  const char* state = result == nullptr
                          ? nullptr
                          : PQresultErrorField(result, PG_DIAG_SQLSTATE);
  // An error without a SQLSTATE is libpq's own: the connection failed
  // (lost, or the server went away mid-statement).
  absl::StatusCode code =
      state == nullptr ? absl::StatusCode::kUnavailable : CodeOfSqlState(state);
  if (!healthy()) code = absl::StatusCode::kUnavailable;
  std::string message = Trimmed(
      result == nullptr ? PQerrorMessage(conn_) : PQresultErrorMessage(result));
  if (message.empty()) message = Trimmed(PQerrorMessage(conn_));
  return absl::Status(
      code, absl::StrCat(what_, ": ", StatementName(sql), ": ", message));
}

absl::StatusOr<Result> Connection::Checked(pg_result* raw,
                                           std::string_view sql) const {
  const ExecStatusType status =
      raw == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(raw);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
    return Result(raw);
  }
  absl::Status error = StatementError(raw, sql);
  if (raw != nullptr) PQclear(raw);
  return error;
}

absl::StatusOr<Result> Connection::Exec(std::string_view sql,
                                        absl::Span<const Param> params) {
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (!p.is_null() && p.format() == 0 &&
        p.value().find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(what_, ": ", StatementName(sql), ": parameter $", i + 1,
                       " holds a NUL byte, which text cannot"));
    }
    values.push_back(p.is_null() ? nullptr : p.value().data());
    lengths.push_back(p.is_null() ? 0 : static_cast<int>(p.value().size()));
    formats.push_back(p.format());
  }
  const std::string text(sql);
  return Checked(
      PQexecParams(conn_, text.c_str(), static_cast<int>(params.size()),
                   nullptr, values.data(), lengths.data(), formats.data(), 0),
      sql);
}

absl::Status Connection::ExecScript(std::string_view sql) {
  return ExecTagged(sql).status();
}

absl::StatusOr<std::string> Connection::ExecTagged(std::string_view sql) {
  const std::string text(sql);
  absl::StatusOr<Result> result = Checked(PQexec(conn_, text.c_str()), sql);
  if (!result.ok()) return result.status();
  return result->tag();
}

absl::Status Connection::Listen(std::string_view channel) {
  for (char c : channel) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return absl::InvalidArgumentError(
          absl::StrCat("not a channel name: \"", std::string(channel), "\""));
    }
  }
  if (channel.empty()) return absl::InvalidArgumentError("empty channel name");
  return ExecScript(absl::StrCat("LISTEN ", std::string(channel)));
}

std::optional<Notification> Connection::TakeNotification() {
  PGnotify* n = PQnotifies(conn_);
  if (n == nullptr) return std::nullopt;
  Notification out{n->relname, n->extra == nullptr ? "" : n->extra};
  PQfreemem(n);
  return out;
}

absl::StatusOr<std::optional<Notification>> Connection::WaitForNotification(
    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (PQconsumeInput(conn_) == 0) {
      return absl::UnavailableError(absl::StrCat(
          what_,
          ": the connection was lost: ", Trimmed(PQerrorMessage(conn_))));
    }
    if (std::optional<Notification> n = TakeNotification()) return n;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return std::nullopt;
    pollfd fd{PQsocket(conn_), POLLIN, 0};
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
    if (poll(&fd, 1, ms) < 0 && errno != EINTR) {
      return absl::UnavailableError(
          absl::StrCat(what_, ": waiting for a notification failed"));
    }
  }
}

absl::StatusOr<Transaction> Transaction::Begin(Connection& conn) {
  absl::Status status = conn.ExecScript("BEGIN");
  if (!status.ok()) return status;
  return Transaction(&conn);
}

Transaction::~Transaction() {
  if (conn_ != nullptr && conn_->healthy()) {
    conn_->ExecScript("ROLLBACK").IgnoreError();
  }
}

absl::Status Transaction::Commit() {
  if (conn_ == nullptr) {
    return absl::FailedPreconditionError("the transaction is over");
  }
  Connection* conn = std::exchange(conn_, nullptr);
  absl::StatusOr<std::string> tag = conn->ExecTagged("COMMIT");
  if (!tag.ok()) return tag.status();
  // A transaction that failed earlier answers COMMIT with ROLLBACK.
  if (*tag != "COMMIT") {
    return absl::AbortedError(
        "the transaction was rolled back: a statement in it had failed");
  }
  return absl::OkStatus();
}

}  // namespace irontune::pg
