#include "daemon/store/cache.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "daemon/store/cache_json.h"
#include "daemon/store/cache_key.h"
#include "daemon/store/cache_schema.h"
#include "daemon/store/sqlite.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed at scope end.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("irontune_cache_test_" + std::to_string(getpid()) + "_" +
             std::to_string(counter++) + "_" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string File(const std::string& name) const {
    return (path_ / name).string();
  }

 private:
  fs::path path_;
};

v1::Measurement MakeMeasurement(double t, const std::string& mode = "default") {
  v1::Measurement m;
  m.set_t_step_us(t);
  for (int i = 0; i < 8; ++i) m.add_round_us(t + 0.01 * i);
  for (int i = 0; i < 8; ++i) m.add_default_round_us(2 * t + 0.01 * i);
  m.set_output(InputDigest("output"));
  m.set_run("0123456789abcdef0123456789abcdef");
  m.set_power_mode(mode);
  m.set_calls(50);
  m.set_measured("2026-11-29");
  return m;
}

CacheKey BaseKey() {
  CacheKey key;
  key.recipe_hash = InputDigest("recipe");
  key.artifact_hash = InputDigest("artifact");
  key.values = {{"rows", 2048}, {"context", 512}};
  key.input_sha256 = {{"temperature", InputDigest("0.7")}};
  key.packaging = v1::PACKAGING_FULL_ELF;
  key.repeats = 9;
  key.distinct = true;
  return key;
}

std::unique_ptr<Cache> OpenCache(const std::string& path,
                                 PowerMode mode = PowerMode::kDefault,
                                 const std::string& platform = "NPU Strix") {
  absl::StatusOr<std::unique_ptr<Cache>> cache =
      Cache::Open(path, platform, mode);
  INFO(cache.status().ToString());
  REQUIRE(cache.ok());
  return *std::move(cache);
}

std::unique_ptr<sqlite::Db> RawDb(const std::string& path) {
  absl::StatusOr<std::unique_ptr<sqlite::Db>> db =
      sqlite::Db::Open(path, sqlite::OpenMode::kReadWriteCreate);
  REQUIRE(db.ok());
  REQUIRE((*db)->Exec("PRAGMA busy_timeout = 5000").ok());
  return *std::move(db);
}

bool Same(const v1::Measurement& a, const v1::Measurement& b) {
  return a.SerializeAsString() == b.SerializeAsString();
}

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("CacheKey digest is canonical and covers every part", "[cache]") {
  CacheKey base = BaseKey();
  std::string digest = base.Digest();
  CHECK(IsCacheKeyDigest(digest));
  CHECK(digest == BaseKey().Digest());

  CacheKey a = base, b = base;
  a.values = {{"ab", 1}};
  b.values = {{"a", 1}};
  CHECK(a.Digest() != b.Digest());
  // A name's bytes cannot pose as another part.
  a = base;
  b = base;
  a.recipe_hash = "x";
  a.artifact_hash = "yz";
  b.recipe_hash = "xy";
  b.artifact_hash = "z";
  CHECK(a.Digest() != b.Digest());
  a = base;
  b = base;
  a.values.clear();
  b.values.clear();
  a.input_sha256 = {{"v", "1"}};
  b.values = {{"v", 1}};
  CHECK(a.Digest() != b.Digest());
}

