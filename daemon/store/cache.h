// The measurement cache: every figure irontuned has timed, kept in one
// SQLite file so a design is timed once per NPU platform and power mode.
// It also keeps the builder's verdicts ("fits" / "refused: why") and the
// figures imported from IRON's JSON cost cache.
//
// Figures per Timing: a key may hold several figures, one per FigureTiming
// (cache_key.h) it was timed at; a Put replaces only the figure of its own
// Timing. A lookup asks for a Timing and gets the most precise figure
// that covers it (docs/statistics.md, "Which figure a lookup returns"):
// the most rounds x calls, then the newest, then the most rounds; a figure
// of unknown Timing (from before schema version 4) last, taken only where
// no figure of known Timing covers the ask and its calls do.
//
// Partitions: a Cache or CacheReader is bound at Open to one platform (its
// slug, as IRON names its cache directories: "npu-strix") and one power
// mode. Gets and Puts see that partition only; a figure of another mode is
// never returned. Verdicts are per platform (a design fits or not whatever
// the power mode).
//
// The file: WAL mode, synchronous=NORMAL, a busy timeout. Its layout version
// is PRAGMA user_version (see cache_schema.h); Cache::Open migrates an older
// file and refuses a newer one (FailedPrecondition). A row written under
// another row schema is a miss, never a wrong figure.
//
// Durability: each Put is one transaction (its row's history read, the
// whole serialized measurement written with its indexed columns), and
// each PutMany, Import and ImportIronCosts one transaction, so a crash
// leaves each row either whole or absent. With synchronous=NORMAL a power cut
// may lose the last transactions (never corrupt the file): they are remeasured.
//
// Ownership: Open gives the caller the Cache or CacheReader, each owning
// its own connection to the file.
//
// Threads: irontuned's device worker owns the one Cache (the only writer);
// a Cache is used by one thread at a time. Status and cache queries use a
// CacheReader, a separate read-only connection that may be used from another
// thread concurrently with the Cache (WAL lets it read while the writer
// writes); a CacheReader too is used by one thread at a time.
//
// Failure: SQLite errors come back as a Status (Unavailable when the file
// stays locked past the busy timeout, DataLoss when it is corrupt). A row
// whose stored measurement does not decode is logged and read as a miss.
#ifndef IRONTUNE_DAEMON_STORE_CACHE_H_
#define IRONTUNE_DAEMON_STORE_CACHE_H_

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/npu/platform.h"
#include "daemon/store/cache_key.h"
#include "daemon/store/cache_schema.h"
#include "daemon/store/sqlite.h"
#include "irontune/v1/measurement.pb.h"

namespace irontune {
namespace v1 {
class ImportRecord;  // tuner.proto; cache_import.cc includes it
}  // namespace v1

class ImportLine;   // cache_json.h
class CacheOutbox;  // cache_outbox.h

// What a partition holds, and how its lookups went.
struct CacheStats {
  int64_t rows = 0;            // measurements in the partition (any row schema)
  int64_t stale_rows = 0;      // of those, written under another row schema
  int64_t iron_rows = 0;       // IRON figures imported into the partition
  int64_t verdicts = 0;        // builder verdicts for the platform
  int64_t database_bytes = 0;  // the whole file: page_count * page_size
  int64_t hits = 0;            // Gets that found a figure, since Open
  int64_t misses = 0;          // Gets that did not (incl. stale, undecodable)
};

// A measurement, the key digest (CacheKey::Digest) it is stored under and
// the Timing it was taken at ({0, 0}: unknown).
struct CacheEntry {
  std::string key;
  v1::Measurement measurement;
  FigureTiming timing;
};

// What a row keeps of the figures stored under its key and Timing (Put;
// an import or a pull starts one): how many, the mean and the sum of
// squared deviations of their log step times (Welford), and the sum of
// their rounds' squared relative standard errors. Rows from before schema
// version 4 have none (seen 0).
struct FigureHistory {
  int64_t seen = 0;
  double log_mean = 0;
  double log_m2 = 0;
  double within_sq = 0;

