#include "daemon/scheduler/cache_epoch.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "daemon/store/cache.h"
#include "daemon/store/cache_key.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

constexpr uint64_t kTopBit = uint64_t{1} << 63;

v1::Measurement Figure(double t_step_us) {
  v1::Measurement m;
  m.set_t_step_us(t_step_us);
  return m;
}

TEST_CASE("cache epoch: the same number until something is committed") {
  const std::string dir = e2e::TempDir("cache-epoch");
  const std::string path = dir + "/irontune.db";
  auto cache = Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  auto epoch = CacheEpoch::Open(path);
  REQUIRE(epoch.ok());
  const uint64_t first = (*epoch)->Now();
  CHECK((first & kTopBit) != 0);  // never a Cache's generation
  CHECK((*epoch)->Now() == first);
  // A read through the writer changes nothing.
  CHECK((*cache)->Get(std::string(kCacheKeyDigits, 'a')).ok());
  CHECK((*epoch)->Now() == first);
  REQUIRE((*cache)->Put(std::string(kCacheKeyDigits, 'a'), Figure(3)).ok());
  const uint64_t second = (*epoch)->Now();
  CHECK(second != first);
  CHECK((*epoch)->Now() == second);
  // Another epoch on the file numbers its states apart.
  auto other = CacheEpoch::Open(path);
  REQUIRE(other.ok());
  CHECK((*other)->Now() != second);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cache epoch: a file no Cache made is refused at open") {
  const std::string dir = e2e::TempDir("cache-epoch-none");
  CHECK(!CacheEpoch::Open(dir + "/missing.db").ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace irontune
