// Figures kept per Timing (cache.h, "Figures per Timing"): which one a
// lookup takes, a file from before schema version 4, export and import,
// the fleet's merge and outbox, and the spread of repeats the rows keep.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "daemon/base/stats.h"
#include "daemon/store/cache.h"
#include "daemon/store/cache_key.h"
#include "daemon/store/cache_outbox.h"
#include "daemon/store/cache_schema.h"
#include "daemon/store/sqlite.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("irontune_cache_timing_test_" + std::to_string(getpid()) + "_" +
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

// A figure of step `t`, 8 rounds spread by `spread` around it, timed at
// `calls` a round.
v1::Measurement Figure(double t, uint32_t calls = 50, double spread = 0.01) {
  v1::Measurement m;
  m.set_t_step_us(t);
  for (int i = -4; i < 4; ++i) m.add_round_us(t + spread * i);
  m.set_run("0123456789abcdef0123456789abcdef");
  m.set_power_mode("default");
  m.set_calls(calls);
  m.set_measured("2026-12-04");
  return m;
}

std::string Digest(int i) {
  CacheKey key;
  key.recipe_hash = InputDigest("recipe");
  key.artifact_hash = InputDigest("artifact");
  key.values = {{"i", i}};
  key.packaging = v1::PACKAGING_FULL_ELF;
  return key.Digest();
}

std::unique_ptr<Cache> Open(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Cache>> cache =
      Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  INFO(cache.status().ToString());
  REQUIRE(cache.ok());
  return *std::move(cache);
}

std::unique_ptr<sqlite::Db> Raw(const std::string& path) {
  absl::StatusOr<std::unique_ptr<sqlite::Db>> db =
      sqlite::Db::Open(path, sqlite::OpenMode::kReadWriteCreate);
  REQUIRE(db.ok());
  return *std::move(db);
}

// The step time Get finds for `digest` asked at `asked`; -1 for none.
double Found(Cache& cache, const std::string& digest, FigureTiming asked) {
  absl::StatusOr<std::optional<v1::Measurement>> got = cache.Get(digest, asked);
  REQUIRE(got.ok());
  return got->has_value() ? (*got)->t_step_us() : -1;
}

// The Timings of `digest`'s figures, in the order lookups rank them.
std::vector<std::pair<uint32_t, uint32_t>> Timings(Cache& cache,
                                                   const std::string& digest) {
  absl::StatusOr<std::vector<CacheEntry>> all = cache.Figures(digest);
  REQUIRE(all.ok());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const CacheEntry& e : *all) {
    out.emplace_back(e.timing.rounds, e.timing.calls);
  }
  return out;
}

using Timed = std::vector<std::pair<uint32_t, uint32_t>>;

