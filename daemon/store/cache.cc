#include "daemon/store/cache.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <istream>
#include <ostream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "daemon/store/cache_json.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

using nlohmann::json;

// How long a connection waits for another's lock before Unavailable.
constexpr int kBusyTimeoutMs = 10'000;
// Page cache per connection (negative: KiB), so lookups in a large cache
// stay in memory.
constexpr int kCacheKiB = 64 * 1024;
// Reads map the file rather than copying pages through read(): a large
// cache's random lookups then cost no system calls. Address space only; the
// kernel's page cache holds the pages, shared by the connections.
constexpr int64_t kMmapBytes = int64_t{1} << 30;
// IRON's cost files are a few hundred bytes; anything far larger is not one.
constexpr std::uintmax_t kMaxIronFileBytes = 1 << 20;

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

// A stored measurement, or nullopt (logged) when it does not decode or is
// of another power mode than the partition's.
std::optional<v1::Measurement> Decode(std::string_view blob,
                                      std::string_view where,
                                      std::string_view key, PowerMode mode) {
  v1::Measurement m;
  if (!m.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
    spdlog::warn("cache: {} row {} does not decode; read as a miss", where,
                 key);
    return std::nullopt;
  }
  if (m.power_mode() == PowerModeName(mode)) return m;  // as Put stores it
  absl::StatusOr<PowerMode> stored = ParsePowerMode(m.power_mode());
  if (!stored.ok() || *stored != mode) {
    spdlog::warn(
        "cache: {} row {} is at power mode \"{}\", not the partition's {}; "
        "read as a miss",
        where, key, m.power_mode(), PowerModeName(mode));
    return std::nullopt;
  }
  return m;
}

// Field access for import lines, InvalidArgument naming the line.
absl::StatusOr<std::string> StringField(const json& j, const char* name,
                                        int line) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line, ": ", name, ": missing or not a string"));
  }
  return it->get<std::string>();
}

absl::StatusOr<int64_t> IntField(const json& j, const char* name, int line) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line, ": ", name, ": missing or not an integer"));
  }
  return it->get<int64_t>();
}

// One export line. Bytes that are not UTF-8 are replaced rather than
// thrown on.
std::string DumpLine(const json& line) {
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

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
  ASSIGN_OR_RETURN(get_, db_->Prepare("SELECT row_schema, measurement "
                                      "FROM measurements "
                                      "WHERE partition = ?1 AND key = ?2"));
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
  if (partition_id_.has_value()) return partition_id_;
  ASSIGN_OR_RETURN(sqlite::Statement stmt,
                   db_->Prepare("SELECT id FROM partitions "
                                "WHERE platform = ?1 AND power_mode = ?2"));
  RETURN_IF_ERROR(stmt.BindText(1, platform_));
  RETURN_IF_ERROR(stmt.BindText(2, PowerModeName(power_mode_)));
  ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (found) partition_id_ = stmt.ColumnInt(0);
  return partition_id_;
}

absl::StatusOr<std::optional<v1::Measurement>> CacheReader::Lookup(
    sqlite::Statement& stmt, std::string_view digest) {
  if (!IsCacheKeyDigest(digest)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", AsAbsl(digest), "\" is not a cache key (",
                     kCacheKeyDigits, " lower-case hex digits)"));
  }
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
    const CacheKey& key) {
  return Get(key.Digest());
}

absl::StatusOr<std::optional<v1::Measurement>> CacheReader::Get(
    std::string_view digest) {
  ASSIGN_OR_RETURN(std::optional<v1::Measurement> m, Lookup(get_, digest));
  ++(m.has_value() ? hits_ : misses_);
  return m;
}

