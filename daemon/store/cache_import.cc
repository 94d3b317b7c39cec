// The cache's exchange formats on the database side: CacheReader::Export
// and Cache::Import (JSON lines, cache_json.h) and Cache::ImportIronCosts
// (IRON's JSON cost files).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <istream>
#include <ostream>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "daemon/base/log_safe.h"
#include "daemon/store/cache.h"
#include "daemon/store/cache_json.h"
#include "daemon/store/iron_costs.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;

// IRON's cost files are a few hundred bytes; anything far larger is not one.
constexpr std::uintmax_t kMaxIronFileBytes = 1 << 20;

// The entries of `dir`, sorted. NotFound when it is not a directory.
absl::StatusOr<std::vector<fs::path>> ListIronFiles(const fs::path& dir) {
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
  return files;
}

// The text of `file` when it may be an IRON cost file: a regular
// `<key>.json` file of a plausible size. Otherwise why not, as the status's
// message.
absl::StatusOr<std::string> ReadIronFile(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    return absl::InvalidArgumentError("not a regular file");
  }
  if (file.extension() != ".json") {
    // Includes IRON's partial writes (`<key>.<pid>`) left by a crash.
    return absl::InvalidArgumentError("not a .json file");
  }
  if (!IsCacheKeyDigest(file.stem().string())) {
    return absl::InvalidArgumentError("its name is not a 32-hex-digit key");
  }
  std::uintmax_t size = fs::file_size(file, ec);
  if (ec || size > kMaxIronFileBytes) {
    return absl::InvalidArgumentError(ec ? ec.message()
                                         : "too large for a cost file");
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return absl::InvalidArgumentError("unreadable");
  return text.str();
}

// The figure in IRON cost file `file`, its power mode spelled as the
// partition's. When it is not one of `mode`, why not, as the status's
// message.
absl::StatusOr<v1::Measurement> ReadIronCost(const fs::path& file,
                                             PowerMode mode) {
  ASSIGN_OR_RETURN(std::string text, ReadIronFile(file));
  ASSIGN_OR_RETURN(v1::Measurement m, ParseIronCost(text));
  absl::StatusOr<PowerMode> file_mode = ParsePowerMode(m.power_mode());
  if (!file_mode.ok() || *file_mode != mode) {
    return absl::InvalidArgumentError(absl::StrCat(
        "its pmode \"", m.power_mode(), "\" is not the directory's"));
  }
  m.set_power_mode(std::string(PowerModeName(mode)));
  return m;
}

// Lists `file` in `counts` as skipped, and logs it.
void SkipIronFile(const fs::path& file, absl::string_view why,
                  ImportCounts& counts) {
  spdlog::warn("cache: IRON import: {}: skipped: {}", LogSafe(file.string()),
               LogSafe(std::string(why), kLogSafeLongBytes));
  counts.skipped.push_back(absl::StrCat(file.string(), ": ", why));
}

