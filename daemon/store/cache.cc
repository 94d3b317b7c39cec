#include "daemon/store/cache.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "daemon/base/log_safe.h"
#include "daemon/base/stats.h"
#include "daemon/store/cache_outbox.h"

namespace irontune {
namespace {

// How long a connection waits for another's lock before Unavailable.
constexpr int kBusyTimeoutMs = 10'000;
// Page cache per connection (negative: KiB), so lookups in a large cache
// stay in memory.
constexpr int kCacheKiB = 64 * 1024;
// Reads map the file rather than copying pages through read(): a large
// cache's random lookups then cost no system calls. Address space only; the
// kernel's page cache holds the pages, shared by the connections.
constexpr int64_t kMmapBytes = int64_t{1} << 30;

// Debian's Abseil has its own string_view type, not std::string_view.
absl::string_view AsAbsl(std::string_view s) { return {s.data(), s.size()}; }

int64_t NowUnix() { return absl::ToUnixSeconds(absl::Now()); }

absl::Status ConfigureConnection(sqlite::Db& db, sqlite::OpenMode mode) {
  RETURN_IF_ERROR(
      db.Exec(absl::StrCat("PRAGMA busy_timeout = ", kBusyTimeoutMs)));
  RETURN_IF_ERROR(db.Exec(absl::StrCat("PRAGMA cache_size = -", kCacheKiB)));
  RETURN_IF_ERROR(db.Exec(absl::StrCat("PRAGMA mmap_size = ", kMmapBytes)));
  if (mode == sqlite::OpenMode::kReadOnly) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::string journal,
                   db.QueryText("PRAGMA journal_mode = WAL"));
  if (journal != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat(db.path(), ": could not switch to WAL mode (journal mode ",
                     journal, ")"));
  }
  return db.Exec("PRAGMA synchronous = NORMAL");
}

// The id of the partition of `platform` at `mode`; nullopt when the file
// has none.
absl::StatusOr<std::optional<int64_t>> FindPartition(sqlite::Db& db,
                                                     std::string_view platform,
                                                     PowerMode mode) {
  ASSIGN_OR_RETURN(sqlite::Statement stmt,
                   db.Prepare("SELECT id FROM partitions "
                              "WHERE platform = ?1 AND power_mode = ?2"));
  RETURN_IF_ERROR(stmt.BindText(1, platform));
  RETURN_IF_ERROR(stmt.BindText(2, PowerModeName(mode)));
  ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (!found) return std::nullopt;
  return stmt.ColumnInt(0);
}

// A stored measurement, or nullopt (logged) when it does not decode or is
// of another power mode than the partition's.
std::optional<v1::Measurement> Decode(std::string_view blob,
                                      std::string_view where,
                                      std::string_view key, PowerMode mode) {
  v1::Measurement m;
  if (!m.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
    spdlog::warn("cache: {} row {} does not decode; read as a miss", where,
                 LogSafe(key));
    return std::nullopt;
  }
  if (m.power_mode() == PowerModeName(mode)) return m;  // as Put stores it
  absl::StatusOr<PowerMode> stored = ParsePowerMode(m.power_mode());
  if (!stored.ok() || *stored != mode) {
    spdlog::warn(
        "cache: {} row {} is at power mode \"{}\", not the partition's {}; "
        "read as a miss",
        where, LogSafe(key), LogSafe(m.power_mode()), PowerModeName(mode));
    return std::nullopt;
  }
  return m;
}

// A key's rows, the most precise first: rounds x calls, then the newest,
// then the most rounds (unknown Timings, {0, 0}, last). A lookup reads
// kKeyRows, unsorted (most keys have one row), and ranks with Precedes.
constexpr std::string_view kKeyRows =
    "SELECT rounds, calls, row_schema, measurement, written FROM measurements "
    "WHERE partition = ?1 AND key = ?2";
constexpr std::string_view kRankedRows =
    "SELECT rounds, calls, row_schema, measurement, written FROM measurements "
    "WHERE partition = ?1 AND key = ?2 "
    "ORDER BY rounds * calls DESC, written DESC, rounds DESC";

