#include "daemon/builder/build_pool.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <numeric>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "daemon/base/thread_roles.h"
#include "daemon/npu/metered.h"
#include "daemon/sim/sim_builder.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

// A Builder that counts its builds (and notes each one's steps in the order
// they started), fails the first `fail_first`, refuses tile_m 32, and holds
// each build until the gate is open (and those of the steps held until
// they are no longer).
class GatedBuilder : public Builder {
 public:
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    {
      absl::MutexLock lock(&mu_);
      ++started_;
      steps_started_.push_back(request.steps);
      mu_.Await(absl::Condition(&open_));
      auto released = [this, &request]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return request.steps != held_steps_;
      };
      mu_.Await(absl::Condition(&released));
      ++builds_;
      if (fail_first_ > 0) {
        --fail_first_;
        return absl::InternalError("the build command crashed");
      }
    }
    for (const v1::Tunable& t : request.op.tunables()) {
      if (t.name() == "tile_m" && t.value().int_value() == 32) {
        return BuildOutcome{std::nullopt, "L1: does not fit"};
      }
    }
    return inner_.Build(request);
  }
  std::string Environment() const override { return "gated/1"; }

  void Open(bool open) {
    absl::MutexLock lock(&mu_);
    open_ = open;
  }
  // Builds of `steps` steps wait, gate open or not, until Hold(0).
  void Hold(int steps) {
    absl::MutexLock lock(&mu_);
    held_steps_ = steps;
  }
  void FailFirst(int n) {
    absl::MutexLock lock(&mu_);
    fail_first_ = n;
  }
  int builds() {
    absl::MutexLock lock(&mu_);
    return builds_;
  }
  std::vector<int> steps_started() {
    absl::MutexLock lock(&mu_);
    return steps_started_;
  }
  // Waits (at most 10 s) until `n` builds have started.
  bool WaitStarted(int n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]()
                      ABSL_NO_THREAD_SAFETY_ANALYSIS { return started_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }

 private:
  SimBuilder inner_;
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  int started_ ABSL_GUARDED_BY(mu_) = 0;
  int builds_ ABSL_GUARDED_BY(mu_) = 0;
  int fail_first_ ABSL_GUARDED_BY(mu_) = 0;
  int held_steps_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> steps_started_ ABSL_GUARDED_BY(mu_);
};

BuildRequest Request(int64_t tile_m, int steps = 1) {
  BuildRequest r;
  r.op = testing::IronGemm(256, 512, 512, tile_m, 64, 64, 8);
  r.platform.name = "NPU Strix";
  r.platform.generation = "npu2";
  r.steps = steps;
  r.packaging = v1::PACKAGING_FULL_ELF;
  return r;
}

TEST_CASE("the request key follows the design and the runlist only") {
  BuildRequest a = Request(64);
  BuildRequest b = Request(64);
  b.op.mutable_tolerance()->mutable_close()->set_atol(0.5);  // not design
  CHECK(RequestKey(a) == RequestKey(b));
  CHECK(RequestKey(a) != RequestKey(Request(32)));
  CHECK(RequestKey(a) != RequestKey(Request(64, 9)));
  b.distinct = false;
  CHECK(RequestKey(a) != RequestKey(b));
}

TEST_CASE("a pool off builds on the caller and remembers the outcome") {
  GatedBuilder inner;
  BuildPool pool(&inner, BuildPoolOptions{0});
  pool.Prefetch(Request(64));
  CHECK(inner.builds() == 0);  // no threads: nothing ahead
  auto first = pool.Build(Request(64));
  REQUIRE(first.ok());
  REQUIRE(first->artifact);
  auto again = pool.Build(Request(64));
  REQUIRE(again.ok());
  CHECK(again->artifact->artifact_hash == first->artifact->artifact_hash);
  CHECK(inner.builds() == 1);
  CHECK(pool.stats().remembered == 1);
}

TEST_CASE("a refusal is remembered like an artifact") {
  GatedBuilder inner;
  BuildPool pool(&inner, BuildPoolOptions{2});
  for (int i = 0; i < 3; ++i) {
    auto out = pool.Build(Request(32));
    REQUIRE(out.ok());
    CHECK_FALSE(out->artifact);
    CHECK(out->refusal == "L1: does not fit");
  }
  CHECK(inner.builds() == 1);
}

