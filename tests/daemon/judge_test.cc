#include "daemon/tune/judge.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>

#include "daemon/base/sha256.h"
#include "daemon/npu/device.h"
#include "daemon/sim/sim_device.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

using testing::BuildOrDie;
using testing::Gemm;
using testing::RandomBf16;
using testing::Shared;

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

SharedInputs Inputs() {
  return Shared(
      {{"a", RandomBf16(256 * 256, 7)}, {"b", RandomBf16(256 * 256, 8)}});
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
std::map<std::string, std::string> RunOnSim(Device& device,
                                            const v1::Operator& op,
                                            const SharedInputs& inputs) {
  BuildOutcome built = BuildOrDie(op, "npu2");
  REQUIRE(built.artifact.has_value());
  absl::StatusOr<std::unique_ptr<Image>> image = device.Load(*built.artifact);
  REQUIRE(image.ok());
  for (const ArtifactBuffer& b : built.artifact->buffers) {
    const std::string& name = op.buffers(b.op_buffer).name();
    if (b.fills) REQUIRE((*image)->WriteBuffer(b.name, *inputs.at(name)).ok());
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
  // A missing gate is named with its class and field, not defaulted.
  CHECK(Judge(GemmOp(64, v1::Tolerance()), GemmOp(32), inputs, written, {}) ==
        "only a bit-identical output is admitted: GEMM states no tolerance "
        "(the default's Operator.tolerance is unset)");
  CHECK(Judge(GemmOp(64), GemmOp(32, v1::Tolerance()), inputs, written, {}) ==
        "only a bit-identical output is admitted: GEMM states no tolerance "
        "(its own Operator.tolerance is unset)");
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
  // No value for the bound is refused, as IRON refuses it.
  CHECK(Judge(op, op, inputs, written, {}) ==
        "only a bit-identical output is admitted under a bound (no value for "
        "rows, which bounds M)");
  // The whole extent is judged by the reference.
  CHECK(Judge(op, op, inputs, written, {{"rows", 256}}) == std::nullopt);
}

TEST_CASE("the sim's GEMM passes its gate, a faulty image does not",
          "[judge]") {
  auto device = MakeSimDevice("sim:npu2");
  REQUIRE(device.ok());
  const v1::Operator def = GemmOp(64);
  const auto inputs = Inputs();
  const auto written = RunOnSim(**device, def, inputs);
  CHECK(Judge(def, def, inputs, written, {}) == std::nullopt);

  // Elements 3 and 700 corrupted by +1.0 (700 may lie outside the sampled
  // rows): refused, naming the buffer.
  CorruptingDevice faulty(device->get());
  const auto bad = RunOnSim(faulty, def, inputs);
  REQUIRE(bad.at("c") != written.at("c"));
  const std::optional<std::string> why = Judge(def, def, inputs, bad, {});
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::StartsWith("c under the default's gate: "));
  CHECK_THAT(
      *why,
      Catch::Matches("c under the default's gate: [12] of [0-9]+ elements miss "
                     "\\(0 allowed\\); worst element (3|700) off by "
                     "[0-9.]+ > [0-9.]+"));

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

// ElementwiseAdd over 64 bf16 elements: y = a + b. Its reference computes
// every element, so the gates are tested element by element.
constexpr int kN = 64;

v1::Operator AddOp(v1::Tolerance gate) {
  v1::Operator op;
  op.set_class_name("ElementwiseAdd");
  v1::Param* size = op.add_params();
  size->set_name("size");
  size->mutable_value()->set_int_value(kN);
  for (const char* name : {"a", "b", "y"}) {
    v1::Buffer* b = op.add_buffers();
    b->set_name(name);
    b->set_dtype(v1::DTYPE_BF16);
    b->add_shape(kN);
    b->set_role(std::string_view(name) == "y" ? v1::BUFFER_ROLE_OUT
                                              : v1::BUFFER_ROLE_IN);
  }
  *op.mutable_tolerance() = std::move(gate);
  return op;
}

v1::Tolerance Ulps(int n, double atol = 0, double frac = 0) {
  v1::Tolerance t;
  t.mutable_bf16_ulps()->set_ulps(n);
  t.mutable_bf16_ulps()->set_atol(atol);
  t.set_max_mismatch_frac(frac);
  return t;
}

// Inputs whose sums are normal bf16 values well away from zero.
SharedInputs AddInputs() {
  std::string a(2 * kN, '\0'), b(2 * kN, '\0');
  for (int i = 0; i < kN; ++i) {
    const uint16_t x = sim::FloatToBf16(1.0f + i / 16.0f);
    const uint16_t z = sim::FloatToBf16(0.5f);
    std::memcpy(a.data() + 2 * i, &x, 2);
    std::memcpy(b.data() + 2 * i, &z, 2);
  }
  return Shared({{"a", a}, {"b", b}});
}

// The exact sums, with elements `moved` shifted by `ulps` bf16 steps.
std::map<std::string, std::string> Sums(const std::vector<int>& moved,
                                        int ulps) {
  const auto in = AddInputs();
  std::string y(2 * kN, '\0');
  for (int i = 0; i < kN; ++i) {
    uint16_t bits = sim::FloatToBf16(testing::Bf16At(*in.at("a"), i) +
                                     testing::Bf16At(*in.at("b"), i));
    if (std::find(moved.begin(), moved.end(), i) != moved.end()) bits += ulps;
    std::memcpy(y.data() + 2 * i, &bits, 2);
  }
  return {{"y", y}};
}

TEST_CASE("bf16_ulps admits n ulps and refuses n + 1", "[judge]") {
  const auto in = AddInputs();
  const v1::Operator op = AddOp(Ulps(1));
  CHECK(Judge(op, op, in, Sums({}, 0), {}) == std::nullopt);
  CHECK(Judge(op, op, in, Sums({5}, 1), {}) == std::nullopt);
  CHECK(Judge(op, op, in, Sums({5}, -1), {}) == std::nullopt);
  const auto why = Judge(op, op, in, Sums({5}, 2), {});
  REQUIRE(why.has_value());
  CHECK(*why ==
        "y under the default's gate: 1 of 64 elements miss (0 allowed); "
        "worst element 5 off by 2 ulps > 1");
  // Two ulps pass a gate of two, and the setting's own gate counts too.
  CHECK(Judge(AddOp(Ulps(2)), AddOp(Ulps(2)), in, Sums({5}, 2), {}) ==
        std::nullopt);
  CHECK_THAT(Judge(AddOp(Ulps(2)), op, in, Sums({5}, 2), {}).value_or(""),
             Catch::StartsWith("y under its own gate: "));
}

TEST_CASE("bf16_ulps' atol admits an element off by less than it", "[judge]") {
  const auto in = AddInputs();
  // Element 0 is 1.5: a bf16 ulp there is 2^-7, so 3 ulps are 3 * 2^-7.
  const double err = 3.0 / 128;
  CHECK(Judge(AddOp(Ulps(1, err * 1.01)), AddOp(Ulps(1, err * 1.01)), in,
              Sums({0}, 3), {}) == std::nullopt);
  // The bound is strict: an error equal to atol misses.
  CHECK(Judge(AddOp(Ulps(1, err)), AddOp(Ulps(1, err)), in, Sums({0}, 3), {})
            .has_value());
}

TEST_CASE("max_mismatch_frac admits floor(frac * n) misses and no more",
          "[judge]") {
  const auto in = AddInputs();
  // floor(2.5 / 64 * 64) = 2 of 64 elements may miss.
  const v1::Operator op = AddOp(Ulps(0, 0, 2.5 / kN));
  CHECK(Judge(op, op, in, Sums({1, 9}, 1), {}) == std::nullopt);
  CHECK(Judge(op, op, in, Sums({1, 9, 30}, 1), {}) ==
        "y under the default's gate: 3 of 64 elements miss (2 allowed); "
        "worst element 1 off by 1 ulps > 0");
  // The same budget under a close gate.
  v1::Tolerance close = Close(0, 0);
  close.set_max_mismatch_frac(2.5 / kN);
  CHECK(Judge(AddOp(close), AddOp(close), in, Sums({1, 9}, 1), {}) ==
        std::nullopt);
  CHECK(Judge(AddOp(close), AddOp(close), in, Sums({1, 9, 30}, 1), {})
            .has_value());
  // A NaN where a number is due fails whatever the budget.
  auto nan = Sums({}, 0);
  const uint16_t bits = 0x7fc0;
  std::memcpy(nan.at("y").data() + 2 * 7, &bits, 2);
  CHECK_THAT(Judge(op, op, in, nan, {}).value_or(""),
             Catch::Contains("a non-finite one among them"));
}

TEST_CASE("the digest covers only the rows under the bound, in buffer order",
          "[judge]") {
  v1::Operator op;
  op.set_class_name("Softmax");
  for (auto [name, v] :
       {std::pair<const char*, int64_t>{"rows", 8}, {"cols", 4}}) {
    v1::Param* p = op.add_params();
    p->set_name(name);
    p->mutable_value()->set_int_value(v);
  }
  for (const char* name : {"x", "y"}) {
    v1::Buffer* b = op.add_buffers();
    b->set_name(name);
    b->set_dtype(v1::DTYPE_BF16);
    b->add_shape(8);
    b->add_shape(4);
  }
  v1::CallValue* count = op.add_values();
  count->set_name("count");
  count->set_symbol("count");
  count->set_bounds("rows");
  std::string y(8 * 4 * 2, '\x11');
  const CallValues three = {{"count", 3}};
  const std::string base = OutputDigest(op, {{"y", y}}, three);
  CHECK(RowsUnderBound(op, op.buffers(1), y, three).size() == 3 * 4 * 2);
  // A byte past row 3 does not change the digest; one in row 2 does.
  std::string past = y;
  past[3 * 4 * 2] = '\x22';
  CHECK(OutputDigest(op, {{"y", past}}, three) == base);
  std::string under = y;
  under[2 * 4 * 2 + 1] = '\x22';
  CHECK(OutputDigest(op, {{"y", under}}, three) != base);
  // Without a value for the bound the whole buffer counts.
  CHECK(OutputDigest(op, {{"y", past}}, {}) !=
        OutputDigest(op, {{"y", y}}, {}));
  // Buffers are digested in the operator's order, not by name.
  op.mutable_buffers(0)->set_name("z");
  const std::string a(8, 'a'), b(8, 'b');
  v1::Operator flat = op;
  flat.clear_values();
  for (v1::Buffer& buf : *flat.mutable_buffers()) {
    buf.clear_shape();
    buf.add_shape(4);
  }
  CHECK(OutputDigest(flat, {{"z", a}, {"y", b}}, {}) == Sha256Hex(a + b));
}

}  // namespace
}  // namespace irontune