// The Timing of a row read by kKeyRows or kRankedRows.
FigureTiming RowTiming(sqlite::Statement& stmt) {
  return {static_cast<uint32_t>(stmt.ColumnInt(0)),
          static_cast<uint32_t>(stmt.ColumnInt(1))};
}

// A row a lookup may take: its Timing, when it was written, its figure.
struct Candidate {
  FigureTiming timing;
  int64_t written = 0;
  v1::Measurement m;
};

// Whether a row at `timing` written at `written` ranks before `other`, as
// kRankedRows orders them.
bool Precedes(const FigureTiming& timing, int64_t written,
              const Candidate& other) {
  if (timing.calls_timed() != other.timing.calls_timed()) {
    return timing.calls_timed() > other.timing.calls_timed();
  }
  if (written != other.written) return written > other.written;
  return timing.rounds > other.timing.rounds;
}

}  // namespace

// ---------------------------------------------------------------------------
// FigureHistory, RepeatSpread

FigureHistory FigureHistory::With(const v1::Measurement& m) const {
  const double t = m.t_step_us();
  const std::vector<double> rounds(m.round_us().begin(), m.round_us().end());
  const std::optional<double> se = MedianStandardError(rounds);
  if (!(t > 0) || !std::isfinite(t) || !se || !std::isfinite(*se)) {
    return *this;
  }
  const double x = std::log(t);
  FigureHistory out = *this;
  out.seen = seen + 1;
  const double d = x - log_mean;
  out.log_mean = log_mean + d / static_cast<double>(out.seen);
  out.log_m2 = log_m2 + d * (x - out.log_mean);
  out.within_sq = within_sq + (*se / t) * (*se / t);
  return out;
}

std::optional<double> RepeatSpread::share() const {
  if (!(dof >= kMinDof)) return std::nullopt;
  return std::sqrt(std::max(0.0, log_m2 - within) / dof);
}

namespace {

// What one row's history adds to a RepeatSpread: {dof, log_m2, within}.
RepeatSpread PartOf(const FigureHistory& h) {
  if (h.seen < 2) return {};
  const double n = static_cast<double>(h.seen);
  return {n - 1, h.log_m2, h.within_sq * (n - 1) / n};
}

}  // namespace

void RepeatSpread::Replace(const FigureHistory& before,
                           const FigureHistory& after) {
  const RepeatSpread out = PartOf(before), in = PartOf(after);
  dof += in.dof - out.dof;
  log_m2 += in.log_m2 - out.log_m2;
  within += in.within - out.within;
}

// ---------------------------------------------------------------------------
// CacheReader

absl::StatusOr<std::unique_ptr<CacheReader>> CacheReader::Open(
    const std::string& path, std::string_view platform_name,
    PowerMode power_mode) {
  ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Db> db,
                   sqlite::Db::Open(path, sqlite::OpenMode::kReadOnly));
  RETURN_IF_ERROR(ConfigureConnection(*db, sqlite::OpenMode::kReadOnly));
  ASSIGN_OR_RETURN(int64_t version, db->QueryInt("PRAGMA user_version"));
  if (version != kCacheSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": cache schema version ", version, ", this irontune reads ",
        kCacheSchemaVersion,
        version < kCacheSchemaVersion ? " (irontuned opens and migrates it)"
                                      : ""));
  }
  sqlite::Db* raw = db.get();
  std::unique_ptr<CacheReader> reader(new CacheReader(
      std::move(db), raw, PlatformSlug(platform_name), power_mode));
  RETURN_IF_ERROR(reader->PrepareStatements());
  return reader;
}

