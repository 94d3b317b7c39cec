#include "daemon/tune/interleave.h"

#include <catch2/catch.hpp>
#include <deque>
#include <functional>

#include "tests/testing/tune_context.h"

namespace irontune {
namespace {

// An image whose calls take `us` each, with hooks to script CPU waits.
class FakeImage : public Image {
 public:
  explicit FakeImage(double us, int* clock) : us_(us), clock_(clock) {}

  absl::Status WriteValues(const std::map<std::string, int64_t>&) override {
    return absl::OkStatus();
  }
  absl::Status WriteBuffer(std::string_view, std::string_view) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ReadBuffer(std::string_view) override {
    return std::string();
  }
  absl::StatusOr<RunResult> Run() override {
    ++calls;
    ++*clock_;
    RunResult r;
    r.elapsed_us = us_;
    if (cpu_wait_at && cpu_wait_at(*clock_)) r.cpu_wait_us = 500;
    return r;
  }

  int calls = 0;
  std::function<bool(int)> cpu_wait_at;

 private:
  double us_;
  int* clock_;
};

// A device that only answers OtherHolders, from a script over the call
// clock shared with its images.
class FakeDevice : public Device {
 public:
  explicit FakeDevice(int* clock) : clock_(clock) {}
  absl::StatusOr<Platform> GetPlatform() override { return Platform(); }
  StackVersions GetStackVersions() override { return {}; }
  absl::StatusOr<std::unique_ptr<Image>> Load(const Artifact&) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<std::vector<int>> OtherHolders() override {
    ++polls;
    if (held && held(*clock_, polls)) return std::vector<int>{4242};
    return std::vector<int>{};
  }
  std::function<bool(int clock, int polls)> held;
  int polls = 0;