// Counts an imported line: imported when its insert changed a row, else
// skipped (the row was present).
void CountImportedLine(int line, int64_t changes, ImportCounts& counts) {
  if (changes == 0) {
    counts.skipped.push_back(
        absl::StrCat("line ", line, ": already present, kept"));
  } else {
    ++counts.imported;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Export

absl::Status CacheReader::Export(std::ostream& out) {
  // One read transaction, so the export is one consistent snapshot.
  ASSIGN_OR_RETURN(sqlite::ReadTransaction snapshot,
                   sqlite::ReadTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(std::optional<int64_t> partition, PartitionId());
  if (partition.has_value()) {
    RETURN_IF_ERROR(ExportFigures(out, *partition, /*iron=*/false));
    RETURN_IF_ERROR(ExportFigures(out, *partition, /*iron=*/true));
  }
  RETURN_IF_ERROR(ExportVerdicts(out));
  out.flush();
  if (!out) return absl::DataLossError("writing the export failed");
  return absl::OkStatus();
}

absl::Status CacheReader::ExportFigures(std::ostream& out, int64_t partition,
                                        bool iron) {
  const std::string mode(PowerModeName(power_mode_));
  ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db_->Prepare(iron ? "SELECT key, 0, measurement, 0, 0 FROM iron_costs "
                          "WHERE partition = ?1 ORDER BY key"
                        : "SELECT key, row_schema, measurement, rounds, "
                          "calls FROM measurements WHERE partition = ?1 "
                          "ORDER BY key, rounds, calls"));
  RETURN_IF_ERROR(stmt.BindInt(1, partition));
  return stmt.ForEachRow([&] {
    std::string key(stmt.ColumnText(0));
    v1::Measurement m;
    std::string_view blob = stmt.ColumnBlob(2);
    if (!m.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
      spdlog::warn("cache: {} row {} does not decode; not exported", platform_,
                   LogSafe(key));
      return;
    }
    std::optional<int64_t> row_schema;
    if (!iron) row_schema = stmt.ColumnInt(1);
    const FigureTiming timing{static_cast<uint32_t>(stmt.ColumnInt(3)),
                              static_cast<uint32_t>(stmt.ColumnInt(4))};
    out << FigureLine(iron ? "iron_cost" : "measurement", platform_, mode, key,
                      row_schema, m, timing)
        << '\n';
  });
}

absl::Status CacheReader::ExportVerdicts(std::ostream& out) {
  ASSIGN_OR_RETURN(sqlite::Statement stmt,
                   db_->Prepare("SELECT recipe_hash, environment, row_schema, "
                                "verdict FROM verdicts WHERE platform = ?1 "
                                "ORDER BY recipe_hash, environment"));
  RETURN_IF_ERROR(stmt.BindText(1, platform_));
  return stmt.ForEachRow([&] {
    out << VerdictLine(platform_, stmt.ColumnText(0), stmt.ColumnText(1),
                       stmt.ColumnInt(2), stmt.ColumnText(3))
        << '\n';
  });
}

// ---------------------------------------------------------------------------
// Import

absl::StatusOr<ImportCounts> Cache::Import(std::istream& in,
                                           const ImportOrigin& origin) {
  verdict_memo_.clear();
  spread_.reset();
  Changed();
  ASSIGN_OR_RETURN(Inserts add, PrepareInserts(*db_, "IGNORE"));
  ImportCounts counts;
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  ASSIGN_OR_RETURN(counts.import_id, RecordImport(origin));
  // The inserts carry the import's id until this returns, however it does.
  import_id_ = counts.import_id;
  absl::Cleanup clear = [this] { import_id_.reset(); };
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    ASSIGN_OR_RETURN(ImportLine line, ImportLine::Parse(text, number));
    if (absl::StatusOr<std::string> kind = line.String("kind");
        kind.ok() && *kind == "iron_file") {
      RETURN_IF_ERROR(ImportIronFile(add, line, counts));
      continue;
    }
    RETURN_IF_ERROR(ImportOne(add, line));
    CountImportedLine(number, db_->Changes(), counts);
  }
  if (in.bad()) return absl::DataLossError("reading the import failed");
  ASSIGN_OR_RETURN(sqlite::Statement lines,
                   db_->Prepare("UPDATE imports SET lines = ?1 WHERE id = ?2"));
  RETURN_IF_ERROR(lines.BindInt(1, counts.imported));
  RETURN_IF_ERROR(lines.BindInt(2, counts.import_id));
  RETURN_IF_ERROR(lines.Run());
  RETURN_IF_ERROR(txn.Commit());
  return counts;
}

absl::StatusOr<int64_t> Cache::RecordImport(const ImportOrigin& origin) {
  ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db_->Prepare("INSERT INTO imports(imported_by, peer, source, written, "
                   "lines) VALUES (?1, ?2, ?3, ?4, 0)"));
  RETURN_IF_ERROR(stmt.BindText(1, origin.imported_by));
  RETURN_IF_ERROR(stmt.BindText(2, origin.peer));
  RETURN_IF_ERROR(stmt.BindText(3, origin.source));
  RETURN_IF_ERROR(stmt.BindInt(4, absl::ToUnixMillis(absl::Now())));
  RETURN_IF_ERROR(stmt.Run());
  return db_->QueryInt("SELECT last_insert_rowid()");
}

