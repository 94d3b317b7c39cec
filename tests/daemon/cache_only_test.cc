#include "daemon/scheduler/cache_only.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "daemon/store/cache.h"
#include "tests/testing/process.h"
#include "tests/testing/recording_fixtures.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

BuildRequest Request() {
  BuildRequest r;
  r.op = testing::Add2048({256, 512});
  r.platform = testing::PlatformOf("npu2");
  return r;
}

TEST_CASE("cache only: the device reports its platform and refuses loads") {
  NeedsDevice needs;
  const Platform platform = testing::PlatformOf("npu2");
  CacheOnlyDevice device(platform, StackVersions(), &needs);
  REQUIRE(device.GetPlatform().ok());
  CHECK(device.GetPlatform()->name == platform.name);
  CHECK(!needs.asked());
  absl::StatusOr<std::unique_ptr<Image>> image = device.Load(Artifact());
  CHECK(absl::IsFailedPrecondition(image.status()));
  CHECK_THAT(std::string(image.status().message()),
             Catch::StartsWith(kCacheOnly));
  CHECK(needs.asked());
  CHECK(needs.first() == "a device load");
  CHECK(!device.OtherHolders().ok());
  CHECK(needs.first() == "a device load");  // the first is kept
}

TEST_CASE(
    "cache only: the builder keeps the real one's keys and refuses work") {
  NeedsDevice needs;
  CacheOnlyBuilder builder("env/7", /*checks_fit=*/true, &needs);
  CHECK(builder.Environment() == "env/7");
  CHECK(builder.ChecksFit());
  CHECK(builder.Ready(Request()));
  // Hints are not needs.
  builder.Prefetch(Request());
  builder.PrefetchAt(Request(), 2);
  builder.PrefetchLater(Request());
  builder.PrefetchSpare(Request());
  CHECK(!needs.asked());
  CHECK(!builder.Fit(Request()).ok());
  CHECK(needs.first() == "a fit check");
  CHECK(!builder.Build(Request()).ok());
  CHECK(!builder.Await(Request(), [] { return false; }).ok());
}

TEST_CASE(
    "cache only: the context holds events and stops once it needs the device") {
  const std::string dir = e2e::TempDir("cache-only");
  const std::string path = dir + "/irontune.db";
  auto cache = *Cache::Open(path, "NPU Strix", PowerMode::kDefault);
  CacheWrites writes(*CacheEpoch::Open(path));
  auto job = std::make_shared<Job>("j1", Job::Request(v1::AutotuneRequest()),
                                   "ann", v1::PRIORITY_INTERACTIVE, false);
  NeedsDevice needs;
  CacheOnlyDevice device(testing::PlatformOf("npu2"), StackVersions(), &needs);
  CacheOnlyBuilder builder("env", true, &needs);
  {
    CacheOnlyContext context(job, device, builder, cache.get(), writes, needs);
    context.OnShape(0, 1, "SiLU size=8192");
    context.Log("searching");
    bool done = false;
    CHECK(job->EventsFrom(0, absl::ZeroDuration(), &done).empty());
    // It reads beside the writer, and exposes nothing itself.
    CHECK(!writes.exposed("SiLU size=8192"));
    CHECK(context.cache_version() == writes.Version("SiLU size=8192"));
    CHECK(context.Unchanged());
    writes.Expose("worker-job", "SiLU size=8192");
    CHECK(!context.Unchanged());
    writes.Release("worker-job");
    CHECK(!context.cancelled());
    (void)context.device().Load(Artifact());
    CHECK(context.cancelled());
    context.Release();
    CHECK(job->EventsFrom(0, absl::ZeroDuration(), &done).size() == 2);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace irontune
