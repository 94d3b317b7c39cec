#include "daemon/ops/reference.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "common/value.h"
#include "daemon/ops/numeric.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

using testing::AsF32;
using testing::F32;

void Param(v1::Operator& op, const std::string& name, int64_t v) {
  testing::AddParam(op, name, v);
}

void Buffer(v1::Operator& op, const std::string& name, v1::BufferRole role,
            std::vector<uint64_t> shape, v1::DType dtype = v1::DTYPE_F32) {
  v1::Buffer* b = op.add_buffers();
  b->set_name(name);
  b->set_role(role);
  b->set_dtype(dtype);
  for (uint64_t e : shape) b->add_shape(e);
}

v1::Operator Op(const std::string& cls) {
  v1::Operator op;
  op.set_class_name(cls);
  return op;
}

Reference Run(const v1::Operator& op,
              const std::map<std::string, std::string>& inputs,
              const CallValues& values = {}) {
  absl::StatusOr<Reference> r =
      ReferenceOutputs(op, testing::Shared(inputs), values);
  REQUIRE(r.ok());
  return *std::move(r);
}

TEST_CASE("sampled rows are j * rows / r, rounded down, at any size",
          "[reference]") {
  constexpr int64_t k31 = int64_t{1} << 31;
  CHECK(SampleRow(3, 4, 10) == 7);
  CHECK(SampleRow(0, 5, 1000) == 0);
  // Either side of the 64-bit product's bound.
  CHECK(SampleRow(k31 - 1, k31, k31 - 1) == k31 - 2);
  CHECK(SampleRow(k31 + 5, int64_t{1} << 32, int64_t{1} << 40) == (k31 + 5)
                                                                      << 8);
  CHECK(SampleRow(k31 - 1, k31, int64_t{1} << 62) ==
        (int64_t{1} << 62) - (int64_t{1} << 31));
}

TEST_CASE("GEMM reference, both layouts", "[reference]") {
  v1::Operator op = Op("GEMM");
  Param(op, "M", 2);
  Param(op, "K", 3);
  Param(op, "N", 2);
  Buffer(op, "A", v1::BUFFER_ROLE_IN, {2, 3});
  Buffer(op, "B", v1::BUFFER_ROLE_IN, {3, 2});
  Buffer(op, "C", v1::BUFFER_ROLE_OUT, {2, 2});
  const std::map<std::string, std::string> in = {
      {"A", F32({1, 2, 3, 4, 5, 6})}, {"B", F32({1, 0, 0, 1, 1, 1})}};
  Reference r = Run(op, in);
  CHECK(AsF32(r.outputs.at("C")) == std::vector<float>{4, 5, 10, 11});
  CHECK(r.computed.at("C").Elements() == 4);
  CHECK(r.computed.at("C").RowIndices() == std::vector<int64_t>{0, 1});
  CHECK(r.outputs.count("A") == 0);

  // c_col_maj: C is [N, M]; b_col_maj: B is [N, K].
  Param(op, "c_col_maj", 1);
  Param(op, "b_col_maj", 1);
  r = Run(op, {{"A", F32({1, 2, 3, 4, 5, 6})}, {"B", F32({1, 0, 1, 0, 1, 1})}});
  CHECK(AsF32(r.outputs.at("C")) == std::vector<float>{4, 10, 5, 11});
  const ComputedRows& c = r.computed.at("C");
  CHECK(c.ElementIndex(0) == 0);  // row 0, col 0
  CHECK(c.ElementIndex(1) == 2);  // row 0, col 1 at 1 * M
  CHECK(c.ElementIndex(2) == 1);  // row 1, col 0
}