TEST_CASE("Cache hits what it stored and misses on any key part", "[cache]") {
  TempDir dir;
  auto cache = OpenCache(dir.File("cache.db"));
  CacheKey key = BaseKey();
  v1::Measurement m = MakeMeasurement(12.5);
  REQUIRE(cache->Put(key, m).ok());

  auto got = cache->Get(key);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK(Same(**got, m));

  std::vector<std::pair<std::string, CacheKey>> variants;
  auto vary = [&](std::string what, auto change) {
    CacheKey k = BaseKey();
    change(k);
    variants.emplace_back(std::move(what), std::move(k));
  };
  vary("recipe", [](CacheKey& k) { k.recipe_hash = InputDigest("recipe2"); });
  vary("artifact",
       [](CacheKey& k) { k.artifact_hash = InputDigest("artifact2"); });
  vary("a value", [](CacheKey& k) { k.values["rows"] = 2049; });
  vary("a value more", [](CacheKey& k) { k.values["extra"] = 0; });
  vary("a value less", [](CacheKey& k) { k.values.erase("context"); });
  vary("an input",
       [](CacheKey& k) { k.input_sha256["temperature"] = InputDigest("0.8"); });
  vary("an input more",
       [](CacheKey& k) { k.input_sha256["top_k"] = InputDigest("40"); });
  vary("packaging",
       [](CacheKey& k) { k.packaging = v1::PACKAGING_XCLBIN_CHAIN; });
  vary("repeats", [](CacheKey& k) { k.repeats = 5; });
  vary("distinct", [](CacheKey& k) { k.distinct = false; });
  for (const auto& [what, variant] : variants) {
    INFO(what);
    CHECK(variant.Digest() != key.Digest());
    auto miss = cache->Get(variant);
    REQUIRE(miss.ok());
    CHECK_FALSE(miss->has_value());
  }

  auto stats = cache->Stats();
  REQUIRE(stats.ok());
  CHECK(stats->rows == 1);
  CHECK(stats->hits == 1);
  CHECK(stats->misses == static_cast<int64_t>(variants.size()));
  CHECK(stats->database_bytes > 0);

  // GetMany answers each key in order.
  std::vector<std::string> digests = {variants[0].second.Digest(),
                                      key.Digest()};
  auto many = cache->GetMany(digests);
  REQUIRE(many.ok());
  REQUIRE(many->size() == 2);
  CHECK_FALSE((*many)[0].has_value());
  REQUIRE((*many)[1].has_value());
  CHECK(Same(*(*many)[1], m));
  CHECK(cache->GetMany(std::vector<std::string>{"bad"}).status().code() ==
        absl::StatusCode::kInvalidArgument);

  // Replacing keeps one row, with the new figure.
  REQUIRE(cache->Put(key, MakeMeasurement(11.0)).ok());
  got = cache->Get(key);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->t_step_us() == 11.0);
  CHECK(cache->Stats()->rows == 1);
}

TEST_CASE("Cache survives reopening and checkpoints", "[cache]") {
  TempDir dir;
  const std::string path = dir.File("cache.db");
  {
    auto cache = OpenCache(path);
    REQUIRE(cache->Put(BaseKey(), MakeMeasurement(3.0)).ok());
    REQUIRE(cache->Checkpoint().ok());
    CHECK(fs::file_size(path + "-wal") == 0);
  }
  auto cache = OpenCache(path);
  auto got = cache->Get(BaseKey());
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->t_step_us() == 3.0);
}

