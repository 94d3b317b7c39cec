#include "daemon/tune/device_turn.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "daemon/sim/sim_builder.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

TEST_CASE("DeviceTurn: a freed turn goes to the lowest rank waiting") {
  DeviceTurn turn;
  turn.Take(0);
  absl::Mutex mu;
  std::vector<int> order;
  std::vector<std::thread> threads;
  // Queued before their threads start, so the order cannot depend on
  // which thread runs first.
  for (int rank : {3, 1, 2}) {
    turn.Queue(rank);
    threads.emplace_back([&, rank] {
      turn.TakeQueued(rank);
      {
        absl::MutexLock lock(&mu);
        order.push_back(rank);
      }
      turn.Give();
    });
  }
  CHECK(turn.held());
  turn.Give();
  for (std::thread& t : threads) t.join();
  CHECK(order == std::vector<int>{1, 2, 3});
  CHECK_FALSE(turn.held());
}

// A builder that notes whether the turn was held while it built, and
// says its builds are ready or not as told.
class TurnNotingBuilder : public SimBuilder {
 public:
  explicit TurnNotingBuilder(const DeviceTurn& turn) : turn_(turn) {}
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    held_while_building.push_back(turn_.held());
    return SimBuilder::Build(request);
  }
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override {
    held_while_building.push_back(turn_.held());
    return SimBuilder::Fit(request);
  }
  bool Ready(const BuildRequest& /*request*/) override { return ready; }
  void PrefetchAt(const BuildRequest& /*request*/, int rank) override {
    queued_at.push_back(rank);
  }
  bool ready = false;
  std::vector<int> queued_at;
  std::vector<bool> held_while_building;

 private:
  const DeviceTurn& turn_;
};

TEST_CASE("TurnBuilder: the turn is given up only while a wait is due") {
  DeviceTurn turn;
  TurnNotingBuilder inner(turn);
  TurnBuilder builder(&inner, &turn, 1, 1);
  BuildRequest request;
  request.op = testing::Gemm(256, 256, 256, 64, 64, 64, 1);
  request.platform = testing::PlatformOf("npu2");
  const bool ready = GENERATE(false, true);
  inner.ready = ready;
  turn.Take(1);
  REQUIRE(builder.Build(request).ok());
  REQUIRE(builder.Await(request, [] { return false; }).ok());
  REQUIRE(builder.Fit(request).ok());
  // Taken back before each returned.
  CHECK(turn.held());
  turn.Give();
  CHECK(inner.held_while_building == std::vector<bool>(3, ready));
}

TEST_CASE("TurnBuilder: a ready build gives way to a lower rank waiting") {
  DeviceTurn turn;
  TurnNotingBuilder inner(turn);
  inner.ready = true;
  TurnBuilder builder(&inner, &turn, 3, 3);
  BuildRequest request;
  request.op = testing::Gemm(256, 256, 256, 64, 64, 64, 1);
  request.platform = testing::PlatformOf("npu2");
  turn.Take(3);
  CHECK_FALSE(turn.Outranked(3));
  bool earlier_ran = false;
  turn.Queue(1);
  std::thread earlier([&] {
    turn.TakeQueued(1);
    earlier_ran = true;
    turn.Give();
  });
  CHECK(turn.Outranked(3));
  CHECK_FALSE(turn.Outranked(1));
  REQUIRE(builder.Await(request, [] { return false; }).ok());
  // The earlier rank had its turn before the call took it back.
  CHECK(earlier_ran);
  CHECK(turn.held());
  turn.Give();
  earlier.join();
}

TEST_CASE("TurnBuilder: prefetches queue at the queue rank, not the turn's") {
  DeviceTurn turn;
  TurnNotingBuilder inner(turn);
  TurnBuilder builder(&inner, &turn, /*rank=*/4, /*queue_rank=*/2);
  BuildRequest request;
  request.op = testing::Gemm(256, 256, 256, 64, 64, 64, 1);
  request.platform = testing::PlatformOf("npu2");
  builder.Prefetch(request);
  builder.PrefetchAt(request, 7);  // an explicit rank goes through
  CHECK(inner.queued_at == std::vector<int>{2, 7});
}

}  // namespace
}  // namespace irontune