  // With `m` added; unchanged where `m` has no finite step time above 0 or
  // fewer than two rounds (no standard error to tell its own noise apart).
  FigureHistory With(const v1::Measurement& m) const;
};

// How far repeated figures of one measurement spread: over every key and
// Timing of the partition with more than one figure in its history, the
// pooled variance of their log step times, less the part their rounds'
// own standard errors account for. What is left is what moved whole
// measurements between repeats (drift over minutes to days), as a share
// of the step (docs/statistics.md, "Absolute figures").
struct RepeatSpread {
  double dof = 0;     // the sum of (seen - 1)
  double log_m2 = 0;  // the sum of the histories' log_m2
  double within = 0;  // the sum of within_sq (seen - 1) / seen
  // Fewer degrees of freedom than this tell nothing (share() is nullopt).
  static constexpr double kMinDof = 2;

  // sqrt(max(0, log_m2 - within) / dof); nullopt below kMinDof.
  std::optional<double> share() const;
  // `before` of a row replaced by `after`.
  void Replace(const FigureHistory& before, const FigureHistory& after);
};

// What a builder verdict follows: the design's recipe and the build
// environment (Builder::Environment()), so a builder fix re-decides.
struct VerdictKey {
  std::string recipe_hash;
  std::string environment;
};

// A builder verdict with its key, as the outbox and the fleet store carry
// it.
using VerdictRow = std::pair<VerdictKey, std::string>;

// How an import went. `skipped` lists each entry not imported, with why:
// "path: reason" (ImportIronCosts, which also logs each) or
// "line N: already present, kept" (Import).
struct ImportCounts {
  int64_t imported = 0;
  std::vector<std::string> skipped;
  int64_t import_id = 0;  // Import: its record's id (ListImports)
};

// Who imported what (Import's record). Free text, stored as given.
struct ImportOrigin {
  std::string imported_by;  // the token's name, or the client's
  std::string peer;         // the importer's address
  std::string source;       // the file name the importer gave
};

// What Clear removed.
struct ClearCounts {
  int64_t measurements = 0;
  int64_t iron_costs = 0;
  int64_t verdicts = 0;
};

// The outcome of Check.
struct CacheCheck {
  std::string integrity;    // PRAGMA integrity_check: "ok" when sound
  int64_t rows = 0;         // measurement and IRON rows, every partition
  int64_t undecodable = 0;  // of those, blobs that do not decode
};

// Read access to one partition. See the file comment for threads.
class CacheReader {
 public:
  // Opens `path` read-only. REQUIRES: the file exists and a Cache has
  // created it (else FailedPrecondition); its schema version must be this
  // build's.
  static absl::StatusOr<std::unique_ptr<CacheReader>> Open(
      const std::string& path, std::string_view platform_name,
      PowerMode power_mode);
  CacheReader(const CacheReader&) = delete;
  CacheReader& operator=(const CacheReader&) = delete;

  // The most precise measurement stored under `key` that covers `asked`
  // (see the file comment; an unknown `asked`, the default, is covered by
  // every figure); nullopt when there is none. Rows written under another
  // row schema are passed over, as are rows that do not decode (logged).
  // InvalidArgument when `digest` is not a key digest.
  absl::StatusOr<std::optional<v1::Measurement>> Get(
      const CacheKey& key, const FigureTiming& asked = {});
  absl::StatusOr<std::optional<v1::Measurement>> Get(
      std::string_view digest, const FigureTiming& asked = {});
  // Get of each digest (result i is digests[i]'s), in one read transaction:
  // one snapshot, and the file's read lock taken once rather than per key.
  // The way to look up a shape's settings together.
  absl::StatusOr<std::vector<std::optional<v1::Measurement>>> GetMany(
      absl::Span<const std::string> digests, const FigureTiming& asked = {});
  // Every figure of the current row schema stored under `digest`, each
  // with its Timing, the most precise first (the order Get takes them
  // in). Rows that do not decode are left out (logged).
  absl::StatusOr<std::vector<CacheEntry>> Figures(std::string_view digest);
  // The partition's RepeatSpread, summed over its rows.
  absl::StatusOr<RepeatSpread> SumRepeatSpread();
  // A builder verdict for the platform; nullopt when none (or stale).
  absl::StatusOr<std::optional<std::string>> GetVerdict(const VerdictKey& key);
  // GetVerdict of each key (result i is keys[i]'s), in one read
  // transaction.
  absl::StatusOr<std::vector<std::optional<std::string>>> GetVerdicts(
      absl::Span<const VerdictKey> keys);
  // A figure imported from IRON, by IRON's key (see Cache::ImportIronCosts).
  absl::StatusOr<std::optional<v1::Measurement>> GetIronCost(
      std::string_view iron_key);