TEST_CASE("GEMM reference samples rows as the sim does", "[reference]") {
  v1::Operator op = Op("GEMM");
  Param(op, "M", 256);
  Param(op, "K", 1024);
  Param(op, "N", 1024);
  Buffer(op, "A", v1::BUFFER_ROLE_IN, {256, 1024}, v1::DTYPE_BF16);
  Buffer(op, "B", v1::BUFFER_ROLE_IN, {1024, 1024}, v1::DTYPE_BF16);
  Buffer(op, "C", v1::BUFFER_ROLE_OUT, {256, 1024}, v1::DTYPE_F32);
  std::string ones_a(256 * 1024 * 2, '\0'), ones_b(1024 * 1024 * 2, '\0');
  for (size_t i = 0; i < ones_a.size(); i += 2) {
    const uint16_t one = FloatToBf16(1.0f);
    std::memcpy(&ones_a[i], &one, 2);
  }
  for (size_t i = 0; i < ones_b.size(); i += 2) {
    const uint16_t one = FloatToBf16(1.0f);
    std::memcpy(&ones_b[i], &one, 2);
  }
  Reference r = Run(op, {{"A", ones_a}, {"B", ones_b}});
  // 2^25 multiply-adds / (K * N) = 32 rows: every 8th.
  const ComputedRows& c = r.computed.at("C");
  CHECK(c.computed == 32);
  CHECK(c.RowIndices().front() == 0);
  CHECK(c.RowIndices()[1] == 8);
  const std::vector<float> out = AsF32(r.outputs.at("C"));
  CHECK(out[8 * 1024 + 5] == 1024.0f);
  CHECK(out[9 * 1024 + 5] == 0.0f);  // not sampled

  // A per-call value bounding M: only the rows in use.
  v1::CallValue* v = op.add_values();
  v->set_name("rows");
  v->set_symbol("M_used");
  v->set_bounds("M");
  r = Run(op, {{"A", ones_a}, {"B", ones_b}}, {{"rows", 3}});
  CHECK(r.computed.at("C").rows == 3);
  CHECK(r.computed.at("C").RowIndices() == std::vector<int64_t>{0, 1, 2});
}

TEST_CASE("GEMM reference gives bit for bit the sums element by element",
          "[reference]") {
  constexpr int64_t m = 8, k = 300, n = 70;
  std::string a(m * k * 2, '\0'), b(k * n * 2, '\0');
  for (int64_t i = 0; i < m * k; ++i)
    StoreElement(v1::DTYPE_BF16, a.data(), i, std::sin(0.37f * i));
  for (int64_t i = 0; i < k * n; ++i)
    StoreElement(v1::DTYPE_BF16, b.data(), i, std::cos(0.11f * i) - 0.25f);
  for (const bool b_col : {false, true}) {
    v1::Operator op = Op("GEMM");
    Param(op, "M", m);
    Param(op, "K", k);
    Param(op, "N", n);
    Param(op, "b_col_maj", b_col ? 1 : 0);
    Buffer(op, "A", v1::BUFFER_ROLE_IN, {m, k}, v1::DTYPE_BF16);
    Buffer(op, "B", v1::BUFFER_ROLE_IN, {k, n}, v1::DTYPE_BF16);
    Buffer(op, "C", v1::BUFFER_ROLE_OUT, {m, n}, v1::DTYPE_F32);
    const std::vector<float> out =
        AsF32(Run(op, {{"A", a}, {"B", b}}).outputs.at("C"));
    std::vector<float> want(m * n);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t col = 0; col < n; ++col) {
        double sum = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double av = LoadElement(v1::DTYPE_BF16, a.data(), i * k + kk);
          const double bv = LoadElement(v1::DTYPE_BF16, b.data(),
                                        b_col ? col * k + kk : kk * n + col);
          sum += av * bv;
        }
        want[i * n + col] = static_cast<float>(sum);
      }
    }
    CHECK(out == want);
  }
}

TEST_CASE("GEMV reference, batched", "[reference]") {
  v1::Operator op = Op("GEMV");
  Param(op, "M", 2);
  Param(op, "K", 3);
  Param(op, "num_batches", 2);
  Buffer(op, "A", v1::BUFFER_ROLE_IN, {2, 3});
  Buffer(op, "x", v1::BUFFER_ROLE_IN, {2, 3});
  Buffer(op, "y", v1::BUFFER_ROLE_OUT, {2, 2});
  Reference r = Run(
      op, {{"A", F32({1, 2, 3, 4, 5, 6})}, {"x", F32({1, 1, 1, 1, 0, -1})}});
  CHECK(AsF32(r.outputs.at("y")) == std::vector<float>{6, 15, -2, -2});
  CHECK(r.computed.at("y").Elements() == 4);
  CHECK(r.computed.at("y").ElementIndex(2) == 2);  // batch 1, row 0
}