TEST_CASE("A figure at a shorter Timing is kept beside a more precise one",
          "[cache]") {
  ScratchDir dir;
  auto cache = Open(dir.File("c.db"));
  const std::string k = Digest(1);
  REQUIRE(cache->Put(k, Figure(100), {8, 50}).ok());
  REQUIRE(cache->Put(k, Figure(90, 3), {2, 3}).ok());
  CHECK(Timings(*cache, k) == Timed{{8, 50}, {2, 3}});
  // Asked at 8 x 50: only that figure is precise enough.
  CHECK(Found(*cache, k, {8, 50}) == 100);
  // Asked at 2 x 3: both cover it, the more precise is taken.
  CHECK(Found(*cache, k, {2, 3}) == 100);
  CHECK(Found(*cache, k, {}) == 100);
  // More rounds or calls than any figure has: a miss.
  CHECK(Found(*cache, k, {16, 50}) == -1);
  CHECK(Found(*cache, k, {8, 100}) == -1);
  // A figure covers only asks it is as precise as in both parts.
  REQUIRE(cache->Put(k, Figure(80, 10), {16, 10}).ok());
  CHECK(Found(*cache, k, {16, 10}) == 80);
  CHECK(Found(*cache, k, {8, 50}) == 100);
  CHECK(Found(*cache, k, {4, 10}) == 100);  // 400 calls over 160
  // The same Timing again: the newest replaces it, the others stay.
  REQUIRE(cache->Put(k, Figure(101), {8, 50}).ok());
  CHECK(Found(*cache, k, {8, 50}) == 101);
  CHECK(Timings(*cache, k) == Timed{{8, 50}, {16, 10}, {2, 3}});
  CHECK(cache->Stats()->rows == 3);
  // A Timing with one part 0 is no Timing.
  CHECK(cache->Put(k, Figure(1), {8, 0}).code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Figures of as many calls timed rank by the newest", "[cache]") {
  ScratchDir dir;
  const std::string path = dir.File("c.db");
  auto cache = Open(path);
  const std::string k = Digest(2);
  REQUIRE(cache->Put(k, Figure(100, 100), {4, 100}).ok());
  REQUIRE(cache->Put(k, Figure(200, 50), {8, 50}).ok());
  // Written in one second: the tie falls to the most rounds.
  CHECK(Found(*cache, k, {4, 50}) == 200);
  REQUIRE(Raw(path)
              ->Exec("UPDATE measurements SET written = written + 60 "
                     "WHERE rounds = 4")
              .ok());
  CHECK(Found(*cache, k, {4, 50}) == 100);
  CHECK(Timings(*cache, k) == Timed{{4, 100}, {8, 50}});
  // Each still the only one of its own Timing's asks.
  CHECK(Found(*cache, k, {8, 50}) == 200);
  CHECK(Found(*cache, k, {4, 100}) == 100);
}

// A file at schema version 3 holding one figure under Digest(5) (its
// measurement timed at 50 calls a round) and that figure in its outbox.
void WriteVersion3(const std::string& path) {
  auto db = Raw(path);
  REQUIRE(MigrateSchema(*db, CacheMigrations().first(3)).ok());
  REQUIRE(db->Exec("INSERT INTO partitions(id, platform, power_mode) "
                   "VALUES (1, 'npu-strix', 'default')")
              .ok());
  absl::StatusOr<sqlite::Statement> insert = db->Prepare(
      "INSERT INTO measurements(partition, key, row_schema, t_step_us, "
      "measured, written, measurement) VALUES (1, ?1, ?2, 42, 'x', 0, ?3)");
  REQUIRE(insert.ok());
  REQUIRE(insert->BindText(1, Digest(5)).ok());
  REQUIRE(insert->BindInt(2, kCacheRowSchema).ok());
  REQUIRE(insert->BindBlob(3, Figure(42).SerializeAsString()).ok());
  REQUIRE(insert->Run().ok());
  REQUIRE(db->Exec("INSERT INTO outbox_measurements(partition, key) VALUES "
                   "(1, '" +
                   Digest(5) + "')")
              .ok());
}

TEST_CASE("A version 3 file keeps its figures, their Timing unknown",
          "[cache]") {
  ScratchDir dir;
  const std::string path = dir.File("v3.db");
  WriteVersion3(path);
  auto cache = Open(path);
  CHECK(*Raw(path)->QueryInt("PRAGMA user_version") == kCacheSchemaVersion);
  const std::string k = Digest(5);
  CHECK(Timings(*cache, k) == Timed{{0, 0}});
  // Unknown rounds are not held against it; its 50 calls are known.
  CHECK(Found(*cache, k, {}) == 42);
  CHECK(Found(*cache, k, {8, 50}) == 42);
  CHECK(Found(*cache, k, {100, 50}) == 42);
  CHECK(Found(*cache, k, {8, 51}) == -1);
  // A figure of known Timing ranks above it wherever it covers the ask.
  REQUIRE(cache->Put(k, Figure(30, 3), {2, 3}).ok());
  CHECK(Found(*cache, k, {2, 3}) == 30);
  CHECK(Found(*cache, k, {8, 50}) == 42);
  REQUIRE(cache->Put(k, Figure(40), {8, 50}).ok());
  CHECK(Found(*cache, k, {8, 50}) == 40);
  CHECK(Timings(*cache, k) == Timed{{8, 50}, {2, 3}, {0, 0}});
  // The outbox entry followed the row, and still finds it.
  auto outbox = cache->KeepOutbox();
  REQUIRE(outbox.ok());
  auto pending = (*outbox)->Pending(10);
  REQUIRE(pending.ok());
  REQUIRE(pending->figures.size() == 1);
  CHECK(pending->figures[0].key == k);
  CHECK_FALSE(pending->figures[0].timing.known());
  CHECK(pending->figures[0].measurement.t_step_us() == 42);
}

TEST_CASE("An export carries each figure's Timing and imports as it was",
          "[cache]") {
  ScratchDir dir;
  const std::string from_path = dir.File("from.db");
  WriteVersion3(from_path);  // Digest(5), Timing unknown
  auto from = Open(from_path);
  REQUIRE(from->Put(Digest(1), Figure(100), {8, 50}).ok());
  REQUIRE(from->Put(Digest(1), Figure(90, 3), {2, 3}).ok());
  std::ostringstream out;
  REQUIRE(from->Export(out).ok());
  const std::string text = out.str();
  CHECK(text.find("\"timing\":{\"calls\":50,\"rounds\":8}") !=
        std::string::npos);

  auto to = Open(dir.File("to.db"));
  std::istringstream in(text);
  auto counts = to->Import(in);
  REQUIRE(counts.ok());
  CHECK(counts->imported == 3);
  for (int key : {1, 5}) {
    auto a = from->Figures(Digest(key));
    auto b = to->Figures(Digest(key));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->size() == b->size());
    for (size_t i = 0; i < a->size(); ++i) {
      CHECK((*a)[i].timing == (*b)[i].timing);
      CHECK((*a)[i].measurement.SerializeAsString() ==
            (*b)[i].measurement.SerializeAsString());
    }
  }
  // Again: every line's key and Timing is present, kept.
  std::istringstream again(text);
  counts = to->Import(again);
  REQUIRE(counts.ok());
  CHECK(counts->imported == 0);
  CHECK(counts->skipped.size() == 3);
}

