#include "daemon/sim/sim_builder.h"

#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "absl/time/clock.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

using testing::BuildOrDie;
using testing::Gemm;
using testing::Gemv;

std::string Refusal(const v1::Operator& op, const std::string& gen,
                    v1::Packaging packaging = v1::PACKAGING_XCLBIN_CHAIN) {
  BuildOutcome outcome = BuildOrDie(op, gen, 1, packaging);
  CHECK_FALSE(outcome.artifact.has_value());
  return outcome.refusal;
}

TEST_CASE("SimBuilder builds artifacts with hashes, buffers and symbols",
          "[sim][builder]") {
  v1::Operator op = Gemm(256, 256, 256, 64, 64, 64, 4);
  v1::CallValue* v = op.add_values();
  v->set_name("rows");
  v->set_symbol("M_used");
  v->set_bounds("M");
  BuildOutcome nine = BuildOrDie(op, "npu2", 9);
  REQUIRE(nine.artifact);
  const Artifact& a = *nine.artifact;
  CHECK(a.recipe_hash.size() == 64);
  CHECK(a.artifact_hash.size() == 64);
  CHECK(a.steps == 9);
  CHECK(a.packaging == v1::PACKAGING_FULL_ELF);
  REQUIRE(a.buffers.size() == 27);
  CHECK(a.buffers[10].name == "s3.b");
  CHECK(a.buffers[10].step == 3);
  CHECK(a.buffers[10].op_buffer == 1);
  CHECK(a.buffers[10].nbytes == 256 * 256 * 2);
  CHECK(a.buffers[10].fills);
  CHECK(a.buffers[11].drains);
  CHECK(a.symbols == std::vector<std::string>{"M_used"});

  BuildOutcome shared =
      BuildOrDie(op, "npu2", 9, v1::PACKAGING_XCLBIN_CHAIN, false);
  REQUIRE(shared.artifact);
  CHECK(shared.artifact->buffers.size() == 3);
  // The recipe is the design, not its packaging; the payload differs.
  CHECK(shared.artifact->recipe_hash == a.recipe_hash);
  CHECK(shared.artifact->artifact_hash != a.artifact_hash);
  // Domains do not change the design.
  v1::Operator with_domain = op;
  with_domain.mutable_tunables(0)->add_domain()->set_int_value(32);
  BuildOutcome same = BuildOrDie(with_domain, "npu2", 9);
  CHECK(same.artifact->artifact_hash == a.artifact_hash);
  // Another setting or generation is another recipe.
  CHECK(BuildOrDie(Gemm(256, 256, 256, 32, 64, 64, 4), "npu2", 9)
            .artifact->recipe_hash != a.recipe_hash);
  CHECK(BuildOrDie(op, "npu1", 9, v1::PACKAGING_XCLBIN_CHAIN)
            .artifact->recipe_hash != a.recipe_hash);

  CHECK(SimBuilder().Environment() == "sim-builder/1");
}