TEST_CASE("an error goes to its callers and is then tried again") {
  GatedBuilder inner;
  inner.FailFirst(1);
  BuildPool pool(&inner, BuildPoolOptions{1});
  auto first = pool.Build(Request(64));
  CHECK(absl::IsInternal(first.status()));
  auto second = pool.Build(Request(64));
  REQUIRE(second.ok());
  CHECK(second->artifact);
  CHECK(inner.builds() == 2);
}

TEST_CASE("prefetched builds run ahead on the pool's threads") {
  GatedBuilder inner;
  BuildPool pool(&inner, BuildPoolOptions{2});
  pool.Prefetch(Request(64));
  pool.Prefetch(Request(64, 9));
  pool.Prefetch(Request(64));  // queued already: merged
  REQUIRE(inner.WaitStarted(2));
  auto one = pool.Build(Request(64));
  auto many = pool.Build(Request(64, 9));
  REQUIRE(one.ok());
  REQUIRE(many.ok());
  CHECK(many->artifact->steps == 9);
  CHECK(inner.builds() == 2);
  const BuildPoolStats stats = pool.stats();
  CHECK(stats.builds == 2);
  CHECK(stats.prefetched == 2);
}

// A Builder that notes the nice value of the thread each build runs on.
class NicenessBuilder : public Builder {
 public:
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    {
      absl::MutexLock lock(&mu_);
      seen_.push_back(ThreadNiceness());
    }
    return inner_.Build(request);
  }
  std::string Environment() const override { return "niceness/1"; }
  std::vector<int> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  SimBuilder inner_;
  absl::Mutex mu_;
  std::vector<int> seen_ ABSL_GUARDED_BY(mu_);
};

TEST_CASE("the pool's threads build as helpers, below the device thread") {
  NicenessBuilder inner;
  BuildPool pool(&inner, BuildPoolOptions{1});
  REQUIRE(pool.Build(Request(64)).ok());  // on the pool's thread
  REQUIRE(inner.seen().size() == 1);
  CHECK(inner.seen()[0] == std::min(19, ThreadNiceness() + kHelperNiceness));
  // A pool off builds on its caller, at the caller's priority.
  NicenessBuilder direct;
  BuildPool off(&direct, BuildPoolOptions{0});
  REQUIRE(off.Build(Request(64)).ok());
  REQUIRE(direct.seen().size() == 1);
  CHECK(direct.seen()[0] == ThreadNiceness());
}

TEST_CASE("builds prefetched for later wait until the first queue is empty") {
  GatedBuilder inner;
  inner.Open(false);
  BuildPool pool(&inner, BuildPoolOptions{1});
  pool.Prefetch(Request(64, 1));  // taken by the one thread, held
  REQUIRE(inner.WaitStarted(1));
  pool.PrefetchLater(Request(64, 2));
  pool.PrefetchLater(Request(64, 3));
  pool.Prefetch(Request(64, 4));
  pool.Prefetch(Request(64, 3));       // wanted sooner: behind 4
  pool.PrefetchLater(Request(64, 4));  // queued already: stays first
  inner.Open(true);
  REQUIRE(inner.WaitStarted(4));
  CHECK(inner.steps_started() == std::vector<int>{1, 4, 3, 2});
  const BuildPoolStats stats = pool.stats();
  CHECK(stats.prefetched == 4);
  CHECK(stats.later == 1);  // only 2 came from the later queue
}

TEST_CASE("builds with time to spare go last, a thread kept for others") {
  GatedBuilder inner;
  inner.Open(false);
  BuildPool pool(&inner, BuildPoolOptions{2});
  REQUIRE(pool.SpareThreads() == 1);
  pool.PrefetchSpare(Request(64, 2));  // taken by a thread, held
  REQUIRE(inner.WaitStarted(1));
  pool.PrefetchSpare(Request(64, 3));  // no second spare thread
  pool.Prefetch(Request(64, 4));       // the kept thread takes it
  REQUIRE(inner.WaitStarted(2));
  CHECK(inner.steps_started() == std::vector<int>{2, 4});
  inner.Open(true);
  REQUIRE(inner.WaitStarted(3));
  CHECK(inner.steps_started() == std::vector<int>{2, 4, 3});
  CHECK(pool.stats().spare == 2);
}

