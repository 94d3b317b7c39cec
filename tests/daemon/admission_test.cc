#include "daemon/scheduler/admission.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/recording.h"
#include "daemon/scheduler/requests.h"
#include "daemon/sim/sim_device.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

Platform Strix() { return *(*MakeSimDevice("sim:npu2"))->GetPlatform(); }

v1::MeasureRequest SiluMeasure() {
  v1::MeasureRequest request;
  *request.mutable_operator_() = testing::Silu8192();
  return request;
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST_CASE("admission: a small Measure is admitted with its estimates") {
  const AdmissionLimits limits;
  auto cost = AdmitMeasure(SiluMeasure(), Strix(), limits);
  REQUIRE(cost.ok());
  // 16 KiB in for each of 9 distinct steps, shared; 16 KiB out in each of
  // 1 + 9 steps; the output read back, twice for the default (no copy of
  // the inputs to judge); and what any job allocates.
  CHECK(cost->memory_bytes >=
        kJobOverheadBytes + (9 * 16 + 10 * 16 + 32) * 1024);
  CHECK(cost->memory_bytes < kJobOverheadBytes + (1 << 20));
  CHECK(cost->device_seconds > 0);
}

TEST_CASE("admission: repeats 65536 is refused for its memory") {
  // A SiLU of 256 Ki elements: 512 KiB of output a step.
  v1::MeasureRequest request = SiluMeasure();
  v1::Operator* op = request.mutable_operator_();
  op->mutable_params(0)->mutable_value()->set_int_value(262144);
  for (v1::Buffer& b : *op->mutable_buffers()) b.set_shape(0, 262144);
  request.set_repeats(256);
  REQUIRE(ValidateMeasureRequest(request).ok());
  CHECK(AdmitMeasure(request, Strix(), AdmissionLimits()).ok());
  request.set_repeats(kMaxRepeats);
  REQUIRE(ValidateMeasureRequest(request).ok());
  const auto cost = AdmitMeasure(request, Strix(), AdmissionLimits());
  REQUIRE(absl::IsResourceExhausted(cost.status()));
  CHECK_THAT(Message(cost.status()),
             Catch::StartsWith("the job's estimated peak memory: 64.0 GiB"));
  CHECK_THAT(Message(cost.status()),
             Catch::Contains("exceeds the limit of 8.0 GiB (--job-memory)"));
  AdmissionLimits roomy;
  roomy.job_memory_bytes = roomy.memory_limit_bytes = 128ull << 30;
  CHECK(AdmitMeasure(request, Strix(), roomy).ok());
}

TEST_CASE("admission: a job bigger than the daemon's budget never runs") {
  AdmissionLimits limits;
  limits.memory_limit_bytes = 1 << 20;
  v1::MeasureRequest request = SiluMeasure();
  request.set_repeats(64);
  const auto cost = AdmitMeasure(request, Strix(), limits);
  REQUIRE(absl::IsResourceExhausted(cost.status()));
  CHECK_THAT(Message(cost.status()), Catch::Contains("(--memory-limit)"));
}

TEST_CASE("admission: the most rounds and calls are refused for device time") {
  v1::MeasureRequest request = SiluMeasure();
  for (int64_t tile : {512, 2048}) {
    v1::Field* f = request.add_settings()->add_tunables();
    f->set_name("tile_size");
    f->mutable_value()->set_int_value(tile);
  }
  request.mutable_timing()->set_rounds(kMaxRounds);
  request.mutable_timing()->set_calls(kMaxCalls);
  REQUIRE(ValidateMeasureRequest(request).ok());
  const auto cost = AdmitMeasure(request, Strix(), AdmissionLimits());
  REQUIRE(absl::IsResourceExhausted(cost.status()));
  CHECK_THAT(Message(cost.status()),
             Catch::StartsWith("the job's estimated device time: "));
  CHECK_THAT(Message(cost.status()),
             Catch::Contains("exceeds the limit of 21600 s "
                             "(--job-device-seconds"));
}

TEST_CASE("admission: many GiB of buffers within the recording limits") {
  // A SiLU of 2^33 elements: 16 GiB a buffer, under the 64 GiB limit.
  v1::Operator op = testing::Silu8192();
  op.mutable_params(0)->mutable_value()->set_int_value(int64_t{1} << 33);
  for (v1::Buffer& b : *op.mutable_buffers()) b.set_shape(0, uint64_t{1} << 33);
  v1::AutotuneRequest request;
  *request.mutable_calls() = testing::OneCall(
      "big", {op, testing::Add2048({256, 512})}, {{"x", "y"}, {"p", "q", "r"}});
  REQUIRE(ValidateAutotuneRequest(request).ok());
  *request.mutable_calls()
       ->mutable_operators(0)
       ->mutable_tunables(0)
       ->add_domain() = testing::Int(2048);
  REQUIRE(ValidateAutotuneRequest(request).ok());
  const auto cost = AdmitAutotune(request, Strix(), AdmissionLimits());
  REQUIRE(absl::IsResourceExhausted(cost.status()));
  CHECK_THAT(Message(cost.status()), Catch::Contains("(--job-memory)"));
}

TEST_CASE("admission: a profile over its limit is refused by its size") {
  v1::AutotuneRequest request;
  *request.mutable_calls() = testing::AddCalls();
  v1::ProfileEntry* e = request.mutable_profile()->add_entries();
  e->set_operator_class("GEMM");
  v1::Field* f = e->add_dims();
  f->set_name("M");
  f->mutable_value()->set_string_value(std::string(17 << 20, 'x'));
  const auto cost = AdmitAutotune(request, Strix(), AdmissionLimits());
  REQUIRE(absl::IsResourceExhausted(cost.status()));
  CHECK(Message(cost.status()) ==
        "profile: 17.0 MiB exceeds the limit of 16.0 MiB "
        "(--max-profile-bytes)");
}

TEST_CASE("admission: the example model is admitted under the defaults") {
  auto calls = LoadRecording(std::string(IRONTUNE_SOURCE_DIR) +
                             "/examples/llama-3.2-1b.rec");
  REQUIRE(calls.ok());
  v1::AutotuneRequest request;
  *request.mutable_calls() = *calls;
  REQUIRE(ValidateAutotuneRequest(request).ok());
  const auto cost = AdmitAutotune(request, Strix(), AdmissionLimits());
  INFO(cost.status().ToString());
  REQUIRE(cost.ok());
  // Its largest shape, the lm-head GEMV, holds its weights once (shared by
  // every image and the judge), beside what the job allocates besides and
  // what the allocator may keep: under 1 GiB in all.
  const uint64_t weights = uint64_t{128256} * 2048 * 2;
  CHECK(cost->memory_bytes >=
        weights + kAutotuneSlackBytes + kJobOverheadBytes);
  CHECK(cost->memory_bytes < uint64_t{1} << 30);
}

TEST_CASE("admission: shapes searched at once add up their memory") {
  auto calls = LoadRecording(std::string(IRONTUNE_SOURCE_DIR) +
                             "/examples/llama-3.2-1b.rec");
  REQUIRE(calls.ok());
  v1::AutotuneRequest request;
  *request.mutable_calls() = *calls;
  AdmissionLimits limits;
  limits.job_memory_bytes = limits.memory_limit_bytes = uint64_t{64} << 30;
  const auto one = AdmitAutotune(request, Strix(), limits, 1);
  const auto two = AdmitAutotune(request, Strix(), limits, 2);
  const auto four = AdmitAutotune(request, Strix(), limits, 4);
  REQUIRE(one.ok());
  REQUIRE(two.ok());
  REQUIRE(four.ok());
  CHECK(AdmitAutotune(request, Strix(), limits)->memory_bytes ==
        one->memory_bytes);
  // The lm-head's weights, and beside them at least the next largest
  // shape's inputs: a 2048 x 8192 bf16 weight, once per distinct step.
  const uint64_t next = uint64_t{2048} * 8192 * 2;
  CHECK(two->memory_bytes >= one->memory_bytes + next);
  CHECK(four->memory_bytes > two->memory_bytes);
  // The device time does not change with how the shapes are interleaved.
  CHECK(four->device_seconds == one->device_seconds);
}

TEST_CASE("admission: a budget caps an Autotune's device-time estimate") {
  auto calls = LoadRecording(std::string(IRONTUNE_SOURCE_DIR) +
                             "/examples/llama-3.2-1b.rec");
  REQUIRE(calls.ok());
  v1::AutotuneRequest request;
  *request.mutable_calls() = *calls;
  const auto full = AdmitAutotune(request, Strix(), AdmissionLimits());
  REQUIRE(full.ok());
  REQUIRE(full->device_seconds > 2);
  AdmissionLimits limits;
  limits.job_device_seconds = full->device_seconds / 2;
  CHECK(absl::IsResourceExhausted(
      AdmitAutotune(request, Strix(), limits).status()));
  request.set_budget_seconds(full->device_seconds / 4);
  const auto capped = AdmitAutotune(request, Strix(), limits);
  REQUIRE(capped.ok());
  CHECK(capped->device_seconds == request.budget_seconds());
}

}  // namespace
}  // namespace irontune