absl::StatusOr<int64_t> Cache::DropImport(int64_t id) {
  verdict_memo_.clear();
  spread_.reset();
  if (fleet_import_ == id) fleet_import_.reset();  // the next pull opens one
  Changed();
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  ASSIGN_OR_RETURN(sqlite::Statement find,
                   db_->Prepare("SELECT dropped FROM imports WHERE id = ?1"));
  RETURN_IF_ERROR(find.BindInt(1, id));
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) {
    return absl::NotFoundError(absl::StrCat("no import ", id, " in the cache"));
  }
  if (!find.ColumnIsNull(0)) {
    return absl::FailedPreconditionError(
        absl::StrCat("import ", id, " was dropped already"));
  }
  int64_t rows = 0;
  for (const char* table : {"measurements", "iron_costs", "verdicts"}) {
    ASSIGN_OR_RETURN(sqlite::Statement drop,
                     db_->Prepare(absl::StrCat("DELETE FROM ", table,
                                               " WHERE import_id = ?1")));
    RETURN_IF_ERROR(drop.BindInt(1, id));
    RETURN_IF_ERROR(drop.Run());
    rows += db_->Changes();
  }
  ASSIGN_OR_RETURN(
      sqlite::Statement mark,
      db_->Prepare("UPDATE imports SET dropped = ?1 WHERE id = ?2"));
  RETURN_IF_ERROR(mark.BindInt(1, absl::ToUnixMillis(absl::Now())));
  RETURN_IF_ERROR(mark.BindInt(2, id));
  RETURN_IF_ERROR(mark.Run());
  RETURN_IF_ERROR(txn.Commit());
  spdlog::info("cache: dropped import {} ({} rows)", id, rows);
  return rows;
}

absl::StatusOr<ClearCounts> Cache::Clear() {
  verdict_memo_.clear();
  spread_.reset();
  fleet_import_.reset();
  Changed();
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  ClearCounts counts;
  const std::pair<const char*, int64_t*> tables[] = {
      {"measurements", &counts.measurements},
      {"iron_costs", &counts.iron_costs},
      {"verdicts", &counts.verdicts}};
  for (const auto& [table, count] : tables) {
    RETURN_IF_ERROR(db_->Exec(absl::StrCat("DELETE FROM ", table)));
    *count = db_->Changes();
  }
  RETURN_IF_ERROR(db_->Exec(
      "DELETE FROM outbox_measurements; DELETE FROM outbox_verdicts"));
  ASSIGN_OR_RETURN(sqlite::Statement mark,
                   db_->Prepare("UPDATE imports SET dropped = ?1 "
                                "WHERE dropped IS NULL"));
  RETURN_IF_ERROR(mark.BindInt(1, absl::ToUnixMillis(absl::Now())));
  RETURN_IF_ERROR(mark.Run());
  RETURN_IF_ERROR(txn.Commit());
  spdlog::info("cache: cleared {} measurements, {} IRON figures, {} verdicts",
               counts.measurements, counts.iron_costs, counts.verdicts);
  return counts;
}

absl::StatusOr<std::vector<v1::ImportRecord>> CacheReader::ListImports() {
  ASSIGN_OR_RETURN(sqlite::ReadTransaction snapshot,
                   sqlite::ReadTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db_->Prepare(
          "SELECT id, imported_by, peer, source, written, lines, dropped, "
          "(SELECT count(*) FROM measurements WHERE import_id = i.id) + "
          "(SELECT count(*) FROM iron_costs WHERE import_id = i.id) + "
          "(SELECT count(*) FROM verdicts WHERE import_id = i.id) "
          "FROM imports AS i ORDER BY id DESC"));
  std::vector<v1::ImportRecord> records;
  RETURN_IF_ERROR(stmt.ForEachRow([&] {
    v1::ImportRecord& r = records.emplace_back();
    r.set_id(static_cast<uint64_t>(stmt.ColumnInt(0)));
    r.set_imported_by(std::string(stmt.ColumnText(1)));
    r.set_peer(std::string(stmt.ColumnText(2)));
    r.set_source(std::string(stmt.ColumnText(3)));
    r.set_imported_unix_ms(stmt.ColumnInt(4));
    r.set_lines(static_cast<uint64_t>(stmt.ColumnInt(5)));
    if (!stmt.ColumnIsNull(6)) r.set_dropped_unix_ms(stmt.ColumnInt(6));
    r.set_rows(static_cast<uint64_t>(stmt.ColumnInt(7)));
  }));
  return records;
}

absl::StatusOr<std::vector<v1::ImportRecord>> Cache::ListImports() {
  return reads_.ListImports();
}