TEST_CASE("builds with time to spare wait behind later ones, move up") {
  GatedBuilder inner;
  inner.Open(false);
  inner.Hold(1);
  BuildPool pool(&inner, BuildPoolOptions{2});
  pool.Prefetch(Request(64, 1));  // one thread held throughout
  REQUIRE(inner.WaitStarted(1));
  pool.Prefetch(Request(64, 5));  // the other, held by the gate
  REQUIRE(inner.WaitStarted(2));
  pool.PrefetchSpare(Request(64, 2));
  pool.PrefetchSpare(Request(64, 4));
  pool.PrefetchLater(Request(64, 3));
  pool.PrefetchLater(Request(64, 4));  // wanted sooner: behind 3
  pool.Prefetch(Request(64, 6));
  pool.PrefetchSpare(Request(64, 6));  // queued higher already: stays
  inner.Open(true);
  REQUIRE(inner.WaitStarted(6));
  CHECK(inner.steps_started() == std::vector<int>{1, 5, 6, 3, 4, 2});
  inner.Hold(0);
  const BuildPoolStats stats = pool.stats();
  CHECK(stats.later == 2);
  CHECK(stats.spare == 1);
}

TEST_CASE("a build queued to spare is dropped unless it started") {
  GatedBuilder inner;
  inner.Open(false);
  inner.Hold(2);
  BuildPool pool(&inner, BuildPoolOptions{2});
  pool.PrefetchSpare(Request(64, 2));  // taken by a thread, held
  REQUIRE(inner.WaitStarted(1));
  pool.Prefetch(Request(64, 9));  // the kept thread, held by the gate
  REQUIRE(inner.WaitStarted(2));
  pool.PrefetchSpare(Request(64, 3));
  pool.PrefetchSpare(Request(64, 4));
  pool.Prefetch(Request(64, 5));
  pool.Unprefetch(Request(64, 3));  // dropped
  pool.Unprefetch(Request(64, 2));  // running: goes on
  pool.Unprefetch(Request(64, 5));  // not queued to spare: stays
  inner.Open(true);
  REQUIRE(inner.WaitStarted(3));
  // 4 waits while 2 holds the one spare thread.
  CHECK(inner.steps_started() == std::vector<int>{2, 9, 5});
  inner.Hold(0);
  REQUIRE(inner.WaitStarted(4));
  CHECK(inner.steps_started() == std::vector<int>{2, 9, 5, 4});
  // Asked for after all, 3 is built then.
  REQUIRE(pool.Build(Request(64, 3)).ok());
  CHECK(inner.steps_started() == std::vector<int>{2, 9, 5, 4, 3});
  CHECK(pool.stats().spare == 2);  // 2 and 4
}

TEST_CASE("a pool of eight threads builds with time to spare on all") {
  GatedBuilder inner;
  inner.Open(false);
  BuildPool pool(&inner, BuildPoolOptions{kSpareOnEveryThread});
  REQUIRE(pool.SpareThreads() == kSpareOnEveryThread);
  CHECK(BuildPool(&inner, BuildPoolOptions{kSpareOnEveryThread - 1})
            .SpareThreads() == kSpareOnEveryThread - 2);
  for (int steps = 2; steps < 2 + kSpareOnEveryThread + 1; ++steps) {
    pool.PrefetchSpare(Request(64, steps));
  }
  // Every thread takes a spare build; none is kept free.
  REQUIRE(inner.WaitStarted(kSpareOnEveryThread));
  pool.Prefetch(Request(64, 1));  // waits for a thread, ahead of the spare
  inner.Open(true);
  REQUIRE(inner.WaitStarted(kSpareOnEveryThread + 2));
  std::vector<int> first = inner.steps_started();
  first.resize(kSpareOnEveryThread);
  std::sort(first.begin(), first.end());
  std::vector<int> spare(kSpareOnEveryThread);
  std::iota(spare.begin(), spare.end(), 2);
  CHECK(first == spare);
  CHECK(pool.stats().spare == kSpareOnEveryThread + 1);
}

TEST_CASE("a pool of one thread builds nothing with time to spare") {
  GatedBuilder inner;
  BuildPool pool(&inner, BuildPoolOptions{1});
  CHECK(pool.SpareThreads() == 0);
  pool.PrefetchSpare(Request(64, 2));
  REQUIRE(pool.Build(Request(64, 1)).ok());
  CHECK(inner.builds() == 1);  // 2 is still queued
  REQUIRE(pool.Build(Request(64, 2)).ok());
  CHECK(inner.builds() == 2);
  CHECK(pool.stats().spare == 0);
}