absl::Status CacheReader::PrepareStatements() {
  ASSIGN_OR_RETURN(get_, db_->Prepare(kKeyRows));
  ASSIGN_OR_RETURN(get_iron_, db_->Prepare(absl::StrCat(
                                  "SELECT ", kCacheRowSchema,
                                  ", measurement FROM iron_costs "
                                  "WHERE partition = ?1 AND key = ?2")));
  ASSIGN_OR_RETURN(get_verdict_,
                   db_->Prepare("SELECT row_schema, verdict FROM verdicts "
                                "WHERE platform = ?1 AND recipe_hash = ?2 "
                                "AND environment = ?3"));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<int64_t>> CacheReader::PartitionId() {
  if (!partition_id_.has_value()) {
    ASSIGN_OR_RETURN(partition_id_,
                     FindPartition(*db_, platform_, power_mode_));
  }
  return partition_id_;
}

absl::Status CacheReader::CheckDigest(std::string_view digest) {
  if (IsCacheKeyDigest(digest)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("\"", AsAbsl(digest), "\" is not a cache key (",
                   kCacheKeyDigits, " lower-case hex digits)"));
}

absl::StatusOr<std::optional<v1::Measurement>> CacheReader::Best(
    std::string_view digest, const FigureTiming& asked) {
  RETURN_IF_ERROR(CheckDigest(digest));
  ASSIGN_OR_RETURN(std::optional<int64_t> partition, PartitionId());
  if (!partition.has_value()) return std::nullopt;
  sqlite::ScopedReset reset(get_);
  RETURN_IF_ERROR(get_.BindInt(1, *partition));
  RETURN_IF_ERROR(get_.BindTextUncopied(2, digest));  // outlives `reset`
  std::optional<Candidate> best, unknown;
  while (true) {
    ASSIGN_OR_RETURN(bool found, get_.Step());
    if (!found) break;
    if (get_.ColumnInt(2) != kCacheRowSchema) continue;
    const FigureTiming timing = RowTiming(get_);
    const int64_t written = get_.ColumnInt(4);
    if (timing.known() &&
        (!timing.Covers(asked) || (best && !Precedes(timing, written, *best))))
      continue;
    std::optional<v1::Measurement> m =
        Decode(get_.ColumnBlob(3), platform_, digest, power_mode_);
    if (!m) continue;
    (timing.known() ? best : unknown) =
        Candidate{timing, written, *std::move(m)};
  }
  if (best) return std::move(best->m);
  // A figure of unknown Timing only where no known one covers the ask: its
  // calls are known (0: not recorded), its rounds are not.
  if (unknown && (unknown->m.calls() == 0 || unknown->m.calls() >= asked.calls))
    return std::move(unknown->m);
  return std::nullopt;
}

absl::StatusOr<std::vector<CacheEntry>> CacheReader::Figures(
    std::string_view digest) {
  RETURN_IF_ERROR(CheckDigest(digest));
  std::vector<CacheEntry> out;
  ASSIGN_OR_RETURN(std::optional<int64_t> partition, PartitionId());
  if (!partition.has_value()) return out;
  ASSIGN_OR_RETURN(sqlite::Statement stmt, db_->Prepare(kRankedRows));
  RETURN_IF_ERROR(stmt.BindInt(1, *partition));
  RETURN_IF_ERROR(stmt.BindText(2, digest));
  RETURN_IF_ERROR(stmt.ForEachRow([&] {
    if (stmt.ColumnInt(2) != kCacheRowSchema) return;
    std::optional<v1::Measurement> m =
        Decode(stmt.ColumnBlob(3), platform_, digest, power_mode_);
    if (m) out.push_back({std::string(digest), *std::move(m), RowTiming(stmt)});
  }));
  return out;
}

absl::StatusOr<RepeatSpread> CacheReader::SumRepeatSpread() {
  RepeatSpread sum;
  ASSIGN_OR_RETURN(std::optional<int64_t> partition, PartitionId());
  if (!partition.has_value()) return sum;
  ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db_->Prepare("SELECT total(figures_seen - 1), total(log_m2), "
                   "total(within_sq * (figures_seen - 1) / figures_seen) "
                   "FROM measurements WHERE partition = ?1 AND "
                   "row_schema = ?2 AND figures_seen > 1"));
  RETURN_IF_ERROR(stmt.BindInt(1, *partition));
  RETURN_IF_ERROR(stmt.BindInt(2, kCacheRowSchema));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (row) {
    sum.dof = stmt.ColumnDouble(0);
    sum.log_m2 = stmt.ColumnDouble(1);
    sum.within = stmt.ColumnDouble(2);
  }
  return sum;
}