TEST_CASE("element-wise references", "[reference]") {
  for (const auto& [cls, want] :
       std::vector<std::pair<std::string, std::vector<float>>>{
           {"ElementwiseAdd", {4, 6, -1}},
           {"ElementwiseMul", {3, 8, -2}},
       }) {
    CAPTURE(cls);
    v1::Operator op = Op(cls);
    Param(op, "size", 3);
    Buffer(op, "x", v1::BUFFER_ROLE_IN, {3});
    Buffer(op, "z", v1::BUFFER_ROLE_IN, {3});
    Buffer(op, "y", v1::BUFFER_ROLE_OUT, {3});
    Reference r = Run(op, {{"x", F32({1, 2, 1})}, {"z", F32({3, 4, -2})}});
    CHECK(AsF32(r.outputs.at("y")) == want);
  }
  v1::Operator silu = Op("SiLU");
  Buffer(silu, "x", v1::BUFFER_ROLE_IN, {2});
  Buffer(silu, "y", v1::BUFFER_ROLE_OUT, {2});
  Reference r = Run(silu, {{"x", F32({0, 1})}});
  const std::vector<float> y = AsF32(r.outputs.at("y"));
  CHECK(y[0] == 0.0f);
  CHECK(y[1] == Catch::Detail::Approx(0.7310586).epsilon(1e-6));
}

TEST_CASE("RMSNorm and Softmax references", "[reference]") {
  v1::Operator rms = Op("RMSNorm");
  Param(rms, "rows", 2);
  Buffer(rms, "x", v1::BUFFER_ROLE_IN, {2, 2});
  Buffer(rms, "w", v1::BUFFER_ROLE_IN, {2});
  Buffer(rms, "y", v1::BUFFER_ROLE_OUT, {2, 2});
  Reference r = Run(rms, {{"x", F32({3, 4, 0, 0})}, {"w", F32({2, 1})}});
  std::vector<float> y = AsF32(r.outputs.at("y"));
  const double inv = 1 / std::sqrt(12.5 + 1e-6);
  CHECK(y[0] == Catch::Detail::Approx(3 * inv * 2).epsilon(1e-6));
  CHECK(y[1] == Catch::Detail::Approx(4 * inv).epsilon(1e-6));
  CHECK(y[2] == 0.0f);
  CHECK(r.computed.at("y").row_elements == 2);

  v1::Operator softmax = Op("Softmax");
  Param(softmax, "rows", 2);
  Param(softmax, "cols", 2);
  Buffer(softmax, "x", v1::BUFFER_ROLE_IN, {4});
  Buffer(softmax, "y", v1::BUFFER_ROLE_OUT, {4});
  r = Run(softmax, {{"x", F32({0, static_cast<float>(std::log(3.0)), 7, 7})}});
  y = AsF32(r.outputs.at("y"));
  CHECK(y[0] == Catch::Detail::Approx(0.25).epsilon(1e-6));
  CHECK(y[1] == Catch::Detail::Approx(0.75).epsilon(1e-6));
  CHECK(y[2] == Catch::Detail::Approx(0.5).epsilon(1e-6));
}

TEST_CASE("RoPE reference rotates by the angle table", "[reference]") {
  // IRON's RoPE: angle row r (cos, sin interleaved) rotates x's row r;
  // method_type 1 rotates interleaved pairs, 0 the row's two halves.
  const float c = std::cos(1.0f), s = std::sin(1.0f);
  for (int method : {0, 1}) {
    CAPTURE(method);
    v1::Operator op = Op("RoPE");
    Param(op, "rows", 2);
    Param(op, "cols", 4);
    Param(op, "angle_rows", 2);
    Param(op, "method_type", method);
    Buffer(op, "x", v1::BUFFER_ROLE_IN, {2, 4});
    Buffer(op, "angles", v1::BUFFER_ROLE_IN, {2, 4});
    Buffer(op, "y", v1::BUFFER_ROLE_OUT, {2, 4});
    Reference r = Run(op, {{"x", F32({1, 2, 3, 4, 1, 1, 0, 0})},
                           {"angles", F32({1, 0, 1, 0, c, s, 1, 0})}});
    const std::vector<float> y = AsF32(r.outputs.at("y"));
    // Row 0: angle 0, unchanged.
    CHECK(std::vector<float>(y.begin(), y.begin() + 4) ==
          std::vector<float>{1, 2, 3, 4});
    // Row 1: pair 0 by 1 rad, pair 1 not at all. Pairs are (0, 1) and
    // (2, 3) interleaved, (0, 2) and (1, 3) as halves.
    if (method == 1) {
      CHECK(y[4] == Catch::Detail::Approx(c - s).epsilon(1e-6));
      CHECK(y[5] == Catch::Detail::Approx(s + c).epsilon(1e-6));
      CHECK(y[6] == 0);
      CHECK(y[7] == 0);
    } else {
      CHECK(y[4] == Catch::Detail::Approx(c).epsilon(1e-6));
      CHECK(y[6] == Catch::Detail::Approx(s).epsilon(1e-6));
      CHECK(y[5] == 1);
      CHECK(y[7] == 0);
    }
  }
}