TEST_CASE("An import line's Timing is checked, one without it is unknown",
          "[cache]") {
  ScratchDir dir;
  auto cache = Open(dir.File("c.db"));
  REQUIRE(cache->Put(Digest(1), Figure(100), {8, 50}).ok());
  std::ostringstream out;
  REQUIRE(cache->Export(out).ok());
  std::string line = out.str();
  line.pop_back();  // the newline
  // Fields are written in name order: the Timing is last.
  const std::string timing = ",\"timing\":{\"calls\":50,\"rounds\":8}";
  REQUIRE(line.find(timing) != std::string::npos);
  auto with = [&](const std::string& replacement) {
    std::string edited = line;
    edited.replace(edited.find(timing), timing.size(), replacement);
    return edited;
  };
  for (const std::string& bad :
       {std::string(",\"timing\":{\"rounds\":8}"),
        std::string(",\"timing\":{\"rounds\":8,\"calls\":-1}"),
        std::string(",\"timing\":{\"rounds\":8,\"calls\":0}"),
        std::string(",\"timing\":[8,50]")}) {
    auto other = Open(dir.File("bad.db"));
    std::istringstream in(with(bad));
    auto counts = other->Import(in);
    INFO(bad);
    CHECK(counts.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(counts.status().message()).find("line 1") !=
          std::string::npos);
  }
  // A line from before the cache kept Timings: a figure of unknown Timing,
  // added beside this box's own.
  std::istringstream old(with(""));
  auto counts = cache->Import(old);
  REQUIRE(counts.ok());
  CHECK(counts->imported == 1);
  CHECK(Timings(*cache, Digest(1)) == Timed{{8, 50}, {0, 0}});
}

TEST_CASE("A pulled figure never replaces a local one, and is ranked beside it",
          "[cache]") {
  ScratchDir dir;
  auto cache = Open(dir.File("c.db"));
  auto outbox = cache->KeepOutbox();
  REQUIRE(outbox.ok());
  const std::string k = Digest(3);
  REQUIRE(cache->Put(k, Figure(100), {8, 50}).ok());
  const ImportOrigin origin{"fleet", "host=db", "the fleet store"};
  const std::vector<CacheEntry> pulled = {
      {k, Figure(1), {8, 50}},          // the same Timing: kept as it is
      {k, Figure(2, 3), {2, 3}},        // a worse one: added, ranked below
      {k, Figure(3, 100), {16, 100}}};  // a better one: added, ranked first
  CHECK(cache->MergeFromFleet(pulled, origin).value() == 2);
  CHECK(Timings(*cache, k) == Timed{{16, 100}, {8, 50}, {2, 3}});
  CHECK(Found(*cache, k, {8, 50}) == 3);
  auto mine = cache->Figures(k);
  REQUIRE(mine.ok());
  CHECK((*mine)[1].measurement.t_step_us() == 100);
  // Only the figure timed here waits for the fleet, with its Timing.
  auto pending = (*outbox)->Pending(10);
  REQUIRE(pending.ok());
  REQUIRE(pending->figures.size() == 1);
  CHECK(pending->figures[0].timing == FigureTiming{8, 50});
  REQUIRE((*outbox)->Published(*pending).ok());
  CHECK((*outbox)->Size().value() == 0);
}