TEST_CASE("a pool told not to builds nothing with time to spare") {
  GatedBuilder inner;
  BuildPoolOptions options{2};
  options.spare = false;
  BuildPool pool(&inner, options);
  CHECK(pool.SpareThreads() == 0);
  pool.PrefetchSpare(Request(64, 2));  // not queued at all
  REQUIRE(pool.Build(Request(64, 1)).ok());
  REQUIRE(pool.Build(Request(64, 1)).ok());
  CHECK(inner.builds() == 1);
  CHECK(pool.stats().asked_many_step == 0);  // 2 was never asked
  CHECK(pool.stats().spare == 0);
}

TEST_CASE("builds prefetched at a rank go before higher ranks, in order") {
  GatedBuilder inner;
  inner.Open(false);
  BuildPool pool(&inner, BuildPoolOptions{1});
  pool.Prefetch(Request(64, 1));  // taken by the one thread, held
  REQUIRE(inner.WaitStarted(1));
  pool.PrefetchAt(Request(64, 2), 3);
  pool.PrefetchAt(Request(64, 3), 2);
  pool.PrefetchLater(Request(64, 4));
  pool.PrefetchAt(Request(64, 5), 2);
  pool.Prefetch(Request(64, 6));       // rank 0
  pool.PrefetchAt(Request(64, 2), 1);  // wanted sooner: up to rank 1
  pool.PrefetchAt(Request(64, 6), 5);  // queued lower already: stays
  pool.PrefetchAt(Request(64, 4), 9);  // out of the later queue
  inner.Open(true);
  REQUIRE(inner.WaitStarted(6));
  CHECK(inner.steps_started() == std::vector<int>{1, 6, 2, 3, 5, 4});
  CHECK(pool.stats().later == 0);
}

