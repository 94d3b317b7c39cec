// The measurement cache's outbox for the fleet store (Cache::KeepOutbox).
#include "daemon/store/cache_outbox.h"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "daemon/store/cache.h"
#include "daemon/store/cache_key.h"
#include "irontune/v1/tuner.pb.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

std::string Key(int n) {
  CacheKey key;
  key.recipe_hash = "recipe " + std::to_string(n);
  return key.Digest();
}

v1::Measurement Figure(double t) {
  v1::Measurement m;
  m.set_t_step_us(t);
  m.add_round_us(t);
  return m;
}

std::unique_ptr<Cache> OpenCache(const std::string& path,
                                 PowerMode mode = PowerMode::kPerformance) {
  auto cache = Cache::Open(path, "NPU Strix", mode);
  REQUIRE(cache.ok());
  return std::move(*cache);
}

std::unique_ptr<CacheOutbox> Keep(Cache& cache) {
  auto outbox = cache.KeepOutbox();
  REQUIRE(outbox.ok());
  return std::move(*outbox);
}

TEST_CASE("Before KeepOutbox nothing is noted for the fleet", "[cache]") {
  const std::string path = e2e::TempDir("outbox") + "/irontune.db";
  auto cache = OpenCache(path);
  REQUIRE(cache->Put(Key(1), Figure(1.0)).ok());
  REQUIRE(cache->PutVerdict({"r", "e"}, "fits").ok());
  CHECK(Keep(*cache)->Size().value() == 0);
}

TEST_CASE("The outbox holds what was stored until it is published", "[cache]") {
  const std::string dir = e2e::TempDir("outbox");
  const std::string path = dir + "/irontune.db";
  {
    auto cache = OpenCache(path);
    REQUIRE(cache->Put(Key(0), Figure(0.5)).ok());  // before: not noted
    auto outbox = Keep(*cache);
    REQUIRE(cache->Put(Key(1), Figure(1.0)).ok());
    const std::vector<CacheEntry> many = {{Key(2), Figure(2.0)},
                                          {Key(3), Figure(3.0)}};
    REQUIRE(cache->PutMany(many).ok());
    REQUIRE(cache->PutVerdict({"recipe", "env"}, "fits").ok());
    CHECK(outbox->Size().value() == 4);
  }
  // Kept in the file: a restart (a box killed, the store down) loses none.
  auto cache = OpenCache(path);
  auto outbox = Keep(*cache);
  auto pending = outbox->Pending(2);
  REQUIRE(pending.ok());
  REQUIRE(pending->figures.size() == 2);
  REQUIRE(pending->verdicts.size() == 1);
  CHECK(pending->verdicts[0].second == "fits");
  CHECK(pending->figures[0].measurement.power_mode() == "performance");
  REQUIRE(outbox->Published(*pending).ok());
  auto rest = outbox->Pending(10);
  REQUIRE(rest.ok());
  REQUIRE(rest->figures.size() == 1);
  CHECK(rest->verdicts.empty());
  REQUIRE(outbox->Published(*rest).ok());
  CHECK(outbox->Size().value() == 0);
  CHECK(outbox->Pending(10)->empty());
}

TEST_CASE("Imported rows and another mode's rows are not sent", "[cache]") {
  const std::string path = e2e::TempDir("outbox") + "/irontune.db";
  {
    auto turbo = OpenCache(path, PowerMode::kTurbo);
    auto turbo_outbox = Keep(*turbo);
    REQUIRE(turbo->Put(Key(9), Figure(9.0)).ok());
  }
  auto cache = OpenCache(path);
  auto outbox = Keep(*cache);
  std::stringstream lines;
  lines << R"({"kind":"measurement","platform":"npu-strix",)"
        << R"("power_mode":"performance","key":")" << Key(4)
        << R"(","row_schema":1,"measurement":{"tStepUs":4}})"
        << "\n";
  auto imported = cache->Import(lines);
  REQUIRE(imported.ok());
  REQUIRE(imported->imported == 1);
  auto pending = outbox->Pending(10);
  REQUIRE(pending.ok());
  CHECK(pending->figures.empty());  // Turbo's waits for a Turbo box
  CHECK(outbox->Size().value() == 1);
}

TEST_CASE("Clear empties the outbox with the rows", "[cache]") {
  const std::string path = e2e::TempDir("outbox") + "/irontune.db";
  auto cache = OpenCache(path);
  auto outbox = Keep(*cache);
  REQUIRE(cache->Put(Key(1), Figure(1.0)).ok());
  CHECK(outbox->Size().value() == 1);
  REQUIRE(cache->Clear().ok());
  CHECK(outbox->Size().value() == 0);
}

TEST_CASE("Figures from the fleet fill gaps, under one import, not sent back",
          "[cache]") {
  const std::string path = e2e::TempDir("outbox") + "/irontune.db";
  auto cache = OpenCache(path);
  auto outbox = Keep(*cache);
  REQUIRE(cache->Put(Key(1), Figure(1.0)).ok());  // timed here
  const ImportOrigin origin{"fleet", "host=db", "the fleet store"};
  const std::vector<CacheEntry> first = {{Key(1), Figure(9.0)},
                                         {Key(2), Figure(2.0)}};
  const uint64_t before = cache->generation();
  CHECK(cache->MergeFromFleet(first, origin).value() == 1);
  CHECK(cache->generation() != before);
  const std::vector<CacheEntry> second = {{Key(2), Figure(8.0)},
                                          {Key(3), Figure(3.0)},
                                          {"not a digest", Figure(4.0)}};
  const std::vector<VerdictRow> verdicts = {{{"recipe", "env"}, "fits"},
                                            {{"", "env"}, "refused: x"}};
  CHECK(cache->MergeFromFleet(second, origin, verdicts).value() == 2);
  CHECK(cache->GetVerdict({"recipe", "env"}).value() ==
        std::optional<std::string>("fits"));
  CHECK(cache->Get(Key(1)).value()->t_step_us() == 1.0);  // this box's kept
  CHECK(cache->Get(Key(2)).value()->t_step_us() == 2.0);  // first kept
  CHECK(cache->Get(Key(3)).value()->t_step_us() == 3.0);
  // Only the figure timed here waits to be published.
  CHECK(outbox->Size().value() == 1);
  auto imports = cache->ListImports();
  REQUIRE(imports.ok());
  REQUIRE(imports->size() == 1);
  CHECK((*imports)[0].source() == "the fleet store");
  CHECK((*imports)[0].lines() == 3);
  // What came from the fleet can be dropped as one import.
  CHECK(cache->DropImport((*imports)[0].id()).value() == 3);
  CHECK_FALSE(cache->GetVerdict({"recipe", "env"}).value().has_value());
  CHECK_FALSE(cache->Get(Key(3)).value().has_value());
  CHECK(cache->Get(Key(1)).value().has_value());
  // The next merge opens a new import rather than filling a dropped one.
  CHECK(cache->MergeFromFleet(second, origin).value() == 2);
  CHECK(cache->ListImports()->size() == 2);
}

}  // namespace
}  // namespace irontune
