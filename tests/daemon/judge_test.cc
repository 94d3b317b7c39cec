#include "daemon/tune/judge.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "daemon/npu/device.h"
#include "daemon/sim/sim_device.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

using testing::BuildOrDie;
using testing::Gemm;
using testing::RandomBf16;

v1::Tolerance Close(double atol, double rtol) {
  v1::Tolerance t;
  t.mutable_close()->set_atol(atol);
  t.mutable_close()->set_rtol(rtol);
  return t;
}

v1::Tolerance Exact() {
  v1::Tolerance t;
  t.mutable_exact();
  return t;
}

// A bf16 gate for GEMM sums of 256 products of values in (-1, 1): each
// setting rounds C to bf16 once per K chunk.
v1::Tolerance Bf16Gate() { return Close(0.125, 1.0 / 64); }

v1::Operator GemmOp(int64_t tile_k, v1::Tolerance gate = Bf16Gate()) {
  v1::Operator op = Gemm(256, 256, 256, 64, tile_k, 64, 1);
  *op.mutable_tolerance() = std::move(gate);
  return op;
}

std::map<std::string, std::string> Inputs() {
  return {{"a", RandomBf16(256 * 256, 7)}, {"b", RandomBf16(256 * 256, 8)}};
}

// Adds 1.0 to elements 3 and 700 of every drained buffer read back.
class CorruptingImage : public ImageWrapper {
 public:
  using ImageWrapper::ImageWrapper;
  absl::StatusOr<std::string> ReadBuffer(std::string_view name) override {
    absl::StatusOr<std::string> bytes = ImageWrapper::ReadBuffer(name);
    if (!bytes.ok() || name != "s0.c") return bytes;
    for (size_t i : {size_t{3}, size_t{700}}) {
      const float v = testing::Bf16At(*bytes, i) + 1.0f;
      const uint16_t bits = sim::FloatToBf16(v);
      std::memcpy(bytes->data() + 2 * i, &bits, 2);
    }
    return bytes;
  }
};

class CorruptingDevice : public DeviceWrapper {
 public:
  using DeviceWrapper::DeviceWrapper;

 protected:
  std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                   const Artifact&) override {
    return std::make_unique<CorruptingImage>(std::move(image));
  }
};

// What `op` writes on `device` for `inputs`, by operator buffer name.
std::map<std::string, std::string> RunOnSim(
    Device& device, const v1::Operator& op,
    const std::map<std::string, std::string>& inputs) {
  BuildOutcome built = BuildOrDie(op, "npu2");
  REQUIRE(built.artifact.has_value());
  absl::StatusOr<std::unique_ptr<Image>> image = device.Load(*built.artifact);
  REQUIRE(image.ok());
  for (const ArtifactBuffer& b : built.artifact->buffers) {
    const std::string& name = op.buffers(b.op_buffer).name();
    if (b.fills) REQUIRE((*image)->WriteBuffer(b.name, inputs.at(name)).ok());
  }
  REQUIRE((*image)->Run().ok());
  std::map<std::string, std::string> written;
  for (const ArtifactBuffer& b : built.artifact->buffers) {
    if (!b.drains) continue;
    absl::StatusOr<std::string> bytes = (*image)->ReadBuffer(b.name);
    REQUIRE(bytes.ok());
    written[op.buffers(b.op_buffer).name()] = *bytes;
  }
  return written;
}

TEST_CASE("a missing or exact gate admits only bit-identical output",
          "[judge]") {
  const auto inputs = Inputs();
  const std::map<std::string, std::string> written = {
      {"c", std::string(256 * 256 * 2, '\0')}};
  CHECK(Judge(GemmOp(64, Exact()), GemmOp(32), inputs, written, {}) ==
        "only a bit-identical output is admitted");
  CHECK(Judge(GemmOp(64), GemmOp(32, Exact()), inputs, written, {}) ==
        "only a bit-identical output is admitted");
  CHECK(Judge(GemmOp(64, v1::Tolerance()), GemmOp(32), inputs, written, {}) ==
        "only a bit-identical output is admitted");
  // An unknown class has no reference.
  v1::Operator odd = GemmOp(64);
  odd.set_class_name("Transpose");
  CHECK_THAT(Judge(odd, odd, inputs, written, {}).value_or(""),
             Catch::StartsWith("only a bit-identical output is admitted"));
}

TEST_CASE("a bound extent short of its param admits only bit-identical",
          "[judge]") {
  auto device = MakeSimDevice("sim:npu2");
  REQUIRE(device.ok());
  v1::Operator op = GemmOp(64);
  const auto inputs = Inputs();
  const auto written = RunOnSim(**device, op, inputs);
  v1::CallValue* v = op.add_values();
  v->set_name("rows");
  v->set_symbol("M_used");
  v->set_bounds("M");
  CHECK(Judge(op, op, inputs, written, {{"rows", 128}}) ==
        "only a bit-identical output is admitted under a bound");
  // The whole extent, or no value, is judged by the reference.
  CHECK(Judge(op, op, inputs, written, {{"rows", 256}}) == std::nullopt);
  CHECK(Judge(op, op, inputs, written, {}) == std::nullopt);
}

TEST_CASE("the sim's GEMM passes its gate, a faulty image does not",
          "[judge]") {
  auto device = MakeSimDevice("sim:npu2");
  REQUIRE(device.ok());
  const v1::Operator def = GemmOp(64);
  const auto inputs = Inputs();
  const auto written = RunOnSim(**device, def, inputs);
  CHECK(Judge(def, def, inputs, written, {}) == std::nullopt);

  // Elements 3 and 700 corrupted by +1.0: refused, naming the buffer.
  CorruptingDevice faulty(device->get());
  const auto bad = RunOnSim(faulty, def, inputs);
  REQUIRE(bad.at("c") != written.at("c"));
  const std::optional<std::string> why = Judge(def, def, inputs, bad, {});
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::StartsWith("c under the default's gate: worst "
                                     "element "));
  CHECK_THAT(*why, Catch::Matches(
                       "c under the default's gate: worst element (3|700) off "
                       "by [0-9.]+ > [0-9.]+"));

  // A tighter own gate fails under "its own".
  const v1::Operator tight = GemmOp(64, Close(0, 0));
  const auto tight_why = Judge(def, tight, inputs, written, {});
  REQUIRE(tight_why.has_value());
  CHECK_THAT(*tight_why, Catch::StartsWith("c under its own gate: "));

  // A missing output is refused.
  CHECK(Judge(def, def, inputs, {}, {}) ==
        "c under the default's gate: no output written");
}

TEST_CASE("another tile_k is close, not identical, and admitted", "[judge]") {
  auto device = MakeSimDevice("sim:npu2");
  REQUIRE(device.ok());
  const auto inputs = Inputs();
  const v1::Operator def = GemmOp(64), other = GemmOp(32);
  const auto ref_out = RunOnSim(**device, def, inputs);
  const auto other_out = RunOnSim(**device, other, inputs);
  CHECK(other_out.at("c") != ref_out.at("c"));
  CHECK(Judge(def, other, inputs, other_out, {}) == std::nullopt);
  // The same output under a gate tighter than bf16 rounding is refused.
  CHECK(Judge(GemmOp(64, Close(1e-6, 0)), other, inputs, other_out, {})
            .has_value());
}

}  // namespace
}  // namespace irontune