TEST_CASE("The outbox keeps a key's figures at each Timing apart", "[cache]") {
  ScratchDir dir;
  auto cache = Open(dir.File("c.db"));
  auto outbox = cache->KeepOutbox();
  REQUIRE(outbox.ok());
  REQUIRE(cache->Put(Digest(4), Figure(100), {8, 50}).ok());
  REQUIRE(cache->Put(Digest(4), Figure(90, 3), {2, 3}).ok());
  auto pending = (*outbox)->Pending(10);
  REQUIRE(pending.ok());
  REQUIRE(pending->figures.size() == 2);
  std::vector<double> steps;
  for (const CacheEntry& e : pending->figures) {
    CHECK(e.measurement.calls() == e.timing.calls);
    steps.push_back(e.measurement.t_step_us());
  }
  std::sort(steps.begin(), steps.end());
  CHECK(steps == std::vector<double>{90, 100});
  // Publishing one leaves the other.
  Outbox first;
  first.figures = {pending->figures[0]};
  REQUIRE((*outbox)->Published(first).ok());
  CHECK((*outbox)->Size().value() == 1);
}

// The pooled spread of `series` (each a key's figures, in order) beyond
// their rounds' own errors, computed here from the definition.
double ExpectedShare(const std::vector<std::vector<v1::Measurement>>& series) {
  double m2 = 0, within = 0, dof = 0;
  for (const auto& figures : series) {
    const double n = static_cast<double>(figures.size());
    double mean = 0;
    for (const auto& m : figures) mean += std::log(m.t_step_us()) / n;
    double w = 0;
    for (const auto& m : figures) {
      m2 += std::pow(std::log(m.t_step_us()) - mean, 2);
      const std::vector<double> r(m.round_us().begin(), m.round_us().end());
      w += std::pow(*MedianStandardError(r) / m.t_step_us(), 2);
    }
    within += w * (n - 1) / n;
    dof += n - 1;
  }
  return std::sqrt((m2 - within) / dof);
}

TEST_CASE("The rows keep how far repeated figures spread", "[cache]") {
  ScratchDir dir;
  const std::string path = dir.File("c.db");
  auto cache = Open(path);
  CHECK_FALSE(cache->Spread()->share().has_value());
  // Two keys at one Timing, repeated; a third timed once; one key at a
  // second Timing too, whose figures are a history of their own.
  const std::vector<std::vector<v1::Measurement>> series = {
      {Figure(100), Figure(101.5), Figure(99), Figure(100.8)},
      {Figure(50), Figure(50.6), Figure(49.7)},
      {Figure(20, 3, 0.3), Figure(20.5, 3, 0.3)}};
  REQUIRE(cache->Put(Digest(9), Figure(7), {8, 50}).ok());
  for (size_t i = 0; i < series[0].size(); ++i) {
    REQUIRE(cache->Put(Digest(1), series[0][i], {8, 50}).ok());
    if (i < series[1].size()) {
      REQUIRE(cache->Put(Digest(2), series[1][i], {8, 50}).ok());
    }
    if (i < series[2].size()) {
      REQUIRE(cache->Put(Digest(1), series[2][i], {2, 3}).ok());
    }
  }
  const double expected = ExpectedShare(series);
  REQUIRE(expected > 0.005);
  auto spread = cache->Spread();
  REQUIRE(spread.ok());
  CHECK(spread->dof == 3 + 2 + 1);
  REQUIRE(spread->share().has_value());
  CHECK(*spread->share() == Approx(expected).epsilon(1e-9));
  // Read from the rows, as after a restart: the same.
  cache.reset();
  auto reopened = Open(path);
  auto read = reopened->Spread();
  REQUIRE(read.ok());
  CHECK(read->dof == 6);
  CHECK(*read->share() == Approx(expected).epsilon(1e-9));
  // A figure with one round says nothing of its own noise: not counted.
  v1::Measurement one = Figure(300);
  one.clear_round_us();
  one.add_round_us(300);
  REQUIRE(reopened->Put(Digest(1), one, {8, 50}).ok());
  CHECK(reopened->Spread()->dof == 6);
  // Clear forgets it all.
  REQUIRE(reopened->Clear().ok());
  CHECK(reopened->Spread()->dof == 0);
}

}  // namespace
}  // namespace irontune
