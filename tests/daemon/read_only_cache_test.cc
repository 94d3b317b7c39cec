#include "daemon/scheduler/read_only_cache.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "daemon/store/cache_key.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

v1::Measurement Figure(double t_step_us) {
  v1::Measurement m;
  m.set_t_step_us(t_step_us);
  return m;
}

TEST_CASE(
    "read-only cache: it reads what the writer stores and writes nothing") {
  const std::string dir = e2e::TempDir("read-only-cache");
  const std::string path = dir + "/irontune.db";
  auto writer = Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  REQUIRE(writer.ok());
  const std::string key(kCacheKeyDigits, 'a');
  REQUIRE((*writer)->Put(key, Figure(3)).ok());
  REQUIRE((*writer)->PutVerdict({"recipe", "env"}, "").ok());

  auto reader = OpenReadOnlyCache(path, "NPU Strix", PowerMode::kDefault);
  REQUIRE(reader.ok());
  auto got = (*reader)->Get(key);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->t_step_us() == 3);
  CHECK((*reader)->GetVerdict({"recipe", "env"}).ok());

  // Writes through it fail, and the file keeps what it had.
  CHECK(!(*reader)->Put(key, Figure(9)).ok());
  CHECK(!(*reader)->Put(std::string(kCacheKeyDigits, 'b'), Figure(9)).ok());
  CHECK(!(*reader)->PutVerdict({"recipe", "env"}, "refused: no").ok());
  auto again = (*writer)->Get(key);
  REQUIRE(again.ok());
  REQUIRE(again->has_value());
  CHECK((*again)->t_step_us() == 3);
  auto absent = (*writer)->Get(std::string(kCacheKeyDigits, 'b'));
  REQUIRE(absent.ok());
  CHECK(!absent->has_value());
  auto verdict = (*writer)->GetVerdict({"recipe", "env"});
  REQUIRE(verdict.ok());
  CHECK(*verdict == std::optional<std::string>(""));
  // The writer still writes, and the reader sees it.
  REQUIRE((*writer)->Put(key, Figure(5)).ok());
  auto seen = (*reader)->Get(key);
  REQUIRE(seen.ok());
  CHECK((*seen)->t_step_us() == 5);
  std::filesystem::remove_all(dir);
}

TEST_CASE("read-only cache: a file the writer has not made is refused") {
  const std::string dir = e2e::TempDir("read-only-cache-none");
  CHECK(
      !OpenReadOnlyCache(dir + "/irontune.db", "NPU Strix", PowerMode::kDefault)
           .ok());
  CHECK(!std::filesystem::exists(dir + "/irontune.db"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace irontune