 private:
  int* clock_;
};

ResolvedTiming Timing(int rounds, int calls, int settle, double cutoff) {
  v1::Timing t;
  t.set_rounds(rounds);
  t.set_calls(calls);
  t.set_settle(settle);
  t.set_cutoff(cutoff);
  return ResolvedTiming(t);
}

std::unique_ptr<testing::LocalTuneContext> Context(Device* device) {
  return std::make_unique<testing::LocalTuneContext>(device, nullptr);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST_CASE("each round's figure is the median of its calls") {
  int clock = 0;
  FakeDevice device(&clock);
  FakeImage a(10, &clock), b(20, &clock);
  auto result = TimeInterleaved({&a, &b}, {0, 1}, Timing(4, 5, 2, 3.0), kInf,
                                IdleRules(), *Context(&device));
  REQUIRE(result.ok());
  REQUIRE(result->runs[0].rounds_us == std::vector<double>(4, 10.0));
  REQUIRE(result->runs[1].rounds_us == std::vector<double>(4, 20.0));
  // Warmed once, then 4 rounds of 5 calls.
  REQUIRE(a.calls == 1 + 4 * 5);
}

TEST_CASE("a slow setting is cut after settle rounds, the default never") {
  int clock = 0;
  FakeDevice device(&clock);
  FakeImage fast(10, &clock), slow(40, &clock), slow_default(50, &clock);
  // The default (group 0) is slowest of all and still never cut.
  auto result = TimeInterleaved({&slow_default, &fast, &slow}, {0, 1, 2},
                                Timing(8, 3, 2, 1.5), kInf, IdleRules(),
                                *Context(&device));
  REQUIRE(result.ok());
  REQUIRE(result->runs[0].rounds_us.size() == 8);
  REQUIRE(result->runs[1].rounds_us.size() == 8);
  REQUIRE(result->runs[2].rounds_us.size() == 2);
}

TEST_CASE("a carried-over fastest figure cuts a setting") {
  int clock = 0;
  FakeDevice device(&clock);
  FakeImage def(30, &clock), other(20, &clock);
  auto result =
      TimeInterleaved({&def, &other}, {0, 1}, Timing(6, 3, 3, 1.5),
                      /*fastest_us=*/10, IdleRules(), *Context(&device));
  REQUIRE(result.ok());
  REQUIRE(result->runs[1].rounds_us.size() == 3);
  REQUIRE(result->runs[0].rounds_us.size() == 6);
}

TEST_CASE("a group is judged by its slowest run") {
  int clock = 0;
  FakeDevice device(&clock);
  // Group 1's runs are 10 and 100; group 2's are 40 and 50. Group 1's
  // slowest (100) is over 1.5x group 2's (50): group 1 is cut.
  FakeImage def(60, &clock), a1(10, &clock), a2(100, &clock), b1(40, &clock),
      b2(50, &clock);
  auto result = TimeInterleaved({&def, &a1, &b1, &a2, &b2}, {0, 1, 2, 1, 2},
                                Timing(5, 2, 1, 1.5), kInf, IdleRules(),
                                *Context(&device));
  REQUIRE(result.ok());
  REQUIRE(result->runs[1].rounds_us.size() == 1);
  REQUIRE(result->runs[3].rounds_us.size() == 1);
  REQUIRE(result->runs[2].rounds_us.size() == 5);
}

TEST_CASE("rounds overlapping another process are discarded and repeated") {
  int clock = 0;
  FakeDevice device(&clock);
  FakeImage a(10, &clock);
  // Another process holds the NPU at the end of the first two rounds.
  device.held = [](int, int polls) { return polls == 2 || polls == 4; };
  auto result = TimeInterleaved({&a}, {0}, Timing(3, 4, 1, 1.5), kInf,
                                IdleRules(), *Context(&device));
  REQUIRE(result.ok());
  REQUIRE(result->discarded_rounds == 2);
  REQUIRE(result->runs[0].rounds_us.size() == 3);
  REQUIRE(a.calls == 1 + (3 + 2) * 4);
}

TEST_CASE("waiting for the NPU is bounded") {
  int clock = 0;
  FakeDevice device(&clock);
  FakeImage a(10, &clock);
  device.held = [](int, int) { return true; };
  IdleRules rules;
  rules.idle_timeout = absl::Seconds(20);
  rules.idle_poll = absl::Seconds(5);
  auto result = TimeInterleaved({&a}, {0}, Timing(3, 4, 1, 1.5), kInf, rules,
                                *Context(&device));
  REQUIRE(absl::IsDeadlineExceeded(result.status()));
  REQUIRE_THAT(std::string(result.status().message()),
               Catch::Contains("process 4242"));
  REQUIRE(device.polls == 5);  // 0, 5, 10, 15, 20 s
}

TEST_CASE("a call that waited for a CPU is refused and its round repeated") {
  int clock = 0;
  FakeDevice device(&clock);
  FakeImage a(10, &clock);
  a.cpu_wait_at = [](int clock) { return clock == 3 || clock == 10; };
  auto result = TimeInterleaved({&a}, {0}, Timing(2, 4, 1, 1.5), kInf,
                                IdleRules(), *Context(&device));
  REQUIRE(result.ok());
  REQUIRE(result->refused_calls == 2);
  REQUIRE(result->runs[0].rounds_us.size() == 2);
}

TEST_CASE("calls that always wait for a CPU end the timing") {
  int clock = 0;
  FakeDevice device(&clock);
  FakeImage a(10, &clock);
  a.cpu_wait_at = [](int clock) { return clock > 1; };
  auto result = TimeInterleaved({&a}, {0}, Timing(2, 4, 1, 1.5), kInf,
                                IdleRules(), *Context(&device));
  REQUIRE(absl::IsAborted(result.status()));
}

TEST_CASE("cancellation is seen between rounds") {
  int clock = 0;
  FakeDevice device(&clock);
  FakeImage a(10, &clock);
  auto context = Context(&device);
  context->cancel_when = [&] { return clock > 10; };
  auto result = TimeInterleaved({&a}, {0}, Timing(8, 4, 1, 1.5), kInf,
                                IdleRules(), *context);
  REQUIRE(absl::IsCancelled(result.status()));
  REQUIRE(a.calls < 1 + 8 * 4);
}

TEST_CASE("cancellation is seen between the images of a round") {
  int clock = 0;
  FakeDevice device(&clock);
  FakeImage a(10, &clock), b(10, &clock);
  auto context = Context(&device);
  // True once a has run its first round's calls (2 warm-ups + 4).
  context->cancel_when = [&] { return clock >= 6; };
  auto result = TimeInterleaved({&a, &b}, {0, 1}, Timing(8, 4, 1, 1.5), kInf,
                                IdleRules(), *context);
  REQUIRE(absl::IsCancelled(result.status()));
  CHECK(a.calls == 1 + 4);
  CHECK(b.calls == 1);  // warmed, never timed
}

}  // namespace
}  // namespace irontune
