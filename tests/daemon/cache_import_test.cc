// The origin of imported rows: Cache::Import's record, ListImports,
// DropImport, and the schema step that adds them to an older file.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>

#include "daemon/store/cache.h"
#include "daemon/store/cache_key.h"
#include "daemon/store/cache_schema.h"
#include "daemon/store/sqlite.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("irontune_cache_import_test_" + std::to_string(getpid()) + "_" +
             std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const {
    return (path_ / name).string();
  }

 private:
  fs::path path_;
};

v1::Measurement Figure(double t) {
  v1::Measurement m;
  m.set_t_step_us(t);
  m.add_round_us(t);
  m.add_default_round_us(2 * t);
  m.set_run("0123456789abcdef0123456789abcdef");
  m.set_power_mode("default");
  m.set_calls(5);
  m.set_measured("2026-11-30");
  return m;
}

std::string Digest(int i) {
  CacheKey key;
  key.recipe_hash = InputDigest("recipe");
  key.artifact_hash = InputDigest("artifact");
  key.values = {{"i", i}};
  key.packaging = v1::PACKAGING_FULL_ELF;
  key.repeats = 9;
  return key.Digest();
}

std::unique_ptr<Cache> Open(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Cache>> cache =
      Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  INFO(cache.status().ToString());
  REQUIRE(cache.ok());
  return *std::move(cache);
}

// An export of figures 100..100+n-1 and one verdict, from a cache of its own.
std::string ForeignExport(const ScratchDir& dir, int n) {
  auto other = Open(dir.File("other.db"));
  for (int i = 0; i < n; ++i) {
    REQUIRE(other->Put(Digest(100 + i), Figure(1000 + i)).ok());
  }
  REQUIRE(other->PutVerdict({"forged", "env"}, "fits").ok());
  std::ostringstream out;
  REQUIRE(other->Export(out).ok());
  return out.str();
}