absl::Status Cache::ImportOne(Inserts& add, const ImportLine& line) {
  ASSIGN_OR_RETURN(std::string kind, line.String("kind"));
  ASSIGN_OR_RETURN(std::string platform, line.String("platform"));
  if (platform != this->platform()) {
    return absl::FailedPreconditionError(
        absl::StrCat("line ", line.number(), ": a row of platform ", platform,
                     ", this cache is for ", this->platform()));
  }
  if (kind == "verdict") return ImportVerdict(add, line);
  if (kind == "measurement" || kind == "iron_cost") {
    return ImportFigure(add, line, /*iron=*/kind == "iron_cost");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("line ", line.number(), ": unknown kind \"", kind, "\""));
}

absl::Status Cache::ImportVerdict(Inserts& add, const ImportLine& line) {
  ASSIGN_OR_RETURN(std::string recipe, line.String("recipe_hash"));
  ASSIGN_OR_RETURN(std::string env, line.String("environment"));
  ASSIGN_OR_RETURN(std::string verdict, line.String("verdict"));
  ASSIGN_OR_RETURN(int64_t row_schema, line.Int("row_schema"));
  return InsertVerdict(add.verdict, VerdictKey{recipe, env}, row_schema,
                       verdict);
}

absl::Status Cache::ImportFigure(Inserts& add, const ImportLine& line,
                                 bool iron) {
  const std::string mode(PowerModeName(power_mode()));
  ASSIGN_OR_RETURN(std::string line_mode, line.String("power_mode"));
  if (line_mode != mode) {
    return absl::FailedPreconditionError(
        absl::StrCat("line ", line.number(), ": a row of power mode ",
                     line_mode, ", this cache is for power mode ", mode));
  }
  ASSIGN_OR_RETURN(std::string key, line.String("key"));
  ASSIGN_OR_RETURN(v1::Measurement m, line.Measurement());
  FigureTiming timing;
  if (!iron) {
    ASSIGN_OR_RETURN(timing, line.Timing());
  }
  absl::Status valid = Validate(key, m, timing);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line.number(), ": ", valid.message()));
  }
  if (!iron) {
    ASSIGN_OR_RETURN(int64_t row_schema, line.Int("row_schema"));
    return Insert(add.measurement, key, row_schema, m, timing,
                  FigureHistory{}.With(m));
  }
  if (m.power_mode().empty()) m.set_power_mode(mode);
  return InsertIron(add.iron, key, m);
}

absl::Status Cache::ImportIronFile(Inserts& add, const ImportLine& line,
                                   ImportCounts& counts) {
  ASSIGN_OR_RETURN(std::string path, line.String("path"));
  ASSIGN_OR_RETURN(std::string text, line.String("text"));
  IronFileRead read = ReadIronCostFile(path, text, power_mode());
  for (const IronFigure& figure : read.figures) {
    RETURN_IF_ERROR(InsertIron(add.iron, figure.key, figure.measurement));
    if (db_->Changes() == 0) {
      counts.skipped.push_back(
          absl::StrCat(path, ": ", figure.key, ": already present, kept"));
    } else {
      ++counts.imported;
    }
  }
  for (std::string& why : read.skipped) {
    spdlog::info("cache: IRON import: skipped {}",
                 LogSafe(why, kLogSafeLongBytes));
    counts.skipped.push_back(std::move(why));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// IRON's cost cache

absl::StatusOr<ImportCounts> Cache::ImportIronCosts(const fs::path& root) {
  Changed();
  const fs::path dir =
      root / platform() / std::string(PowerModeName(power_mode()));
  ASSIGN_OR_RETURN(std::vector<fs::path> files, ListIronFiles(dir));
  ImportCounts counts;
  ASSIGN_OR_RETURN(sqlite::Transaction txn, sqlite::Transaction::Begin(*db_));
  for (const fs::path& file : files) {
    absl::StatusOr<v1::Measurement> m = ReadIronCost(file, power_mode());
    if (!m.ok()) {
      SkipIronFile(file, m.status().message(), counts);
      continue;
    }
    RETURN_IF_ERROR(InsertIron(put_.iron, file.stem().string(), *m));
    ++counts.imported;
  }
  RETURN_IF_ERROR(txn.Commit());
  spdlog::info("cache: imported {} IRON figures from {} ({} skipped)",
               counts.imported, dir.string(), counts.skipped.size());
  return counts;
}

}  // namespace irontune