TEST_CASE("MHA reference attends over the used length", "[reference]") {
  v1::Operator op = Op("MHA");
  Param(op, "num_heads", 2);
  Param(op, "num_KV_heads", 1);
  Param(op, "d", 1);
  Param(op, "seq_pad", 2);
  Buffer(op, "q", v1::BUFFER_ROLE_IN, {2, 1});
  Buffer(op, "k", v1::BUFFER_ROLE_IN, {1, 2, 1});
  Buffer(op, "v", v1::BUFFER_ROLE_IN, {1, 2, 1});
  Buffer(op, "o", v1::BUFFER_ROLE_OUT, {2, 1});
  v1::CallValue* cv = op.add_values();
  cv->set_name("kv_len");
  cv->set_symbol("kv_len");
  cv->set_bounds("seq_pad");
  const std::map<std::string, std::string> in = {
      {"q", F32({1, 0})}, {"k", F32({0, std::log(3.0f)})}, {"v", F32({2, 4})}};
  Reference r = Run(op, in);
  std::vector<float> o = AsF32(r.outputs.at("o"));
  // Head 0: scores 0 and ln 3 -> weights 1/4, 3/4. Head 1: equal weights.
  CHECK(o[0] == Catch::Detail::Approx(2 * 0.25 + 4 * 0.75).epsilon(1e-6));
  CHECK(o[1] == Catch::Detail::Approx(3).epsilon(1e-6));
  r = Run(op, in, {{"kv_len", 1}});
  o = AsF32(r.outputs.at("o"));
  CHECK(o[0] == Catch::Detail::Approx(2).epsilon(1e-6));
}

TEST_CASE("Sample reference takes each row's first maximum", "[reference]") {
  v1::Operator op = Op("Sample");
  Param(op, "vocab", 3);
  Buffer(op, "logits", v1::BUFFER_ROLE_IN, {2, 3});
  Buffer(op, "index", v1::BUFFER_ROLE_OUT, {2}, v1::DTYPE_I32);
  Reference r = Run(op, {{"logits", F32({1, 3, 3, 5, 0, 1})}});
  std::vector<int32_t> idx(2);
  std::memcpy(idx.data(), r.outputs.at("index").data(), 8);
  CHECK(idx == std::vector<int32_t>{1, 0});
}

TEST_CASE("no reference for unknown classes or odd buffers", "[reference]") {
  v1::Operator op = Op("Transpose");
  Buffer(op, "x", v1::BUFFER_ROLE_IN, {4});
  Buffer(op, "y", v1::BUFFER_ROLE_OUT, {4});
  CHECK(ReferenceOutputs(op, {}, {}).status().code() ==
        absl::StatusCode::kUnimplemented);

  v1::Operator gemm = Op("GEMM");
  Param(gemm, "M", 4);
  Param(gemm, "K", 4);
  Param(gemm, "N", 4);
  Buffer(gemm, "A", v1::BUFFER_ROLE_IN, {2, 2});  // too small
  Buffer(gemm, "B", v1::BUFFER_ROLE_IN, {4, 4});
  Buffer(gemm, "C", v1::BUFFER_ROLE_OUT, {4, 4});
  CHECK(ReferenceOutputs(gemm, {}, {}).status().code() ==
        absl::StatusCode::kUnimplemented);
  // An input of the wrong size.
  gemm.mutable_buffers(0)->set_shape(1, 4);
  gemm.mutable_buffers(0)->set_shape(0, 4);
  CHECK(ReferenceOutputs(gemm, testing::Shared({{"A", F32({1})}}), {})
            .status()
            .code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace irontune