absl::StatusOr<std::optional<v1::Measurement>> CacheReader::Lookup(
    sqlite::Statement& stmt, std::string_view digest) {
  RETURN_IF_ERROR(CheckDigest(digest));
  ASSIGN_OR_RETURN(std::optional<int64_t> partition, PartitionId());
  if (!partition.has_value()) return std::nullopt;
  sqlite::ScopedReset reset(stmt);
  RETURN_IF_ERROR(stmt.BindInt(1, *partition));
  RETURN_IF_ERROR(stmt.BindTextUncopied(2, digest));  // outlives `reset`
  ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (!found || stmt.ColumnInt(0) != kCacheRowSchema) return std::nullopt;
  return Decode(stmt.ColumnBlob(1), platform_, digest, power_mode_);
}

absl::StatusOr<std::optional<v1::Measurement>> CacheReader::Get(
    const CacheKey& key, const FigureTiming& asked) {
  return Get(key.Digest(), asked);
}

absl::StatusOr<std::optional<v1::Measurement>> CacheReader::Get(
    std::string_view digest, const FigureTiming& asked) {
  ASSIGN_OR_RETURN(std::optional<v1::Measurement> m, Best(digest, asked));
  ++(m.has_value() ? hits_ : misses_);
  return m;
}

absl::StatusOr<std::vector<std::optional<v1::Measurement>>>
CacheReader::GetMany(absl::Span<const std::string> digests,
                     const FigureTiming& asked) {
  ASSIGN_OR_RETURN(sqlite::ReadTransaction snapshot,
                   sqlite::ReadTransaction::Begin(*db_));
  std::vector<std::optional<v1::Measurement>> found;
  found.reserve(digests.size());
  for (const std::string& digest : digests) {
    ASSIGN_OR_RETURN(std::optional<v1::Measurement> m, Get(digest, asked));
    found.push_back(std::move(m));
  }
  return found;
}

absl::StatusOr<std::optional<v1::Measurement>> CacheReader::GetIronCost(
    std::string_view iron_key) {
  return Lookup(get_iron_, iron_key);
}

absl::StatusOr<std::optional<std::string>> CacheReader::GetVerdict(
    const VerdictKey& key) {
  sqlite::ScopedReset reset(get_verdict_);
  RETURN_IF_ERROR(get_verdict_.BindText(1, platform_));
  RETURN_IF_ERROR(get_verdict_.BindText(2, key.recipe_hash));
  RETURN_IF_ERROR(get_verdict_.BindText(3, key.environment));
  ASSIGN_OR_RETURN(bool found, get_verdict_.Step());
  if (!found || get_verdict_.ColumnInt(0) != kCacheRowSchema) {
    return std::nullopt;
  }
  return std::string(get_verdict_.ColumnText(1));
}

absl::StatusOr<std::vector<std::optional<std::string>>>
CacheReader::GetVerdicts(absl::Span<const VerdictKey> keys) {
  ASSIGN_OR_RETURN(sqlite::ReadTransaction snapshot,
                   sqlite::ReadTransaction::Begin(*db_));
  std::vector<std::optional<std::string>> found;
  found.reserve(keys.size());
  for (const VerdictKey& key : keys) {
    ASSIGN_OR_RETURN(std::optional<std::string> v, GetVerdict(key));
    found.push_back(std::move(v));
  }
  return found;
}