TEST_CASE("An import is recorded with its origin and can be dropped",
          "[cache]") {
  ScratchDir dir;
  auto cache = Open(dir.File("cache.db"));
  REQUIRE(cache->Put(Digest(1), Figure(10)).ok());  // measured here
  std::istringstream in(ForeignExport(dir, 3));
  absl::StatusOr<ImportCounts> counts =
      cache->Import(in, {"ops", "ipv4:127.0.0.1:4000", "forged.jsonl"});
  REQUIRE(counts.ok());
  CHECK(counts->imported == 4);
  CHECK(counts->import_id > 0);
  REQUIRE(cache->Get(Digest(100))->has_value());

  absl::StatusOr<std::vector<v1::ImportRecord>> imports = cache->ListImports();
  REQUIRE(imports.ok());
  REQUIRE(imports->size() == 1);
  const v1::ImportRecord r = imports->front();
  CHECK(static_cast<int64_t>(r.id()) == counts->import_id);
  CHECK(r.imported_by() == "ops");
  CHECK(r.peer() == "ipv4:127.0.0.1:4000");
  CHECK(r.source() == "forged.jsonl");
  CHECK(r.lines() == 4);
  CHECK(r.rows() == 4);
  CHECK(r.imported_unix_ms() > 0);
  CHECK(r.dropped_unix_ms() == 0);

  absl::StatusOr<int64_t> dropped =
      cache->DropImport(static_cast<int64_t>(r.id()));
  REQUIRE(dropped.ok());
  CHECK(*dropped == 4);
  for (int i = 0; i < 3; ++i)
    CHECK_FALSE(cache->Get(Digest(100 + i))->has_value());
  CHECK_FALSE(cache->GetVerdict({"forged", "env"})->has_value());
  // What was measured here stays.
  CHECK(cache->Get(Digest(1))->has_value());
  imports = cache->ListImports();
  REQUIRE(imports->size() == 1);
  CHECK(imports->front().rows() == 0);
  CHECK(imports->front().dropped_unix_ms() > 0);

  CHECK(cache->DropImport(static_cast<int64_t>(r.id())).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(cache->DropImport(static_cast<int64_t>(r.id()) + 7).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("A row measured here replaces an imported one and outlives its drop",
          "[cache]") {
  ScratchDir dir;
  auto cache = Open(dir.File("cache.db"));
  std::istringstream in(ForeignExport(dir, 2));
  absl::StatusOr<ImportCounts> counts = cache->Import(in, {"a", "unix:", "f"});
  REQUIRE(counts.ok());
  REQUIRE(cache->Put(Digest(100), Figure(7)).ok());
  absl::StatusOr<int64_t> dropped = cache->DropImport(counts->import_id);
  REQUIRE(dropped.ok());
  CHECK(*dropped == 2);  // Digest(101) and the verdict
  absl::StatusOr<std::optional<v1::Measurement>> kept = cache->Get(Digest(100));
  REQUIRE(kept->has_value());
  CHECK((*kept)->t_step_us() == 7);
}

TEST_CASE("A failed import records nothing", "[cache]") {
  ScratchDir dir;
  auto cache = Open(dir.File("cache.db"));
  std::istringstream in(ForeignExport(dir, 2) + "{not json\n");
  CHECK_FALSE(cache->Import(in, {"a", "unix:", "bad.jsonl"}).ok());
  CHECK(cache->ListImports()->empty());
  CHECK(cache->Stats()->rows == 0);
}

TEST_CASE("A version 1 cache file is migrated and keeps its rows", "[cache]") {
  ScratchDir dir;
  const std::string path = dir.File("v1.db");
  const std::string blob = Figure(42).SerializeAsString();
  {
    absl::StatusOr<std::unique_ptr<sqlite::Db>> db =
        sqlite::Db::Open(path, sqlite::OpenMode::kReadWriteCreate);
    REQUIRE(db.ok());
    REQUIRE(MigrateSchema(**db, CacheMigrations().first(1)).ok());
    REQUIRE(*(*db)->QueryInt("PRAGMA user_version") == 1);
    REQUIRE((*db)
                ->Exec("INSERT INTO partitions(id, platform, power_mode) "
                       "VALUES (1, 'npu-strix', 'default')")
                .ok());
    absl::StatusOr<sqlite::Statement> insert = (*db)->Prepare(
        "INSERT INTO measurements(partition, key, row_schema, t_step_us, "
        "measured, written, measurement) VALUES (1, ?1, ?2, 42, 'x', 0, ?3)");
    REQUIRE(insert.ok());
    REQUIRE(insert->BindText(1, Digest(5)).ok());
    REQUIRE(insert->BindInt(2, kCacheRowSchema).ok());
    REQUIRE(insert->BindBlob(3, blob).ok());
    REQUIRE(insert->Run().ok());
  }
  auto cache = Open(path);
  absl::StatusOr<std::optional<v1::Measurement>> got = cache->Get(Digest(5));
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->t_step_us() == 42);
  CHECK(cache->ListImports()->empty());
  absl::StatusOr<std::unique_ptr<sqlite::Db>> raw =
      sqlite::Db::Open(path, sqlite::OpenMode::kReadWriteCreate);
  REQUIRE(raw.ok());
  CHECK(*(*raw)->QueryInt("PRAGMA user_version") == kCacheSchemaVersion);
  CHECK(*(*raw)->QueryInt(
            "SELECT count(*) FROM measurements WHERE import_id IS NULL") == 1);
}

TEST_CASE("Clear empties every row, keeps the schema and the import records",
          "[cache]") {
  ScratchDir dir;
  auto cache = Open(dir.File("cache.db"));
  REQUIRE(cache->Put(Digest(1), Figure(10)).ok());
  REQUIRE(cache->Put(Digest(2), Figure(11)).ok());
  REQUIRE(cache->PutVerdict({"here", "env"}, "fits").ok());
  std::istringstream in(ForeignExport(dir, 2));
  REQUIRE(cache->Import(in, {"ops", "unix:", "f.jsonl"}).ok());

  absl::StatusOr<ClearCounts> cleared = cache->Clear();
  REQUIRE(cleared.ok());
  CHECK(cleared->measurements == 4);  // two here, two imported
  CHECK(cleared->verdicts == 2);
  CHECK(cleared->iron_costs == 0);
  CHECK_FALSE(cache->Get(Digest(1))->has_value());
  CHECK_FALSE(cache->Get(Digest(100))->has_value());
  CHECK_FALSE(cache->GetVerdict({"here", "env"})->has_value());
  absl::StatusOr<CacheStats> stats = cache->Stats();
  REQUIRE(stats.ok());
  CHECK(stats->rows == 0);
  absl::StatusOr<std::vector<v1::ImportRecord>> imports = cache->ListImports();
  REQUIRE(imports.ok());
  REQUIRE(imports->size() == 1);
  CHECK(imports->front().dropped_unix_ms() > 0);

  // The schema stays: the cache takes rows again, also after reopening.
  REQUIRE(cache->Put(Digest(1), Figure(12)).ok());
  cache.reset();
  cache = Open(dir.File("cache.db"));
  REQUIRE(cache->Get(Digest(1))->has_value());
  CHECK(cache->Get(Digest(1))->value().t_step_us() == 12);
  // An empty cache clears to nothing.
  REQUIRE(cache->Clear().ok());
  cleared = cache->Clear();
  REQUIRE(cleared.ok());
  CHECK(cleared->measurements == 0);
}

}  // namespace
}  // namespace irontune