TEST_CASE("a build wanted while queued for later runs next") {
  GatedBuilder inner;
  inner.Open(false);
  BuildPool pool(&inner, BuildPoolOptions{1});
  pool.Prefetch(Request(64, 1));  // taken by the one thread, held
  REQUIRE(inner.WaitStarted(1));
  pool.Prefetch(Request(64, 3));
  pool.PrefetchLater(Request(64, 2));
  absl::StatusOr<BuildOutcome> wanted;
  std::thread caller([&] { wanted = pool.Build(Request(64, 2)); });
  // Wait (at most 10 s) until the caller has taken it to the front.
  for (int i = 0; i < 1000 && pool.stats().merged == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  REQUIRE(pool.stats().merged == 1);
  inner.Open(true);
  caller.join();
  REQUIRE(wanted.ok());
  REQUIRE(wanted->artifact);
  CHECK(wanted->artifact->steps == 2);
  REQUIRE(inner.WaitStarted(3));
  CHECK(inner.steps_started() == std::vector<int>{1, 2, 3});
  CHECK(pool.stats().later == 0);
}

TEST_CASE("builds for later are not started past half the memory cap") {
  GatedBuilder inner;
  BuildPool pool(&inner, BuildPoolOptions{1, 0});  // remembers nothing
  pool.PrefetchLater(Request(64, 2));
  pool.Prefetch(Request(64, 1));
  REQUIRE(pool.Build(Request(64, 1)).ok());
  // Still queued for later, never started: the caller builds it.
  REQUIRE(pool.Build(Request(64, 2)).ok());
  CHECK(pool.stats().later == 0);
  CHECK(inner.builds() == 2);
}

TEST_CASE("callers of one running build share it") {
  GatedBuilder inner;
  inner.Open(false);
  BuildPool pool(&inner, BuildPoolOptions{1});
  std::vector<std::thread> callers;
  std::vector<std::string> hashes(3);
  for (int i = 0; i < 3; ++i) {
    callers.emplace_back([&, i] {
      auto out = pool.Build(Request(64));
      if (out.ok() && out->artifact) hashes[i] = out->artifact->artifact_hash;
    });
  }
  REQUIRE(inner.WaitStarted(1));
  inner.Open(true);
  for (std::thread& t : callers) t.join();
  CHECK(inner.builds() == 1);
  CHECK_FALSE(hashes[0].empty());
  CHECK(hashes[1] == hashes[0]);
  CHECK(hashes[2] == hashes[0]);
}

TEST_CASE("a cancelled wait returns while the build goes on") {
  GatedBuilder inner;
  inner.Open(false);
  BuildPool pool(&inner, BuildPoolOptions{1});
  int polls = 0;
  auto out = pool.Await(Request(64), [&] { return ++polls >= 3; });
  // The gate is still shut: the build has not finished, yet Await returned.
  CHECK(absl::IsCancelled(out.status()));
  CHECK(inner.builds() == 0);
  inner.Open(true);
  auto later = pool.Build(Request(64));
  REQUIRE(later.ok());
  CHECK(later->artifact);
  CHECK(inner.builds() == 1);
}

TEST_CASE("outcomes beyond the memory cap are forgotten") {
  GatedBuilder inner;
  BuildPool pool(&inner, BuildPoolOptions{0, 1});
  REQUIRE(pool.Build(Request(64)).ok());
  REQUIRE(pool.Build(Request(64)).ok());
  CHECK(inner.builds() == 2);
}

TEST_CASE("the sim's build cost is counted per recipe and runlist") {
  SimBuildCost cost;
  cost.per_design = absl::Seconds(4);
  cost.runlist_share = 0.25;
  SimBuilder builder(cost);
  REQUIRE(builder.Build(Request(64)).ok());
  CHECK(builder.spent_seconds() == Approx(4));
  REQUIRE(builder.Build(Request(64, 9)).ok());  // another runlist: a share
  CHECK(builder.spent_seconds() == Approx(5));
  REQUIRE(builder.Build(Request(16)).ok());  // another design
  CHECK(builder.spent_seconds() == Approx(9));
  SimBuilder free_builder;
  REQUIRE(free_builder.Build(Request(64)).ok());
  CHECK(free_builder.spent_seconds() == 0);
}

TEST_CASE("a stopped pool drops its queue and its running build ends") {
  SimBuildCost cost;
  cost.per_design = absl::Seconds(600);
  cost.spend = SimBuildCost::Spend::kSleep;
  BuildPool pool(std::make_unique<SimBuilder>(cost), BuildPoolOptions{1});
  pool.Prefetch(Request(64));     // runs on the pool's thread
  pool.Prefetch(Request(64, 2));  // queued behind it
  absl::StatusOr<BuildOutcome> waited;
  std::thread caller([&] { waited = pool.Build(Request(64)); });
  absl::SleepFor(absl::Milliseconds(100));
  pool.Stop();
  caller.join();
  CHECK(waited.status().code() == absl::StatusCode::kCancelled);
  CHECK(pool.Build(Request(64, 2)).status().code() ==
        absl::StatusCode::kCancelled);
  // The cancelled build was not remembered as built.
  CHECK(pool.stats().remembered == 0);
}

TEST_CASE("the pool counts requests asked and waited for and builds by kind") {
  GatedBuilder inner;
  BuildPool pool(&inner, BuildPoolOptions{2});
  const BuildPoolStats before = pool.stats();
  pool.Prefetch(Request(64));
  pool.Prefetch(Request(64, 9));
  pool.PrefetchLater(Request(16, 9));  // asked, never waited for
  pool.Prefetch(Request(64));          // asked already
  REQUIRE(pool.Build(Request(64)).ok());
  REQUIRE(pool.Build(Request(64, 9)).ok());
  REQUIRE(pool.Build(Request(64)).ok());  // remembered: needed once
  REQUIRE(inner.WaitStarted(3));
  pool.Stop();  // joins nothing; the later build may still run
  const BuildPoolStats stats = StatsSince(pool.stats(), before);
  CHECK(stats.asked_one_step == 1);
  CHECK(stats.asked_many_step == 2);
  CHECK(stats.needed == 2);
  CHECK(stats.built_one_step == 1);
  CHECK(stats.built_many_step >= 1);
  CHECK(stats.builds == stats.built_one_step + stats.built_many_step);
  CHECK(stats.remembered >= 1);  // the first Build too if built by then
  CHECK(stats.fit_checks == 0);
}

TEST_CASE("the pool tells waits for queued builds from waits for others") {
  GatedBuilder inner;
  inner.Open(false);
  BuildPool pool(&inner, BuildPoolOptions{1});
  pool.Prefetch(Request(64, 1));  // taken by the one thread, held
  REQUIRE(inner.WaitStarted(1));
  pool.Prefetch(Request(64, 2));  // queued behind it
  std::thread opener([&inner] {
    absl::SleepFor(absl::Milliseconds(50));
    inner.Open(true);
  });
  REQUIRE(pool.Build(Request(64, 2)).ok());  // waited while it was queued
  opener.join();
  BuildPoolStats stats = pool.stats();
  CHECK(stats.waited_queued_seconds > 0);
  CHECK(stats.waited_unqueued_seconds == 0);
  REQUIRE(pool.Build(Request(64, 3)).ok());  // never queued before
  stats = pool.stats();
  CHECK(stats.waited_unqueued_seconds > 0);
  CHECK(stats.waited_seconds >=
        stats.waited_queued_seconds + stats.waited_unqueued_seconds);
}

TEST_CASE("StatsSince takes each figure's difference") {
  BuildPoolStats before, after;
  before.builds = 2;
  before.asked_many_step = 3;
  before.build_seconds = 1.5;
  after.builds = 7;
  after.asked_many_step = 4;
  after.build_seconds = 4;
  after.fit_checks = 6;
  const BuildPoolStats d = StatsSince(after, before);
  CHECK(d.builds == 5);
  CHECK(d.asked_many_step == 1);
  CHECK(d.build_seconds == Approx(2.5));
  CHECK(d.fit_checks == 6);
  CHECK(d.needed == 0);
}

// A SimBuilder that counts its builds and fit checks; `checks` says
// whether it has a fit check of its own (else Fit builds).
class FitCountingBuilder : public Builder {
 public:
  explicit FitCountingBuilder(bool checks) : checks_(checks) {}
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    ++builds;
    return inner_.Build(request);
  }
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override {
    if (!checks_) return Builder::Fit(request);
    ++fits;
    return inner_.Fit(request);
  }
  bool ChecksFit() const override { return checks_; }
  std::string Environment() const override { return "fit-counting/1"; }
  std::atomic<int> builds{0};
  std::atomic<int> fits{0};

 private:
  const bool checks_;
  SimBuilder inner_;
};