absl::StatusOr<CacheStats> CacheReader::Stats() {
  CacheStats stats;
  stats.hits = hits_;
  stats.misses = misses_;
  ASSIGN_OR_RETURN(int64_t pages, db_->QueryInt("PRAGMA page_count"));
  ASSIGN_OR_RETURN(int64_t page_size, db_->QueryInt("PRAGMA page_size"));
  stats.database_bytes = pages * page_size;
  {
    ASSIGN_OR_RETURN(sqlite::Statement stmt,
                     db_->Prepare("SELECT count(*) FROM verdicts "
                                  "WHERE platform = ?1"));
    RETURN_IF_ERROR(stmt.BindText(1, platform_));
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (row) stats.verdicts = stmt.ColumnInt(0);
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> partition, PartitionId());
  if (!partition.has_value()) return stats;
  {
    ASSIGN_OR_RETURN(sqlite::Statement stmt,
                     db_->Prepare("SELECT count(*), total(row_schema != ?2) "
                                  "FROM measurements WHERE partition = ?1"));
    RETURN_IF_ERROR(stmt.BindInt(1, *partition));
    RETURN_IF_ERROR(stmt.BindInt(2, kCacheRowSchema));
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (row) {
      stats.rows = stmt.ColumnInt(0);
      stats.stale_rows = stmt.ColumnInt(1);
    }
  }
  {
    ASSIGN_OR_RETURN(sqlite::Statement stmt,
                     db_->Prepare("SELECT count(*) FROM iron_costs "
                                  "WHERE partition = ?1"));
    RETURN_IF_ERROR(stmt.BindInt(1, *partition));
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (row) stats.iron_rows = stmt.ColumnInt(0);
  }
  return stats;
}

absl::StatusOr<CacheCheck> CacheReader::Check() {
  CacheCheck check;
  {
    ASSIGN_OR_RETURN(sqlite::Statement stmt,
                     db_->Prepare("PRAGMA integrity_check"));
    std::vector<std::string> problems;
    RETURN_IF_ERROR(
        stmt.ForEachRow([&] { problems.emplace_back(stmt.ColumnText(0)); }));
    check.integrity = absl::StrJoin(problems, "\n");
  }
  ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db_->Prepare("SELECT measurement FROM measurements "
                   "UNION ALL SELECT measurement FROM iron_costs"));
  RETURN_IF_ERROR(stmt.ForEachRow([&] {
    ++check.rows;
    std::string_view blob = stmt.ColumnBlob(0);
    v1::Measurement m;
    if (!m.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
      ++check.undecodable;
    }
  }));
  return check;
}

// ---------------------------------------------------------------------------
// Cache

Cache::Cache(std::unique_ptr<sqlite::Db> db, int64_t partition_id,
             std::string platform, PowerMode power_mode)
    : db_(std::move(db)),
      partition_id_(partition_id),
      reads_(nullptr, db_.get(), std::move(platform), power_mode) {
  reads_.partition_id_ = partition_id;
  Changed();
}

absl::StatusOr<std::unique_ptr<Cache>> Cache::Open(
    const std::string& path, std::string_view platform_name,
    PowerMode power_mode) {
  std::string platform = PlatformSlug(platform_name);
  if (platform.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("platform name \"", AsAbsl(platform_name),
                     "\" has no letters or digits"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Db> db,
                   sqlite::Db::Open(path, sqlite::OpenMode::kReadWriteCreate));
  RETURN_IF_ERROR(ConfigureConnection(*db, sqlite::OpenMode::kReadWriteCreate));
  RETURN_IF_ERROR(MigrateSchema(*db, CacheMigrations()));

  ASSIGN_OR_RETURN(sqlite::Statement add_partition,
                   db->Prepare("INSERT OR IGNORE INTO partitions"
                               "(platform, power_mode) VALUES (?1, ?2)"));
  RETURN_IF_ERROR(add_partition.BindText(1, platform));
  RETURN_IF_ERROR(add_partition.BindText(2, PowerModeName(power_mode)));
  RETURN_IF_ERROR(add_partition.Run());
  ASSIGN_OR_RETURN(std::optional<int64_t> partition_id,
                   FindPartition(*db, platform, power_mode));
  if (!partition_id.has_value()) {
    return absl::InternalError("partition row vanished");
  }

  std::unique_ptr<Cache> cache(
      new Cache(std::move(db), *partition_id, std::move(platform), power_mode));
  RETURN_IF_ERROR(cache->reads_.PrepareStatements());
  ASSIGN_OR_RETURN(cache->put_, PrepareInserts(*cache->db_, "REPLACE"));
  ASSIGN_OR_RETURN(
      cache->history_,
      cache->db_->Prepare("SELECT row_schema, figures_seen, log_mean, "
                          "log_m2, within_sq FROM measurements WHERE "
                          "partition = ?1 AND key = ?2 AND rounds = ?3 AND "
                          "calls = ?4"));
  return cache;
}

absl::StatusOr<Cache::Inserts> Cache::PrepareInserts(
    sqlite::Db& db, std::string_view on_conflict) {
  const std::string insert = absl::StrCat("INSERT OR ", AsAbsl(on_conflict));
  Inserts inserts;
  ASSIGN_OR_RETURN(
      inserts.measurement,
      db.Prepare(absl::StrCat(
          insert,
          " INTO measurements(partition, key, row_schema, t_step_us, "
          "measured, written, measurement, import_id, rounds, calls, "
          "figures_seen, log_mean, log_m2, within_sq) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
          "?14)")));
  ASSIGN_OR_RETURN(inserts.iron,
                   db.Prepare(absl::StrCat(
                       insert,
                       " INTO iron_costs(partition, key, written, measurement, "
                       "import_id) VALUES (?1, ?2, ?3, ?4, ?5)")));
  ASSIGN_OR_RETURN(inserts.verdict,
                   db.Prepare(absl::StrCat(
                       insert,
                       " INTO verdicts(platform, recipe_hash, environment, "
                       "row_schema, verdict, written, import_id) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")));
  return inserts;
}

absl::Status Cache::CheckPowerMode(PowerMode device_mode) const {
  if (device_mode == power_mode()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the cache is for power mode ", AsAbsl(PowerModeName(power_mode())),
      ", not ", AsAbsl(PowerModeName(device_mode))));
}