TEST_CASE("SimBuilder refuses what does not fit, saying why",
          "[sim][builder]") {
  CHECK_THAT(Refusal(Gemm(512, 512, 512, 128, 128, 128, 1), "npu2"),
             Catch::StartsWith("L1: 2 A + 2 B + 2 C tiles") &&
                 Catch::Contains("of 64.0 KiB"));
  CHECK_THAT(Refusal(Gemm(100, 256, 256, 64, 64, 64, 1), "npu2"),
             Catch::Equals("M 100 is not a multiple of 4 * tile_m = 256"));
  CHECK_THAT(Refusal(Gemm(256, 96, 256, 64, 64, 64, 1), "npu2"),
             Catch::Equals("K 96 is not a multiple of tile_k = 64"));
  CHECK_THAT(Refusal(Gemm(256, 256, 256, 64, 64, 64, 8), "npu2"),
             Catch::Equals(
                 "N 256 is not a multiple of tile_n * num_aie_columns = 512"));
  CHECK_THAT(
      Refusal(Gemm(256, 256, 512, 64, 64, 64, 16), "npu2"),
      Catch::Contains("num_aie_columns 16 exceeds the 8 columns of NPU Strix"));
  CHECK_THAT(Refusal(Gemm(256, 256, 512, 64, 64, 64, 8), "npu1"),
             Catch::Contains("exceeds the 4 columns of NPU Phoenix"));
  CHECK_THAT(Refusal(Gemm(256, 256, 256, 64, 64, 8, 1), "npu2"),
             Catch::Contains("tile_n 8 is not a multiple of 2t = 16"));
  CHECK_THAT(
      Refusal(Gemm(256, 256, 256, 64, 64, 64, 1), "npu1",
              v1::PACKAGING_FULL_ELF),
      Catch::Equals("npu1 has no full-ELF dispatch (xclbin chain only)"));
  CHECK_THAT(Refusal(Gemm(256, 256, 8192, 16, 16, 16, 1), "npu2"),
             Catch::Contains("iter allows 64"));

  // GEMV (docs/npu-facts.md: the real profile's setting fits, a larger input
  // tile does not).
  CHECK(
      BuildOrDie(Gemv(2048, 8192, 1, 256, 64, 8), "npu2").artifact.has_value());
  CHECK_THAT(Refusal(Gemv(2048, 8192, 2, 256, 64, 8), "npu2"),
             Catch::StartsWith("L1: "));
  CHECK_THAT(Refusal(Gemv(2048, 2048, 2, 3, 64, 8), "npu2"),
             Catch::Equals(
                 "tile_size_output 3 is not a multiple of tile_size_input 2"));
  // IRON derives kernel_vector_size (the widest legal width for K); a given
  // one must be legal (iron/operators/gemv.py _legal_kernel_vector_size).
  CHECK_THAT(Refusal(Gemv(2048, 2048, 1, 256, 8, 8), "npu2"),
             Catch::Equals("kernel_vector_size 8 is not legal for K 2048: K "
                           "must be a multiple of it and at least twice it "
                           "(legal here: 64, 32, 16)"));
  CHECK_THAT(Refusal(Gemv(2048, 96, 1, 256, 64, 8), "npu2"),
             Catch::Equals("kernel_vector_size 64 is not legal for K 96: K "
                           "must be a multiple of it and at least twice it "
                           "(legal here: 32, 16)"));
  CHECK_THAT(Refusal(Gemv(2048, 24, 1, 256, 16, 8), "npu2"),
             Catch::Equals("K 24 has no kernel vector width in {64, 32, 16} "
                           "with K a multiple of it and K >= 2 * width"));
}

TEST_CASE("SimBuilder rejects bad requests as errors", "[sim][builder]") {
  SimBuilder builder;
  BuildRequest request;
  request.op = Gemm(256, 256, 256, 64, 64, 64, 1);
  request.platform = testing::PlatformOf("npu9");
  CHECK(builder.Build(request).status().code() ==
        absl::StatusCode::kInvalidArgument);
  request.platform = testing::PlatformOf("npu2");
  request.steps = 0;
  CHECK(builder.Build(request).status().code() ==
        absl::StatusCode::kInvalidArgument);
  request.steps = 1;
  request.packaging = v1::PACKAGING_UNSPECIFIED;
  CHECK(builder.Build(request).status().code() ==
        absl::StatusCode::kInvalidArgument);
  request.packaging = v1::PACKAGING_FULL_ELF;
  request.op.mutable_buffers(0)->set_dtype(v1::DTYPE_UNSPECIFIED);
  CHECK(builder.Build(request).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("unknown classes build and run the generic copy", "[sim][builder]") {
  v1::Operator op;
  op.set_class_name("Transpose");
  testing::AddBuffer(op, "x", v1::BUFFER_ROLE_IN, {16});
  testing::AddBuffer(op, "y", v1::BUFFER_ROLE_OUT, {16});
  BuildOutcome built = BuildOrDie(op, "npu2");
  REQUIRE(built.artifact);
}

TEST_CASE("a stopped SimBuilder ends the build it spends on, with Cancelled") {
  for (SimBuildCost::Spend spend :
       {SimBuildCost::Spend::kCpu, SimBuildCost::Spend::kSleep}) {
    SimBuildCost cost;
    cost.per_design = absl::Seconds(600);
    cost.spend = spend;
    SimBuilder builder(cost);
    BuildRequest request;
    request.op = Gemm(256, 512, 512, 64, 64, 64, 4);
    request.platform.generation = "npu2";
    request.platform.name = "NPU Strix";
    request.packaging = v1::PACKAGING_XCLBIN_CHAIN;
    absl::StatusOr<BuildOutcome> outcome;
    std::thread building([&] { outcome = builder.Build(request); });
    absl::SleepFor(absl::Milliseconds(100));
    builder.Stop();
    building.join();
    CHECK(outcome.status().code() == absl::StatusCode::kCancelled);
    // Later builds do not start.
    CHECK(builder.Build(request).status().code() ==
          absl::StatusCode::kCancelled);
  }
}

}  // namespace
}  // namespace irontune