absl::StatusOr<std::vector<std::optional<v1::Measurement>>>
CacheReader::GetMany(absl::Span<const std::string> digests) {
  ASSIGN_OR_RETURN(sqlite::ReadTransaction snapshot,
                   sqlite::ReadTransaction::Begin(*db_));
  std::vector<std::optional<v1::Measurement>> found;
  found.reserve(digests.size());
  for (const std::string& digest : digests) {
    ASSIGN_OR_RETURN(std::optional<v1::Measurement> m, Get(digest));
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

absl::Status CacheReader::Export(std::ostream& out) {
  const std::string mode(PowerModeName(power_mode_));
  // One read transaction, so the export is one consistent snapshot.
  ASSIGN_OR_RETURN(sqlite::ReadTransaction snapshot,
                   sqlite::ReadTransaction::Begin(*db_));

  ASSIGN_OR_RETURN(std::optional<int64_t> partition, PartitionId());
  if (partition.has_value()) {
    for (bool iron : {false, true}) {
      ASSIGN_OR_RETURN(
          sqlite::Statement stmt,
          db_->Prepare(iron ? "SELECT key, 0, measurement FROM iron_costs "
                              "WHERE partition = ?1 ORDER BY key"
                            : "SELECT key, row_schema, measurement "
                              "FROM measurements "
                              "WHERE partition = ?1 ORDER BY key"));
      RETURN_IF_ERROR(stmt.BindInt(1, *partition));
      while (true) {
        ASSIGN_OR_RETURN(bool row, stmt.Step());
        if (!row) break;
        std::string key(stmt.ColumnText(0));
        v1::Measurement m;
        std::string_view blob = stmt.ColumnBlob(2);
        if (!m.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
          spdlog::warn("cache: {} row {} does not decode; not exported",
                       platform_, key);
          continue;
        }
        json line = {{"kind", iron ? "iron_cost" : "measurement"},
                     {"platform", platform_},
                     {"power_mode", mode},
                     {"key", key}};
        if (!iron) line["row_schema"] = stmt.ColumnInt(1);
        line["measurement"] = json::parse(MeasurementToJson(m), nullptr,
                                          /*allow_exceptions=*/false);
        out << DumpLine(line) << '\n';
      }
    }
  }

  ASSIGN_OR_RETURN(sqlite::Statement stmt,
                   db_->Prepare("SELECT recipe_hash, environment, row_schema, "
                                "verdict FROM verdicts WHERE platform = ?1 "
                                "ORDER BY recipe_hash, environment"));
  RETURN_IF_ERROR(stmt.BindText(1, platform_));
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    json line = {{"kind", "verdict"},
                 {"platform", platform_},
                 {"recipe_hash", std::string(stmt.ColumnText(0))},
                 {"environment", std::string(stmt.ColumnText(1))},
                 {"row_schema", stmt.ColumnInt(2)},
                 {"verdict", std::string(stmt.ColumnText(3))}};
    out << DumpLine(line) << '\n';
  }
  out.flush();
  if (!out) return absl::DataLossError("writing the export failed");
  return absl::OkStatus();
}

absl::StatusOr<CacheCheck> CacheReader::Check() {
  CacheCheck check;
  {
    ASSIGN_OR_RETURN(sqlite::Statement stmt,
                     db_->Prepare("PRAGMA integrity_check"));
    std::vector<std::string> problems;
    while (true) {
      ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      problems.emplace_back(stmt.ColumnText(0));
    }
    check.integrity = absl::StrJoin(problems, "\n");
  }
  ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db_->Prepare("SELECT measurement FROM measurements "
                   "UNION ALL SELECT measurement FROM iron_costs"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    ++check.rows;
    std::string_view blob = stmt.ColumnBlob(0);
    v1::Measurement m;
    if (!m.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
      ++check.undecodable;
    }
  }
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

  int64_t partition_id = 0;
  {
    ASSIGN_OR_RETURN(sqlite::Statement insert,
                     db->Prepare("INSERT OR IGNORE INTO partitions"
                                 "(platform, power_mode) VALUES (?1, ?2)"));
    RETURN_IF_ERROR(insert.BindText(1, platform));
    RETURN_IF_ERROR(insert.BindText(2, PowerModeName(power_mode)));
    RETURN_IF_ERROR(insert.Run());
    ASSIGN_OR_RETURN(sqlite::Statement select,
                     db->Prepare("SELECT id FROM partitions "
                                 "WHERE platform = ?1 AND power_mode = ?2"));
    RETURN_IF_ERROR(select.BindText(1, platform));
    RETURN_IF_ERROR(select.BindText(2, PowerModeName(power_mode)));
    ASSIGN_OR_RETURN(bool found, select.Step());
    if (!found) return absl::InternalError("partition row vanished");
    partition_id = select.ColumnInt(0);
  }

  std::unique_ptr<Cache> cache(
      new Cache(std::move(db), partition_id, std::move(platform), power_mode));
  RETURN_IF_ERROR(cache->reads_.PrepareStatements());
  sqlite::Db& conn = *cache->db_;
  ASSIGN_OR_RETURN(
      cache->put_,
      conn.Prepare("INSERT OR REPLACE INTO measurements(partition, key, "
                   "row_schema, t_step_us, measured, written, measurement) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  ASSIGN_OR_RETURN(
      cache->put_verdict_,
      conn.Prepare("INSERT OR REPLACE INTO verdicts(platform, recipe_hash, "
                   "environment, row_schema, verdict, written) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  ASSIGN_OR_RETURN(cache->put_iron_,
                   conn.Prepare("INSERT OR REPLACE INTO iron_costs(partition, "
                                "key, written, measurement) "
                                "VALUES (?1, ?2, ?3, ?4)"));
  return cache;
}

absl::Status Cache::CheckPowerMode(PowerMode device_mode) const {
  if (device_mode == power_mode()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the cache is for power mode ", AsAbsl(PowerModeName(power_mode())),
      ", not ", AsAbsl(PowerModeName(device_mode))));
}

absl::Status Cache::Validate(std::string_view digest,
                             const v1::Measurement& m) const {
  if (!IsCacheKeyDigest(digest)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", AsAbsl(digest), "\" is not a cache key (",
                     kCacheKeyDigits, " lower-case hex digits)"));
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
                           int64_t row_schema, const v1::Measurement& m) {
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
  return stmt.Run();
}

absl::Status Cache::Put(const CacheKey& key, const v1::Measurement& m) {
  return Put(key.Digest(), m);
}

absl::Status Cache::Put(std::string_view digest, const v1::Measurement& m) {
  RETURN_IF_ERROR(Validate(digest, m));
  // One statement in autocommit mode: one transaction.
  return Insert(put_, digest, kCacheRowSchema, m);
}

absl::Status Cache::PutMany(absl::Span<const CacheEntry> entries) {
  for (const CacheEntry& entry : entries) {
    RETURN_IF_ERROR(Validate(entry.key, entry.measurement));
  }
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  for (const CacheEntry& entry : entries) {
    RETURN_IF_ERROR(
        Insert(put_, entry.key, kCacheRowSchema, entry.measurement));
  }
  return txn.Commit();
}

absl::Status Cache::PutVerdict(const VerdictKey& key,
                               std::string_view verdict) {
  sqlite::ScopedReset reset(put_verdict_);
  RETURN_IF_ERROR(put_verdict_.BindText(1, platform()));
  RETURN_IF_ERROR(put_verdict_.BindText(2, key.recipe_hash));
  RETURN_IF_ERROR(put_verdict_.BindText(3, key.environment));
  RETURN_IF_ERROR(put_verdict_.BindInt(4, kCacheRowSchema));
  RETURN_IF_ERROR(put_verdict_.BindText(5, verdict));
  RETURN_IF_ERROR(put_verdict_.BindInt(6, NowUnix()));
  return put_verdict_.Run();
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

absl::StatusOr<ImportCounts> Cache::ImportIronCosts(
    const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  const fs::path dir =
      root / platform() / std::string(PowerModeName(power_mode()));
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("no IRON cost cache at ", dir.string()));
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    files.push_back(it->path());
  }
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("listing ", dir.string(), ": ", ec.message()));
  }
  std::sort(files.begin(), files.end());

  ImportCounts counts;
  auto skip = [&](const fs::path& file, absl::string_view why) {
    spdlog::warn("cache: IRON import: {}: skipped: {}", file.string(),
                 std::string(why));
    counts.skipped.push_back(absl::StrCat(file.string(), ": ", why));
  };
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  for (const fs::path& file : files) {
    if (!fs::is_regular_file(file, ec)) {
      skip(file, "not a regular file");
      continue;
    }
    if (file.extension() != ".json") {
      // Includes IRON's partial writes (`<key>.<pid>`) left by a crash.
      skip(file, "not a .json file");
      continue;
    }
    const std::string key = file.stem().string();
    if (!IsCacheKeyDigest(key)) {
      skip(file, "its name is not a 32-hex-digit key");
      continue;
    }
    std::uintmax_t size = fs::file_size(file, ec);
    if (ec || size > kMaxIronFileBytes) {
      skip(file, ec ? ec.message() : "too large for a cost file");
      continue;
    }
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      skip(file, "unreadable");
      continue;
    }
    absl::StatusOr<v1::Measurement> m = ParseIronCost(text.str());
    if (!m.ok()) {
      skip(file, m.status().message());
      continue;
    }
    absl::StatusOr<PowerMode> mode = ParsePowerMode(m->power_mode());
    if (!mode.ok() || *mode != power_mode()) {
      skip(file, absl::StrCat("its pmode \"", m->power_mode(),
                              "\" is not the directory's"));
      continue;
    }
    m->set_power_mode(std::string(PowerModeName(*mode)));
    std::string blob;
    m->SerializeToString(&blob);
    sqlite::ScopedReset reset(put_iron_);
    RETURN_IF_ERROR(put_iron_.BindInt(1, partition_id_));
    RETURN_IF_ERROR(put_iron_.BindText(2, key));
    RETURN_IF_ERROR(put_iron_.BindInt(3, NowUnix()));
    RETURN_IF_ERROR(put_iron_.BindBlob(4, blob));
    RETURN_IF_ERROR(put_iron_.Run());
    ++counts.imported;
  }
  RETURN_IF_ERROR(txn.Commit());
  spdlog::info("cache: imported {} IRON figures from {} ({} skipped)",
               counts.imported, dir.string(), counts.skipped.size());
  return counts;
}