absl::Status Cache::Validate(std::string_view digest, const v1::Measurement& m,
                             const FigureTiming& timing) const {
  RETURN_IF_ERROR(CacheReader::CheckDigest(digest));
  if (!timing.known() && !(timing == FigureTiming{})) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a figure's Timing of ", timing.rounds, " rounds x ", timing.calls,
        " calls: both must be above 0, or both 0 (unknown)"));
  }
  if (m.power_mode().empty()) return absl::OkStatus();
  absl::StatusOr<PowerMode> mode = ParsePowerMode(m.power_mode());
  if (!mode.ok() || *mode != power_mode()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a measurement at power mode \"", m.power_mode(),
                     "\" does not belong in the cache for power mode ",
                     AsAbsl(PowerModeName(power_mode()))));
  }
  return absl::OkStatus();
}

absl::Status Cache::Insert(sqlite::Statement& stmt, std::string_view digest,
                           int64_t row_schema, const v1::Measurement& m,
                           const FigureTiming& timing,
                           const FigureHistory& history) {
  std::string blob;
  if (m.power_mode().empty()) {
    v1::Measurement filled = m;
    filled.set_power_mode(std::string(PowerModeName(power_mode())));
    filled.SerializeToString(&blob);
  } else {
    m.SerializeToString(&blob);
  }
  sqlite::ScopedReset reset(stmt);
  RETURN_IF_ERROR(stmt.BindInt(1, partition_id_));
  RETURN_IF_ERROR(stmt.BindText(2, digest));
  RETURN_IF_ERROR(stmt.BindInt(3, row_schema));
  RETURN_IF_ERROR(stmt.BindDouble(4, m.t_step_us()));
  RETURN_IF_ERROR(stmt.BindText(5, m.measured()));
  RETURN_IF_ERROR(stmt.BindInt(6, NowUnix()));
  RETURN_IF_ERROR(stmt.BindBlob(7, blob));
  if (import_id_) RETURN_IF_ERROR(stmt.BindInt(8, *import_id_));
  RETURN_IF_ERROR(stmt.BindInt(9, timing.rounds));
  RETURN_IF_ERROR(stmt.BindInt(10, timing.calls));
  RETURN_IF_ERROR(stmt.BindInt(11, history.seen));
  RETURN_IF_ERROR(stmt.BindDouble(12, history.log_mean));
  RETURN_IF_ERROR(stmt.BindDouble(13, history.log_m2));
  RETURN_IF_ERROR(stmt.BindDouble(14, history.within_sq));
  return stmt.Run();
}

