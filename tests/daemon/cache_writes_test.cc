#include "daemon/scheduler/cache_writes.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "daemon/store/cache.h"
#include "daemon/store/cache_key.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

// A cache file, its writer and a CacheWrites watching it.
struct Rig {
  Rig() {
    cache = *Cache::Open(path, "NPU Strix", PowerMode::kDefault);
    writes = std::make_unique<CacheWrites>(*CacheEpoch::Open(path));
  }
  ~Rig() { std::filesystem::remove_all(dir); }
  // Commits a figure under a key of its own.
  void Commit() {
    v1::Measurement m;
    m.set_t_step_us(1);
    std::string key(kCacheKeyDigits, '0');
    key.back() = static_cast<char>('a' + commits++ % 6);
    REQUIRE(cache->Put(key, m).ok());
  }
  const std::string dir = e2e::TempDir("cache-writes");
  const std::string path = dir + "/irontune.db";
  std::unique_ptr<Cache> cache;
  std::unique_ptr<CacheWrites> writes;
  int commits = 0;
};

TEST_CASE(
    "cache writes: a shape not exposed keeps its version through commits") {
  Rig rig;
  CacheWrites& w = *rig.writes;
  const uint64_t a = w.Version("A");
  rig.Commit();
  CHECK(w.Version("A") == a);
  // Another shape exposed and released: A's stays.
  w.Expose("j1", "B");
  rig.Commit();
  w.Release("j1");
  CHECK(w.Version("A") == a);
  CHECK(!w.exposed("A"));
}

TEST_CASE("cache writes: an exposed shape's version moves at each commit") {
  Rig rig;
  CacheWrites& w = *rig.writes;
  const uint64_t before = w.Version("A");
  w.Expose("j1", "A");
  CHECK(w.exposed("A"));
  const uint64_t during = w.Version("A");
  CHECK(during != before);
  CHECK(w.Version("A") == during);  // nothing committed since
  rig.Commit();
  const uint64_t after_commit = w.Version("A");
  CHECK(after_commit != during);
  w.Release("j1");
  CHECK(!w.exposed("A"));
  const uint64_t released = w.Version("A");
  CHECK(released != before);
  CHECK(released != after_commit);
  CHECK(w.Version("A") == released);
}

TEST_CASE("cache writes: two jobs expose a shape until both release it") {
  Rig rig;
  CacheWrites& w = *rig.writes;
  w.Expose("j1", "A");
  w.Expose("j1", "A");  // once per job
  w.Expose("j2", "A");
  w.Release("j1");
  CHECK(w.exposed("A"));
  w.Release("j2");
  CHECK(!w.exposed("A"));
  w.Release("never");  // nothing exposed: nothing happens
  CHECK(!w.exposed("A"));
}

TEST_CASE("cache writes: exposing every shape moves every version") {
  Rig rig;
  CacheWrites& w = *rig.writes;
  const uint64_t a = w.Version("A"), b = w.Version("B");
  w.ExposeAll("task");
  CHECK(w.exposed("A"));
  CHECK(w.exposed("never seen"));
  w.Release("task");
  CHECK(!w.exposed("A"));
  CHECK(w.Version("A") != a);
  CHECK(w.Version("B") != b);
}

}  // namespace
}  // namespace irontune