  absl::StatusOr<CacheStats> Stats();
  // Writes the partition as JSON lines, one object a line:
  //   {"kind":"measurement","platform":..,"power_mode":..,"key":..,
  //    "timing":{"rounds":R,"calls":C},"row_schema":N,
  //    "measurement":{proto3 JSON of v1.Measurement}}
  //   (no "timing" for a figure of unknown Timing)
  //   {"kind":"iron_cost","platform":..,"power_mode":..,"key":..,
  //    "measurement":{..}}
  //   {"kind":"verdict","platform":..,"recipe_hash":..,"environment":..,
  //    "row_schema":N,"verdict":".."}
  // in key order. A row that does not decode is left out (logged).
  absl::Status Export(std::ostream& out);
  // Checks the whole file (every partition): SQLite's integrity check, and
  // that every stored measurement decodes.
  absl::StatusOr<CacheCheck> Check();
  // Every Import recorded in the file (any partition), newest first, as
  // ListImports answers it (dropped_unix_ms 0 while not dropped).
  absl::StatusOr<std::vector<v1::ImportRecord>> ListImports();

  const std::string& platform() const { return platform_; }
  PowerMode power_mode() const { return power_mode_; }

 private:
  friend class Cache;
  CacheReader(std::unique_ptr<sqlite::Db> owned, sqlite::Db* db,
              std::string platform, PowerMode power_mode)
      : owned_(std::move(owned)),
        db_(db),
        platform_(std::move(platform)),
        power_mode_(power_mode) {}
  // The partition's id; nullopt while no Cache has created it.
  absl::StatusOr<std::optional<int64_t>> PartitionId();
  // Prepares the kept statements. REQUIRES: the schema is current.
  absl::Status PrepareStatements();
  // InvalidArgument unless `digest` is a key digest.
  static absl::Status CheckDigest(std::string_view digest);
  // Runs get_iron_ for `digest`; counts nothing.
  absl::StatusOr<std::optional<v1::Measurement>> Lookup(
      sqlite::Statement& stmt, std::string_view digest);
  // Get's choice among the rows of `digest`; counts nothing.
  absl::StatusOr<std::optional<v1::Measurement>> Best(
      std::string_view digest, const FigureTiming& asked);
  // Export's steps: the partition's measurements (or, with `iron`, its
  // IRON figures), then the platform's verdicts. REQUIRES: inside Export's
  // read transaction.
  absl::Status ExportFigures(std::ostream& out, int64_t partition, bool iron);
  absl::Status ExportVerdicts(std::ostream& out);