TEST_CASE("Cache rejects malformed keys and measurements", "[cache]") {
  TempDir dir;
  auto cache = OpenCache(dir.File("cache.db"));
  CHECK(cache->Get("xyz").status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(cache->Put("ABCDEF0123456789ABCDEF0123456789", MakeMeasurement(1))
            .code() == absl::StatusCode::kInvalidArgument);
  // An empty power mode takes the partition's.
  v1::Measurement m = MakeMeasurement(1);
  m.clear_power_mode();
  REQUIRE(cache->Put(BaseKey(), m).ok());
  CHECK((*cache->Get(BaseKey()))->power_mode() == "default");
  // A batch with one bad entry writes none.
  CacheKey other = BaseKey();
  other.recipe_hash = "a";
  std::vector<CacheEntry> batch = {{other.Digest(), MakeMeasurement(1)},
                                   {"bad", MakeMeasurement(2)}};
  CHECK(cache->PutMany(batch).code() == absl::StatusCode::kInvalidArgument);
  CHECK(cache->Stats()->rows == 1);
}

TEST_CASE("Cache is bound to one power mode", "[cache]") {
  TempDir dir;
  const std::string path = dir.File("cache.db");
  auto cache = OpenCache(path, PowerMode::kDefault);
  CHECK(cache->CheckPowerMode(PowerMode::kDefault).ok());
  absl::Status refused = cache->CheckPowerMode(PowerMode::kTurbo);
  CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(refused.message() == "the cache is for power mode default, not turbo");

  // A figure of another mode does not go in.
  CHECK(cache->Put(BaseKey(), MakeMeasurement(1, "turbo")).code() ==
        absl::StatusCode::kInvalidArgument);
  // Casing as xrt-smi prints it is the same mode.
  REQUIRE(cache->Put(BaseKey(), MakeMeasurement(1, "Default")).ok());

  // The other mode's partition of the same file does not see it.
  auto turbo = OpenCache(path, PowerMode::kTurbo);
  auto miss = turbo->Get(BaseKey());
  REQUIRE(miss.ok());
  CHECK_FALSE(miss->has_value());
  // Nor does another platform's.
  auto phoenix = OpenCache(path, PowerMode::kDefault, "NPU Phoenix");
  CHECK_FALSE(phoenix->Get(BaseKey())->has_value());
  CHECK(cache->Get(BaseKey())->has_value());
}

TEST_CASE("A row of another row schema is a miss", "[cache]") {
  TempDir dir;
  const std::string path = dir.File("cache.db");
  auto cache = OpenCache(path);
  REQUIRE(cache->Put(BaseKey(), MakeMeasurement(1)).ok());
  REQUIRE(cache->PutVerdict({"r", "env"}, "fits").ok());
  {
    auto db = RawDb(path);
    REQUIRE(db->Exec(absl::StrCat("UPDATE measurements SET row_schema = ",
                                  kCacheRowSchema + 1))
                .ok());
    REQUIRE(db->Exec("UPDATE verdicts SET row_schema = 0").ok());
  }
  auto got = cache->Get(BaseKey());
  REQUIRE(got.ok());
  CHECK_FALSE(got->has_value());
  CHECK_FALSE(cache->GetVerdict({"r", "env"})->has_value());
  auto stats = cache->Stats();
  CHECK(stats->rows == 1);
  CHECK(stats->stale_rows == 1);
  CHECK(stats->misses == 1);
  // A new Put replaces the stale row.
  REQUIRE(cache->Put(BaseKey(), MakeMeasurement(2)).ok());
  CHECK(cache->Get(BaseKey())->has_value());
}

TEST_CASE("A corrupt stored measurement is a miss, not a crash", "[cache]") {
  TempDir dir;
  const std::string path = dir.File("cache.db");
  auto cache = OpenCache(path);
  REQUIRE(cache->Put(BaseKey(), MakeMeasurement(1)).ok());
  {
    auto db = RawDb(path);
    // A field tag with no value: not a valid message.
    REQUIRE(db->Exec("UPDATE measurements SET measurement = x'0aff'").ok());
  }
  auto got = cache->Get(BaseKey());
  REQUIRE(got.ok());
  CHECK_FALSE(got->has_value());
  auto check = cache->Check();
  REQUIRE(check.ok());
  CHECK(check->integrity == "ok");
  CHECK(check->rows == 1);
  CHECK(check->undecodable == 1);
  std::ostringstream out;
  REQUIRE(cache->Export(out).ok());
  CHECK(out.str().empty());
}

TEST_CASE("Schema versions: fresh, migrated, and refused", "[cache]") {
  TempDir dir;
  const std::string path = dir.File("cache.db");

  SECTION("a new file is at this build's version") {
    OpenCache(path);
    CHECK(*RawDb(path)->QueryInt("PRAGMA user_version") == kCacheSchemaVersion);
    CHECK(*RawDb(path)->QueryText("PRAGMA journal_mode") == "wal");
  }

  SECTION("migrations step forward from the file's version") {
    OpenCache(path);  // version 1
    std::vector<Migration> steps(CacheMigrations().begin(),
                                 CacheMigrations().end());
    const int next = kCacheSchemaVersion + 1;
    steps.push_back({next, "a note column", [](sqlite::Db& db) {
                       return db.Exec(
                           "ALTER TABLE measurements ADD COLUMN note TEXT");
                     }});
    auto db = RawDb(path);
    REQUIRE(MigrateSchema(*db, steps).ok());
    CHECK(*db->QueryInt("PRAGMA user_version") == next);
    CHECK(db->Exec("SELECT note FROM measurements").ok());
    // Once there, a second run changes nothing.
    REQUIRE(MigrateSchema(*db, steps).ok());
    CHECK(*db->QueryInt("PRAGMA user_version") == next);
  }

  SECTION("a failed migration changes nothing") {
    OpenCache(path);
    std::vector<Migration> steps(CacheMigrations().begin(),
                                 CacheMigrations().end());
    steps.push_back({kCacheSchemaVersion + 1, "half done", [](sqlite::Db& db) {
                       absl::Status s = db.Exec("CREATE TABLE half(x)");
                       if (!s.ok()) return s;
                       return absl::InternalError("step failed");
                     }});
    auto db = RawDb(path);
    absl::Status status = MigrateSchema(*db, steps);
    CHECK(status.code() == absl::StatusCode::kInternal);
    CHECK(std::string(status.message()).find("half done") != std::string::npos);
    CHECK(*db->QueryInt("PRAGMA user_version") == kCacheSchemaVersion);
    CHECK(*db->QueryInt("SELECT count(*) FROM sqlite_master "
                        "WHERE name = 'half'") == 0);
  }

  SECTION("a file of a newer schema is refused") {
    OpenCache(path)->Put(BaseKey(), MakeMeasurement(1)).IgnoreError();
    REQUIRE(RawDb(path)->Exec("PRAGMA user_version = 99").ok());
    auto cache = Cache::Open(path, "NPU Strix", PowerMode::kDefault);
    CHECK(cache.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(std::string(cache.status().message()).find("newer") !=
          std::string::npos);
    auto reader = CacheReader::Open(path, "NPU Strix", PowerMode::kDefault);
    CHECK(reader.status().code() == absl::StatusCode::kFailedPrecondition);
    // Untouched.
    CHECK(*RawDb(path)->QueryInt("PRAGMA user_version") == 99);
  }

  SECTION("a file that is not a database is refused") {
    WriteFile(path, std::string(4096, 'x'));
    auto cache = Cache::Open(path, "NPU Strix", PowerMode::kDefault);
    CHECK(cache.status().code() == absl::StatusCode::kDataLoss);
  }
}

TEST_CASE("Verdicts are kept per platform, recipe and environment", "[cache]") {
  TempDir dir;
  const std::string path = dir.File("cache.db");
  auto cache = OpenCache(path);
  VerdictKey key{InputDigest("recipe"), "iron 1.2; mlir-aie 0.9"};
  CHECK_FALSE(cache->GetVerdict(key)->has_value());
  REQUIRE(cache->PutVerdict(key, "fits").ok());
  CHECK(**cache->GetVerdict(key) == "fits");
  REQUIRE(cache->PutVerdict(key, "refused: L1: 72.0 KiB of 64 KiB").ok());
  CHECK(**cache->GetVerdict(key) == "refused: L1: 72.0 KiB of 64 KiB");
  CHECK_FALSE(cache->GetVerdict({key.recipe_hash, "iron 1.3"})->has_value());
  // Whatever the power mode, on this platform only.
  CHECK(OpenCache(path, PowerMode::kTurbo)->GetVerdict(key)->has_value());
  CHECK_FALSE(OpenCache(path, PowerMode::kDefault, "NPU Phoenix")
                  ->GetVerdict(key)
                  ->has_value());
  CHECK(cache->Stats()->verdicts == 1);
}

TEST_CASE("CacheReader reads beside the writer", "[cache]") {
  TempDir dir;
  const std::string path = dir.File("cache.db");
  auto cache = OpenCache(path);
  auto opened = CacheReader::Open(path, "NPU Strix", PowerMode::kDefault);
  REQUIRE(opened.ok());
  auto reader = *std::move(opened);
  CHECK_FALSE(reader->Get(BaseKey())->has_value());
  REQUIRE(cache->Put(BaseKey(), MakeMeasurement(4)).ok());
  CHECK((*reader->Get(BaseKey()))->t_step_us() == 4);

  // Concurrently: a thread reads while this one writes batches.
  std::atomic<bool> done{false};
  std::atomic<int> errors{0}, reads{0};
  std::thread reading([&] {
    while (!done) {
      auto got = reader->Get(BaseKey());
      if (!got.ok() || !got->has_value()) ++errors;
      if (!reader->Stats().ok()) ++errors;
      ++reads;
    }
  });
  for (int batch = 0; batch < 20; ++batch) {
    std::vector<CacheEntry> entries;
    for (int i = 0; i < 100; ++i) {
      CacheKey k = BaseKey();
      k.values["i"] = batch * 100 + i;
      entries.push_back({k.Digest(), MakeMeasurement(i)});
    }
    REQUIRE(cache->PutMany(entries).ok());
  }
  done = true;
  reading.join();
  CHECK(errors == 0);
  CHECK(reads > 0);
  CHECK(reader->Stats()->rows == 2001);

  CHECK(
      CacheReader::Open(dir.File("absent.db"), "NPU Strix", PowerMode::kDefault)
          .status()
          .code() == absl::StatusCode::kFailedPrecondition);
}

namespace {

// What the crash test's writer stores for row i, so every row can be checked
// complete.
v1::Measurement CrashRow(int64_t i) {
  v1::Measurement m = MakeMeasurement(static_cast<double>(i));
  m.set_run("row-" + std::to_string(i));
  m.set_output(InputDigest(std::to_string(i)));
  return m;
}

std::string CrashKey(int64_t i) {
  CacheKey k;
  k.recipe_hash = std::to_string(i);
  return k.Digest();
}

// The child: writes batches forever from row `first`; signals after its
// first commit. Never returns.
[[noreturn]] void CrashWriter(const std::string& path, int64_t first,
                              int ready_fd) {
  auto cache = Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  if (!cache.ok()) _exit(2);
  bool signalled = false;
  for (int64_t i = first;; i += 50) {
    std::vector<CacheEntry> batch;
    for (int64_t j = i; j < i + 50; ++j) {
      batch.push_back({CrashKey(j), CrashRow(j)});
    }
    if (!(*cache)->PutMany(batch).ok()) _exit(3);
    if (!(*cache)->Put(CrashKey(i), CrashRow(i)).ok()) _exit(4);
    if (!signalled) {
      char byte = 1;
      if (write(ready_fd, &byte, 1) != 1) _exit(5);
      signalled = true;
    }
  }
}

}  // namespace

TEST_CASE("A writer killed mid-write leaves whole rows only", "[cache]") {
  TempDir dir;
  const std::string path = dir.File("cache.db");
  OpenCache(path);  // created before the children race to create it
  std::mt19937 rng(42);
  int64_t rows_before = 0;
  for (int round = 0; round < 4; ++round) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      CrashWriter(path, round * 1'000'000, fds[1]);
    }
    close(fds[1]);
    char byte = 0;
    REQUIRE(read(fds[0], &byte, 1) == 1);
    close(fds[0]);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 80));
    REQUIRE(kill(pid, SIGKILL) == 0);
    int wstatus = 0;
    REQUIRE(waitpid(pid, &wstatus, 0) == pid);
    REQUIRE(WIFSIGNALED(wstatus));

    auto cache = OpenCache(path);
    auto check = cache->Check();
    REQUIRE(check.ok());
    CHECK(check->integrity == "ok");
    CHECK(check->undecodable == 0);
    CHECK(check->rows > rows_before);
    CHECK(check->rows % 50 == 0);  // batches land whole or not at all
    rows_before = check->rows;

    // Every row is exactly what was written under its key.
    auto db = RawDb(path);
    auto stmt = db->Prepare("SELECT key, measurement FROM measurements");
    REQUIRE(stmt.ok());
    int64_t bad = 0;
    while (*stmt->Step()) {
      v1::Measurement m;
      std::string_view blob = stmt->ColumnBlob(1);
      if (!m.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
        ++bad;
        continue;
      }
      int64_t i = std::stoll(m.run().substr(4));
      if (CrashKey(i) != stmt->ColumnText(0) || !Same(m, CrashRow(i))) ++bad;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("IRON's JSON cost cache imports beside our figures", "[cache]") {
  TempDir dir;
  auto cache = OpenCache(dir.File("cache.db"));
  const fs::path root = dir.path() / "costs";
  const fs::path here = root / "npu-strix" / "default";
  const std::string good_key = "0123456789abcdef0123456789abcdef";
  const std::string good =
      R"({"t_step_us": 12.5, "round_us": [12.4, 12.5, 12.6], )"
      R"("output": "ab12", "run": "c0ffee", "pmode": "Default", )"
      R"("calls": 50, "default_round_us": [], "measured": "2025-01-02"})";
  WriteFile(here / (good_key + ".json"), good);
  // A second good one, of the default timed beside another.
  WriteFile(here / "fedcba9876543210fedcba9876543210.json",
            R"({"t_step_us": 8, "round_us": [8], "output": "", "run": "r",)"
            R"( "pmode": "default", "calls": 1, "default_round_us": [9],)"
            R"( "measured": "2025-01-03"})");
  // Skipped: an extra field, as IRON's get() skips it.
  WriteFile(here / "11111111111111111111111111111111.json",
            R"({"t_step_us": 1, "round_us": [1], "output": "", "run": "r",)"
            R"( "pmode": "default", "calls": 1, "default_round_us": [],)"
            R"( "measured": "2025-01-03", "noise_us": 0.1})");
  // Skipped: malformed JSON.
  WriteFile(here / "22222222222222222222222222222222.json", "{\"t_step_us\": ");
  // Skipped: a missing field.
  WriteFile(here / "33333333333333333333333333333333.json",
            R"({"t_step_us": 1, "round_us": [1]})");
  // Skipped: wrong types.
  WriteFile(here / "44444444444444444444444444444444.json",
            R"({"t_step_us": "1", "round_us": [1], "output": "", "run": "r",)"
            R"( "pmode": "default", "calls": 1, "default_round_us": [],)"
            R"( "measured": "2025-01-03"})");
  // Skipped: another mode's figure in this directory.
  WriteFile(here / "55555555555555555555555555555555.json",
            R"({"t_step_us": 1, "round_us": [1], "output": "", "run": "r",)"
            R"( "pmode": "turbo", "calls": 1, "default_round_us": [],)"
            R"( "measured": "2025-01-03"})");
  // Skipped: not a key, and a partial write.
  WriteFile(here / "notes.json", good);
  WriteFile(here / (good_key + ".4242"), good);
  // Not read at all: another mode's and another platform's directories.
  WriteFile(root / "npu-strix" / "turbo" / (good_key + ".json"), good);
  WriteFile(root / "npu-phoenix" / "default" / (good_key + ".json"), good);

  auto counts = cache->ImportIronCosts(root);
  REQUIRE(counts.ok());
  CHECK(counts->imported == 2);
  CHECK(counts->skipped.size() == 7);

  auto got = cache->GetIronCost(good_key);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->t_step_us() == 12.5);
  CHECK((*got)->round_us_size() == 3);
  CHECK((*got)->output() == "ab12");
  CHECK((*got)->run() == "c0ffee");
  CHECK((*got)->power_mode() == "default");
  CHECK((*got)->calls() == 50);
  CHECK((*got)->measured() == "2025-01-02");
  CHECK((*cache->GetIronCost("fedcba9876543210fedcba9876543210"))
            ->default_round_us(0) == 9);
  CHECK_FALSE(
      cache->GetIronCost("11111111111111111111111111111111")->has_value());
  // Not a figure under our keys.
  CHECK_FALSE(cache->Get(good_key)->has_value());
  CHECK(cache->Stats()->iron_rows == 2);
  CHECK(cache->Stats()->rows == 0);

  // Importing again replaces, not duplicates.
  REQUIRE(cache->ImportIronCosts(root).ok());
  CHECK(cache->Stats()->iron_rows == 2);

  CHECK(cache->ImportIronCosts(dir.path() / "nowhere").status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("ParseIronCost takes exactly IRON's fields", "[cache]") {
  CHECK(ParseIronCost("[]").status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(ParseIronCost("").status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK_FALSE(ParseIronCost(R"({"t_step_us": 1, "round_us": [1], "output": "",)"
                            R"( "run": "r", "pmode": "default", "calls": -1,)"
                            R"( "default_round_us": [], "measured": ""})")
                  .ok());
  CHECK(ParseIronCost(R"({"t_step_us": 1, "round_us": [1], "output": "",)"
                      R"( "run": "r", "pmode": "default", "calls": 3,)"
                      R"( "default_round_us": [2], "measured": ""})")
            .ok());
}

TEST_CASE("Export and Import round-trip a partition", "[cache]") {
  TempDir dir;
  auto from = OpenCache(dir.File("from.db"));
  std::vector<CacheEntry> entries;
  for (int i = 0; i < 20; ++i) {
    CacheKey k = BaseKey();
    k.values["i"] = i;
    entries.push_back({k.Digest(), MakeMeasurement(i + 0.125)});
  }
  REQUIRE(from->PutMany(entries).ok());
  REQUIRE(from->PutVerdict({"r1", "env"}, "fits").ok());
  REQUIRE(from->PutVerdict({"r2", "env"}, "refused: \"too big\"\n").ok());
  WriteFile(dir.path() / "costs" / "npu-strix" / "default" /
                "0123456789abcdef0123456789abcdef.json",
            R"({"t_step_us": 8, "round_us": [8], "output": "", "run": "r",)"
            R"( "pmode": "default", "calls": 1, "default_round_us": [9],)"
            R"( "measured": "2025-01-03"})");
  REQUIRE(from->ImportIronCosts(dir.path() / "costs").ok());
  // Another partition's rows stay out of this partition's export.
  REQUIRE(OpenCache(dir.File("from.db"), PowerMode::kTurbo)
              ->Put(BaseKey(), MakeMeasurement(1, "turbo"))
              .ok());

  std::ostringstream exported;
  REQUIRE(from->Export(exported).ok());
  const std::string text = exported.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 20 + 1 + 2);

  auto to = OpenCache(dir.File("to.db"));
  std::istringstream in(text);
  auto counts = to->Import(in);
  INFO(counts.status().ToString());
  REQUIRE(counts.ok());
  CHECK(counts->imported == 23);
  CHECK(counts->skipped.empty());
  for (const CacheEntry& e : entries) {
    auto got = to->Get(e.key);
    REQUIRE(got->has_value());
    CHECK(Same(**got, e.measurement));
  }
  CHECK(**to->GetVerdict({"r2", "env"}) == "refused: \"too big\"\n");
  CHECK(to->GetIronCost("0123456789abcdef0123456789abcdef")->has_value());
  std::ostringstream again;
  REQUIRE(to->Export(again).ok());
  CHECK(again.str() == text);

  // A second import keeps what is there.
  std::istringstream in2(text);
  counts = to->Import(in2);
  REQUIRE(counts.ok());
  CHECK(counts->imported == 0);
  CHECK(counts->skipped.size() == 23);

  // Another power mode's export is refused whole.
  auto turbo = OpenCache(dir.File("turbo.db"), PowerMode::kTurbo);
  std::istringstream in3(text);
  CHECK(turbo->Import(in3).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(turbo->Stats()->rows == 0);
  CHECK(turbo->Stats()->verdicts == 0);

  // A malformed line is refused whole, naming the line.
  auto fresh = OpenCache(dir.File("fresh.db"));
  std::istringstream in4(text + "{\"kind\": \"measurement\"\n");
  auto bad = fresh->Import(in4);
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(bad.status().message()).find("line 24") !=
        std::string::npos);
  CHECK(fresh->Stats()->rows == 0);
  std::istringstream in5(
      R"({"kind":"measurement","platform":"npu-strix","power_mode":"default",)"
      R"("key":"0123456789abcdef0123456789abcdef","row_schema":1,)"
      R"("measurement":{"t_step_us":1,"bogus":2}})");
  CHECK(fresh->Import(in5).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Verdicts read are kept, and forgotten when the rows change",
          "[cache]") {
  TempDir dir;
  const std::string path = dir.File("cache.db");
  auto cache = OpenCache(path);
  const VerdictKey a{InputDigest("a"), "env"};
  const VerdictKey b{InputDigest("b"), "env"};
  REQUIRE(cache->PutVerdict(a, "fits").ok());
  REQUIRE(cache->PutVerdict(b, "refused: too big").ok());
  auto both = cache->GetVerdicts({a, b, {InputDigest("c"), "env"}});
  REQUIRE(both.ok());
  CHECK(*(*both)[0] == "fits");
  CHECK(*(*both)[1] == "refused: too big");
  CHECK_FALSE((*both)[2].has_value());
  // A verdict put again is read again.
  REQUIRE(cache->PutVerdict(a, "refused: L1").ok());
  CHECK(**cache->GetVerdict(a) == "refused: L1");
  // Clear forgets what was read: the rows are gone.
  REQUIRE(cache->Clear().ok());
  CHECK_FALSE(cache->GetVerdict(a)->has_value());
  CHECK_FALSE((*cache->GetVerdicts({b}))[0].has_value());
}

}  // namespace irontune