TEST_CASE(
    "Fit gives the refusal of Build without a build where the builder checks") {
  FitCountingBuilder checking(true);
  BuildPool pool(&checking, BuildPoolOptions{2});
  CHECK(pool.ChecksFit());
  BuildRequest big = Request(64);
  big.op = testing::IronGemm(256, 512, 512, 256, 256, 256, 8);
  const absl::StatusOr<std::string> refused = pool.Fit(big);
  const absl::StatusOr<BuildOutcome> built = SimBuilder().Build(big);
  REQUIRE(refused.ok());
  REQUIRE(built.ok());
  CHECK_FALSE(refused->empty());
  CHECK(*refused == RefusalOf(*built));
  const absl::StatusOr<std::string> fits = pool.Fit(Request(64));
  REQUIRE(fits.ok());
  CHECK(fits->empty());
  CHECK(checking.builds == 0);
  CHECK(checking.fits == 2);
  CHECK(pool.stats().fit_checks == 2);
  CHECK(pool.stats().builds == 0);
  // A design built already is answered from the pool's memory.
  REQUIRE(pool.Build(Request(64)).ok());
  REQUIRE(pool.Fit(Request(64)).ok());
  CHECK(checking.fits == 2);

  FitCountingBuilder building(false);  // an older builder: Fit builds
  BuildPool old(&building, BuildPoolOptions{2});
  CHECK_FALSE(old.ChecksFit());
  const absl::StatusOr<std::string> by_build = old.Fit(big);
  REQUIRE(by_build.ok());
  CHECK(*by_build == *refused);
  REQUIRE(old.Fit(Request(64)).ok());
  CHECK(building.builds == 2);
  CHECK(old.stats().fit_checks == 0);
  CHECK(old.stats().builds == 2);
}

TEST_CASE("the sim's fit check is free and its next build is the first") {
  SimBuildCost cost;
  cost.per_design = absl::Seconds(4);
  SimBuilder builder(cost);
  CHECK(builder.ChecksFit());
  REQUIRE(builder.Fit(Request(64)).ok());
  CHECK(builder.spent_seconds() == 0);
  REQUIRE(builder.Build(Request(64, 9)).ok());
  CHECK(builder.spent_seconds() == Approx(4));
  BuildRequest bad = Request(64);
  bad.platform.generation = "npu9";
  CHECK(absl::IsInvalidArgument(builder.Fit(bad).status()));
}

}  // namespace
}  // namespace irontune