  // Declared before the statements, so they are finalized first.
  std::unique_ptr<sqlite::Db> owned_;  // null when the Cache owns db_
  sqlite::Db* db_;
  const std::string platform_;  // slug
  const PowerMode power_mode_;
  std::optional<int64_t> partition_id_;
  sqlite::Statement get_;  // a key's rows (kKeyRows in cache.cc)
  sqlite::Statement get_iron_;
  sqlite::Statement get_verdict_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

// The writer. See the file comment for partitions, durability and threads.
class Cache {
 public:
  // Opens or creates the cache file at `path` (its directory must exist),
  // migrates it to this build's schema and binds the partition of
  // `platform_name` (slugged) at `power_mode`. FailedPrecondition for a
  // file of a newer schema; DataLoss for a file that is not a database.
  static absl::StatusOr<std::unique_ptr<Cache>> Open(
      const std::string& path, std::string_view platform_name,
      PowerMode power_mode);
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // OK when `device_mode` is the partition's; else FailedPrecondition ("the
  // cache is for power mode X, not Y"): the caller must not time or look
  // up figures at another mode through this cache.
  absl::Status CheckPowerMode(PowerMode device_mode) const;

  // As CacheReader::Get; counted in Stats().hits/misses.
  absl::StatusOr<std::optional<v1::Measurement>> Get(
      const CacheKey& key, const FigureTiming& asked = {}) {
    return reads_.Get(key, asked);
  }
  absl::StatusOr<std::optional<v1::Measurement>> Get(
      std::string_view digest, const FigureTiming& asked = {}) {
    return reads_.Get(digest, asked);
  }
  absl::StatusOr<std::vector<std::optional<v1::Measurement>>> GetMany(
      absl::Span<const std::string> digests, const FigureTiming& asked = {}) {
    return reads_.GetMany(digests, asked);
  }
  absl::StatusOr<std::vector<CacheEntry>> Figures(std::string_view digest) {
    return reads_.Figures(digest);
  }

  // Stores `m` under the key as its figure at `timing`, replacing only an
  // earlier figure of the same key and Timing (whose history it carries
  // on: FigureHistory), atomically. Figures of the key at other Timings
  // stay. `timing` {0, 0} stores a figure of unknown Timing, ranked last
  // (for figures whose Timing is not known; Measure always gives one).
  // m.power_mode may be empty (the partition's is filled in); another mode
  // is InvalidArgument, as are a malformed digest and a Timing with one
  // part 0.
  absl::Status Put(const CacheKey& key, const v1::Measurement& m,
                   const FigureTiming& timing = {});
  absl::Status Put(std::string_view digest, const v1::Measurement& m,
                   const FigureTiming& timing = {});
  // Stores every entry (each at its own timing) in one transaction: all of
  // them or, on any error, none.
  absl::Status PutMany(absl::Span<const CacheEntry> entries);

  // How far repeated figures spread in this partition (RepeatSpread), kept
  // up to date as figures are stored; read from the rows once after Open
  // and after any write but Put and PutMany.
  absl::StatusOr<RepeatSpread> Spread();

  // As CacheReader's. Verdicts found are kept in memory (at most
  // kVerdictMemoSize; the file has no other writer), so asking again reads
  // no row; PutVerdict forgets its key, Import, DropImport and Clear all.
  absl::StatusOr<std::optional<std::string>> GetVerdict(const VerdictKey& key);
  absl::StatusOr<std::vector<std::optional<std::string>>> GetVerdicts(
      absl::Span<const VerdictKey> keys);
  // Stores the builder's verdict on a recipe in an environment.
  absl::Status PutVerdict(const VerdictKey& key, std::string_view verdict);
  static constexpr size_t kVerdictMemoSize = size_t{1} << 17;

  // Copies the write-ahead log into the database file and empties it
  // (wal_checkpoint(TRUNCATE)). SQLite checkpoints by itself as the log
  // grows, but pages still in the log are read through it rather than
  // mapped; irontuned calls this when idle (after a job). Unavailable when
  // a reader keeps it from finishing (retry later; nothing is lost).
  absl::Status Checkpoint();