absl::Status Cache::InsertIron(sqlite::Statement& stmt,
                               std::string_view iron_key,
                               const v1::Measurement& m) {
  std::string blob;
  m.SerializeToString(&blob);
  sqlite::ScopedReset reset(stmt);
  RETURN_IF_ERROR(stmt.BindInt(1, partition_id_));
  RETURN_IF_ERROR(stmt.BindText(2, iron_key));
  RETURN_IF_ERROR(stmt.BindInt(3, NowUnix()));
  RETURN_IF_ERROR(stmt.BindBlob(4, blob));
  if (import_id_) RETURN_IF_ERROR(stmt.BindInt(5, *import_id_));
  return stmt.Run();
}

absl::Status Cache::InsertVerdict(sqlite::Statement& stmt,
                                  const VerdictKey& key, int64_t row_schema,
                                  std::string_view verdict) {
  sqlite::ScopedReset reset(stmt);
  RETURN_IF_ERROR(stmt.BindText(1, platform()));
  RETURN_IF_ERROR(stmt.BindText(2, key.recipe_hash));
  RETURN_IF_ERROR(stmt.BindText(3, key.environment));
  RETURN_IF_ERROR(stmt.BindInt(4, row_schema));
  RETURN_IF_ERROR(stmt.BindText(5, verdict));
  RETURN_IF_ERROR(stmt.BindInt(6, NowUnix()));
  if (import_id_) RETURN_IF_ERROR(stmt.BindInt(7, *import_id_));
  return stmt.Run();
}

absl::StatusOr<std::pair<FigureHistory, FigureHistory>> Cache::Store(
    std::string_view digest, const v1::Measurement& m,
    const FigureTiming& timing) {
  FigureHistory before;
  {
    sqlite::ScopedReset reset(history_);
    RETURN_IF_ERROR(history_.BindInt(1, partition_id_));
    RETURN_IF_ERROR(history_.BindTextUncopied(2, digest));
    RETURN_IF_ERROR(history_.BindInt(3, timing.rounds));
    RETURN_IF_ERROR(history_.BindInt(4, timing.calls));
    ASSIGN_OR_RETURN(bool found, history_.Step());
    // A row of another row schema is another measurement: its history
    // does not carry on.
    if (found && history_.ColumnInt(0) == kCacheRowSchema) {
      before = {history_.ColumnInt(1), history_.ColumnDouble(2),
                history_.ColumnDouble(3), history_.ColumnDouble(4)};
    }
  }
  const FigureHistory after = before.With(m);
  RETURN_IF_ERROR(
      Insert(put_.measurement, digest, kCacheRowSchema, m, timing, after));
  return std::make_pair(before, after);
}

absl::Status Cache::Put(const CacheKey& key, const v1::Measurement& m,
                        const FigureTiming& timing) {
  return Put(key.Digest(), m, timing);
}

absl::Status Cache::Put(std::string_view digest, const v1::Measurement& m,
                        const FigureTiming& timing) {
  return PutMany({CacheEntry{std::string(digest), m, timing}});
}

absl::Status Cache::PutMany(absl::Span<const CacheEntry> entries) {
  for (const CacheEntry& entry : entries) {
    RETURN_IF_ERROR(Validate(entry.key, entry.measurement, entry.timing));
  }
  Changed();
  std::optional<RepeatSpread> spread = std::move(spread_);
  spread_.reset();  // unknown until this commits
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  for (const CacheEntry& entry : entries) {
    ASSIGN_OR_RETURN(auto histories,
                     Store(entry.key, entry.measurement, entry.timing));
    if (spread) spread->Replace(histories.first, histories.second);
  }
  RETURN_IF_ERROR(txn.Commit());
  spread_ = spread;
  return absl::OkStatus();
}

absl::StatusOr<RepeatSpread> Cache::Spread() {
  if (!spread_) {
    ASSIGN_OR_RETURN(spread_, reads_.SumRepeatSpread());
  }
  return *spread_;
}

namespace {

// The last generation given to any Cache of the process.
std::atomic<uint64_t> last_generation{0};

}  // namespace

