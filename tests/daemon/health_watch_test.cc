#include "daemon/process/health_watch.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace irontune {
namespace {

// Waits up to 10 s for `done`.
template <typename F>
bool Eventually(F done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

TEST_CASE("HealthWatch: NOT_SERVING while hung, SERVING once it beats") {
  std::atomic<bool> alive{true};
  std::mutex mu;
  std::vector<bool> set;
  auto seen = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return set;
  };
  HealthWatch watch([&] { return alive.load(); },
                    [&](bool serving) {
                      std::lock_guard<std::mutex> lock(mu);
                      set.push_back(serving);
                    },
                    absl::Milliseconds(1));
  watch.Start();
  alive = false;
  REQUIRE(Eventually([&] { return seen().size() == 1; }));
  CHECK(seen() == std::vector<bool>{false});
  alive = true;
  REQUIRE(Eventually([&] { return seen().size() == 2; }));
  watch.Stop();
  // Each change once, nothing while it held.
  CHECK(seen() == std::vector<bool>{false, true});
}

}  // namespace
}  // namespace irontune