  // Imports IRON's JSON cost cache for this partition: the files
  // `<root>/<platform slug>/<power mode>/<key>.json`, root being IRON's
  // `$NPU_CACHE_HOME/iron/costs`. A file is skipped (and logged) unless its
  // name is a 32-hex-digit key, it holds exactly IRON's Measurement fields
  // (as IRON's own reader requires) and its pmode is the partition's.
  // Imported figures go to their own table under IRON's key, replacing an
  // earlier import of the same key: IRON computes its keys from a Python
  // repr of its own design hashes, which irontune cannot reproduce, so
  // they are never Get hits. They are kept for inspection (GetIronCost),
  // Stats and Export. One transaction. NotFound when the partition's
  // directory does not exist.
  absl::StatusOr<ImportCounts> ImportIronCosts(
      const std::filesystem::path& root);

  // As CacheReader.
  absl::StatusOr<std::optional<v1::Measurement>> GetIronCost(
      std::string_view iron_key) {
    return reads_.GetIronCost(iron_key);
  }
  absl::StatusOr<CacheStats> Stats() { return reads_.Stats(); }
  absl::Status Export(std::ostream& out) { return reads_.Export(out); }
  absl::StatusOr<CacheCheck> Check() { return reads_.Check(); }

  // Imports lines written by Export, in one transaction: on any malformed
  // line (InvalidArgument, naming it) or a line of another platform or power
  // mode (FailedPrecondition) nothing is imported. A line without "timing"
  // (an export from before schema version 4) is a figure of unknown
  // Timing. Rows already present (same key and Timing) are kept, not
  // replaced: this box's own figures win over imported ones (such a line
  // is listed in `skipped`); a figure at another Timing is added beside
  // them, and lookups rank it as any other. Blank lines are ignored. The
  // import is recorded with `origin` (ListImports) in the same
  // transaction, and the rows it adds carry its id. A line of kind
  // "iron_file" carries one of IRON's cost files (ImportIronFile): its bad
  // records are skipped and listed, not refused.
  absl::StatusOr<ImportCounts> Import(std::istream& in,
                                      const ImportOrigin& origin = {});
  absl::StatusOr<std::vector<v1::ImportRecord>> ListImports();
  // Deletes the rows import `id` added (rows measured here since, under the
  // same key, replaced them and stay) and marks it dropped, in one
  // transaction; returns how many rows went. NotFound for an unknown id,
  // FailedPrecondition for one dropped already.
  absl::StatusOr<int64_t> DropImport(int64_t id);

  // Deletes every measurement, IRON figure and verdict row of the file (all
  // partitions, measured here or imported) in one transaction, and marks
  // each import not yet dropped as dropped; the schema, the partitions and
  // the import records stay. Returns how many rows of each kind went. On
  // error nothing is deleted.
  absl::StatusOr<ClearCounts> Clear();

  // The outbox (docs/fleet.md, cache_outbox.h): from this call on, each
  // figure and verdict this Cache stores (Put, PutMany, PutVerdict; never
  // an Import's rows) is also noted in the file's outbox, until the
  // returned CacheOutbox (its own connection to the file, for the thread
  // that publishes) says the fleet store has it.
  absl::StatusOr<std::unique_ptr<CacheOutbox>> KeepOutbox();
  // Stores the figures and verdicts the fleet store has from other boxes
  // where this file has none (a row present, of the same key and Timing,
  // is kept; a figure at another Timing is added beside it, so a pulled
  // figure never replaces a local one and lookups still take the most
  // precise), in one transaction,
  // as rows of one import recorded with `origin` on the first call
  // (ListImports shows it, DropImport removes what came from the fleet);
  // so they are never noted in the outbox. A figure that fails Put's checks
  // is skipped. Returns the rows added.
  absl::StatusOr<int64_t> MergeFromFleet(
      absl::Span<const CacheEntry> figures, const ImportOrigin& origin,
      absl::Span<const VerdictRow> verdicts = {});

  const std::string& platform() const { return reads_.platform(); }
  PowerMode power_mode() const { return reads_.power_mode(); }

  // A value that changes whenever this Cache writes (Put, PutMany,
  // PutVerdict, Import, ImportIronCosts, DropImport, Clear; also a write
  // that fails), unique across every Cache of the process: what was worked
  // out from the cache's contents while generation() returned G still
  // holds while it returns G (the file has no other writer). Any thread.
  uint64_t generation() const {
    return generation_.load(std::memory_order_acquire);
  }