void Cache::Changed() {
  generation_.store(last_generation.fetch_add(1) + 1,
                    std::memory_order_release);
}

namespace {

std::string VerdictMemoKey(const VerdictKey& key) {
  return absl::StrCat(key.recipe_hash.size(), ":", key.recipe_hash, "\n",
                      key.environment);
}

}  // namespace

void Cache::KeepVerdict(const VerdictKey& key, std::string verdict) {
  if (verdict_memo_.size() >= kVerdictMemoSize) verdict_memo_.clear();
  verdict_memo_.insert_or_assign(VerdictMemoKey(key), std::move(verdict));
}

absl::StatusOr<std::optional<std::string>> Cache::GetVerdict(
    const VerdictKey& key) {
  if (auto it = verdict_memo_.find(VerdictMemoKey(key));
      it != verdict_memo_.end()) {
    return it->second;
  }
  ASSIGN_OR_RETURN(std::optional<std::string> found, reads_.GetVerdict(key));
  if (found) KeepVerdict(key, *found);
  return found;
}

absl::StatusOr<std::vector<std::optional<std::string>>> Cache::GetVerdicts(
    absl::Span<const VerdictKey> keys) {
  std::vector<std::optional<std::string>> out(keys.size());
  std::vector<VerdictKey> unknown;
  std::vector<size_t> where;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (auto it = verdict_memo_.find(VerdictMemoKey(keys[i]));
        it != verdict_memo_.end()) {
      out[i] = it->second;
    } else {
      unknown.push_back(keys[i]);
      where.push_back(i);
    }
  }
  if (unknown.empty()) return out;
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> read,
                   reads_.GetVerdicts(unknown));
  for (size_t k = 0; k < read.size(); ++k) {
    if (read[k]) KeepVerdict(unknown[k], *read[k]);
    out[where[k]] = std::move(read[k]);
  }
  return out;
}

absl::Status Cache::PutVerdict(const VerdictKey& key,
                               std::string_view verdict) {
  Changed();
  verdict_memo_.erase(VerdictMemoKey(key));
  return InsertVerdict(put_.verdict, key, kCacheRowSchema, verdict);
}

absl::Status Cache::Checkpoint() {
  ASSIGN_OR_RETURN(sqlite::Statement stmt,
                   db_->Prepare("PRAGMA wal_checkpoint(TRUNCATE)"));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  // The first column is 1 when a reader or writer kept it from finishing.
  if (row && stmt.ColumnInt(0) != 0) {
    return absl::UnavailableError(
        absl::StrCat(db_->path(), ": checkpoint blocked by a reader"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CacheOutbox>> Cache::KeepOutbox() {
  // Temporary triggers live with this connection, the file's only writer:
  // a box outside a fleet, or a reader, notes nothing.
  RETURN_IF_ERROR(db_->Exec(R"sql(
    CREATE TEMP TRIGGER IF NOT EXISTS outbox_measurement
    AFTER INSERT ON main.measurements WHEN NEW.import_id IS NULL
    BEGIN
      INSERT OR IGNORE INTO outbox_measurements(partition, key, rounds, calls)
      VALUES (NEW.partition, NEW.key, NEW.rounds, NEW.calls);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS outbox_verdict
    AFTER INSERT ON main.verdicts WHEN NEW.import_id IS NULL
    BEGIN
      INSERT OR IGNORE INTO outbox_verdicts(platform, recipe_hash, environment)
      VALUES (NEW.platform, NEW.recipe_hash, NEW.environment);
    END;
  )sql"));
  ASSIGN_OR_RETURN(
      std::unique_ptr<sqlite::Db> db,
      sqlite::Db::Open(db_->path(), sqlite::OpenMode::kReadWriteCreate));
  RETURN_IF_ERROR(ConfigureConnection(*db, sqlite::OpenMode::kReadWriteCreate));
  std::unique_ptr<CacheOutbox> outbox(
      new CacheOutbox(std::move(db), partition_id_, platform()));
  RETURN_IF_ERROR(outbox->DropOrphans());
  return outbox;
}

}  // namespace irontune