absl::StatusOr<ImportCounts> Cache::Import(std::istream& in) {
  const std::string mode(PowerModeName(power_mode()));
  ASSIGN_OR_RETURN(
      sqlite::Statement add_measurement,
      db_->Prepare("INSERT OR IGNORE INTO measurements(partition, key, "
                   "row_schema, t_step_us, measured, written, measurement) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  ASSIGN_OR_RETURN(sqlite::Statement add_iron,
                   db_->Prepare("INSERT OR IGNORE INTO iron_costs(partition, "
                                "key, written, measurement) "
                                "VALUES (?1, ?2, ?3, ?4)"));
  ASSIGN_OR_RETURN(
      sqlite::Statement add_verdict,
      db_->Prepare("INSERT OR IGNORE INTO verdicts(platform, recipe_hash, "
                   "environment, row_schema, verdict, written) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));

  ImportCounts counts;
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line, ": not a JSON object"));
    }
    ASSIGN_OR_RETURN(std::string kind, StringField(j, "kind", line));
    ASSIGN_OR_RETURN(std::string platform, StringField(j, "platform", line));
    if (platform != this->platform()) {
      return absl::FailedPreconditionError(
          absl::StrCat("line ", line, ": a row of platform ", platform,
                       ", this cache is for ", this->platform()));
    }

    if (kind == "verdict") {
      ASSIGN_OR_RETURN(std::string recipe, StringField(j, "recipe_hash", line));
      ASSIGN_OR_RETURN(std::string env, StringField(j, "environment", line));
      ASSIGN_OR_RETURN(std::string verdict, StringField(j, "verdict", line));
      ASSIGN_OR_RETURN(int64_t row_schema, IntField(j, "row_schema", line));
      sqlite::ScopedReset reset(add_verdict);
      RETURN_IF_ERROR(add_verdict.BindText(1, platform));
      RETURN_IF_ERROR(add_verdict.BindText(2, recipe));
      RETURN_IF_ERROR(add_verdict.BindText(3, env));
      RETURN_IF_ERROR(add_verdict.BindInt(4, row_schema));
      RETURN_IF_ERROR(add_verdict.BindText(5, verdict));
      RETURN_IF_ERROR(add_verdict.BindInt(6, NowUnix()));
      RETURN_IF_ERROR(add_verdict.Run());
    } else if (kind == "measurement" || kind == "iron_cost") {
      ASSIGN_OR_RETURN(std::string line_mode,
                       StringField(j, "power_mode", line));
      if (line_mode != mode) {
        return absl::FailedPreconditionError(
            absl::StrCat("line ", line, ": a row of power mode ", line_mode,
                         ", this cache is for power mode ", mode));
      }
      ASSIGN_OR_RETURN(std::string key, StringField(j, "key", line));
      auto it = j.find("measurement");
      if (it == j.end() || !it->is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "line ", line, ": measurement: missing or not an object"));
      }
      absl::StatusOr<v1::Measurement> m = MeasurementFromJson(it->dump());
      if (!m.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", line, ": ", m.status().message()));
      }
      absl::Status valid = Validate(key, *m);
      if (!valid.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", line, ": ", valid.message()));
      }
      if (kind == "measurement") {
        ASSIGN_OR_RETURN(int64_t row_schema, IntField(j, "row_schema", line));
        RETURN_IF_ERROR(Insert(add_measurement, key, row_schema, *m));
      } else {
        if (m->power_mode().empty()) m->set_power_mode(mode);
        std::string blob;
        m->SerializeToString(&blob);
        sqlite::ScopedReset reset(add_iron);
        RETURN_IF_ERROR(add_iron.BindInt(1, partition_id_));
        RETURN_IF_ERROR(add_iron.BindText(2, key));
        RETURN_IF_ERROR(add_iron.BindInt(3, NowUnix()));
        RETURN_IF_ERROR(add_iron.BindBlob(4, blob));
        RETURN_IF_ERROR(add_iron.Run());
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line, ": unknown kind \"", kind, "\""));
    }
    if (db_->Changes() == 0) {
      counts.skipped.push_back(
          absl::StrCat("line ", line, ": already present, kept"));
    } else {
      ++counts.imported;
    }
  }
  if (in.bad()) return absl::DataLossError("reading the import failed");
  RETURN_IF_ERROR(txn.Commit());
  return counts;
}

}  // namespace irontune