 private:
  Cache(std::unique_ptr<sqlite::Db> db, int64_t partition_id,
        std::string platform, PowerMode power_mode);
  // InvalidArgument unless `digest` is a key digest, `m` is of the
  // partition's power mode (or of none) and `timing` is known or {0, 0}.
  absl::Status Validate(std::string_view digest, const v1::Measurement& m,
                        const FigureTiming& timing = {}) const;
  // The row inserts, prepared with one conflict clause.
  struct Inserts {
    sqlite::Statement measurement;
    sqlite::Statement iron;
    sqlite::Statement verdict;
  };
  // Prepares the inserts on `db`. `on_conflict` is "REPLACE" (Put: the
  // newest figure wins) or "IGNORE" (Import: the rows present win).
  static absl::StatusOr<Inserts> PrepareInserts(sqlite::Db& db,
                                                std::string_view on_conflict);
  // Binds and runs `stmt` (a measurement insert) for one entry, filling in
  // an empty power mode. REQUIRES: Validate passed.
  absl::Status Insert(sqlite::Statement& stmt, std::string_view digest,
                      int64_t row_schema, const v1::Measurement& m,
                      const FigureTiming& timing, const FigureHistory& history);
  // Put's step: `m` stored at `timing`, its row's history carried on;
  // returns the history before and after. REQUIRES: Validate passed,
  // inside a transaction.
  absl::StatusOr<std::pair<FigureHistory, FigureHistory>> Store(
      std::string_view digest, const v1::Measurement& m,
      const FigureTiming& timing);
  // Binds and runs `stmt` (an IRON figure insert) for `m` as it is.
  absl::Status InsertIron(sqlite::Statement& stmt, std::string_view iron_key,
                          const v1::Measurement& m);
  // Binds and runs `stmt` (a verdict insert) for the platform.
  absl::Status InsertVerdict(sqlite::Statement& stmt, const VerdictKey& key,
                             int64_t row_schema, std::string_view verdict);
  // Import's steps for one line: checks it (the platform first, then the
  // fields of its kind) and inserts it with `add`; on a bad line its error,
  // and nothing inserted.
  absl::Status ImportOne(Inserts& add, const ImportLine& line);
  absl::Status ImportVerdict(Inserts& add, const ImportLine& line);
  // A "measurement" line or, with `iron`, an "iron_cost" one.
  absl::Status ImportFigure(Inserts& add, const ImportLine& line, bool iron);
  // An "iron_file" line ({"kind": "iron_file", "path": .., "text": ..}):
  // one of IRON's cost files (iron_costs.h), its figures inserted and what
  // it holds that irontune does not keep listed in `counts.skipped`.
  absl::Status ImportIronFile(Inserts& add, const ImportLine& line,
                              ImportCounts& counts);

  // Import's steps: its record, before any row.
  absl::StatusOr<int64_t> RecordImport(const ImportOrigin& origin);

  // Declared before the statements, so they are finalized first.
  std::unique_ptr<sqlite::Db> db_;
  const int64_t partition_id_;
  // While Import runs: its id, which the inserts write into import_id.
  std::optional<int64_t> import_id_;
  // MergeFromFleet's import record, once made.
  std::optional<int64_t> fleet_import_;
  CacheReader reads_;          // over db_
  Inserts put_;                // INSERT OR REPLACE
  sqlite::Statement history_;  // a row's FigureHistory
  // Spread() as of the last write; nullopt: to be read from the rows.
  std::optional<RepeatSpread> spread_;
  // Verdicts found or stored, by VerdictMemoKey.
  absl::flat_hash_map<std::string, std::string> verdict_memo_;
  void KeepVerdict(const VerdictKey& key, std::string verdict);
  // Moves generation() on, to a value no Cache of the process had before.
  void Changed();
  std::atomic<uint64_t> generation_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_STORE_CACHE_H_
