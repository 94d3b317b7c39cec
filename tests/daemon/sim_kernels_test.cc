#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/ops/numeric.h"
#include "daemon/ops/reference.h"
#include "daemon/sim/kernels.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

using testing::AddBuffer;
using testing::AddParam;
using testing::AddTunable;

using testing::AsF32;
using testing::F32;

// Runs `op` on `inputs` (one per input buffer, in order); returns the
// outputs' bytes.
std::vector<std::string> Run(const v1::Operator& op,
                             std::vector<std::string> inputs,
                             const sim::CallValues& values = {}) {
  std::vector<std::string> storage(op.buffers_size());
  std::vector<sim::StepBuffer> buffers;
  size_t next = 0;
  for (int i = 0; i < op.buffers_size(); ++i) {
    const v1::Buffer& b = op.buffers(i);
    if (b.role() == v1::BUFFER_ROLE_IN && next < inputs.size())
      storage[i] = inputs[next++];
    buffers.push_back({&b, &storage[i], *sim::BufferBytes(b)});
  }
  sim::OpView view(op, values);
  REQUIRE(sim::ComputeStep(view, buffers).ok());
  std::vector<std::string> outs;
  for (int i = 0; i < op.buffers_size(); ++i) {
    if (op.buffers(i).role() != v1::BUFFER_ROLE_IN) outs.push_back(storage[i]);
  }
  return outs;
}

TEST_CASE("bf16 conversion rounds to nearest even", "[sim][kernels]") {
  CHECK(sim::FloatToBf16(1.0f) == 0x3f80);
  CHECK(sim::Bf16ToFloat(0x3f80) == 1.0f);
  CHECK(sim::FloatToBf16(1.00390625f) == 0x3f80);  // halfway: to even
  CHECK(sim::FloatToBf16(1.01171875f) == 0x3f82);  // halfway: to even (up)
  CHECK(std::isnan(sim::Bf16ToFloat(sim::FloatToBf16(NAN))));
}

TEST_CASE("element-wise kernels", "[sim][kernels]") {
  for (const std::string cls : {"ElementwiseAdd", "ElementwiseMul", "SiLU"}) {
    v1::Operator op;
    op.set_class_name(cls);
    AddParam(op, "size", 4);
    AddBuffer(op, "a", v1::BUFFER_ROLE_IN, {4}, v1::DTYPE_F32);
    if (cls != "SiLU")
      AddBuffer(op, "b", v1::BUFFER_ROLE_IN, {4}, v1::DTYPE_F32);
    AddBuffer(op, "c", v1::BUFFER_ROLE_OUT, {4}, v1::DTYPE_F32);
    std::vector<float> out =
        AsF32(Run(op, {F32({1, 2, -3, 0}), F32({4, 5, 6, 7})})[0]);
    if (cls == "ElementwiseAdd") CHECK(out == std::vector<float>{5, 7, 3, 7});
    if (cls == "ElementwiseMul")
      CHECK(out == std::vector<float>{4, 10, -18, 0});
    if (cls == "SiLU") {
      CHECK(out[0] == Approx(1 / (1 + std::exp(-1.0))));
      CHECK(out[3] == 0);
    }
  }
}

TEST_CASE("StoreElements stores each value as StoreElement does",
          "[sim][kernels]") {
  const std::vector<float> values = {0.0f,  -0.0f,  1.00390625f, -2.5f,
                                     1e30f, -1e30f, 65519.0f,    3.75f,
                                     NAN,   1e-8f,  -7.5f,       300.0f};
  for (v1::DType dtype :
       {v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_F32, v1::DTYPE_I8,
        v1::DTYPE_U8, v1::DTYPE_I16, v1::DTYPE_U16, v1::DTYPE_I32,
        v1::DTYPE_U32, v1::DTYPE_I64}) {
    const size_t width = static_cast<size_t>(sim::DTypeBytes(dtype));
    const size_t begin = 3;  // not from the buffer's start
    std::string one_by_one((begin + values.size()) * width, '\x5a');
    std::string in_a_run = one_by_one;
    for (size_t j = 0; j < values.size(); ++j)
      StoreElement(dtype, one_by_one.data(), begin + j, values[j]);
    StoreElements(dtype, in_a_run.data(), begin, values.size(), values.data());
    CHECK(in_a_run == one_by_one);
  }
}

TEST_CASE("element-wise kernels map every element as one at a time would",
          "[sim][kernels]") {
  // Past one run of decoded elements, with a partial last one.
  constexpr int64_t kSize = 40000;
  for (const std::string cls : {"ElementwiseMul", "SiLU"}) {
    v1::Operator op;
    op.set_class_name(cls);
    AddParam(op, "size", kSize);
    AddBuffer(op, "a", v1::BUFFER_ROLE_IN, {kSize}, v1::DTYPE_BF16);
    if (cls != "SiLU")
      AddBuffer(op, "b", v1::BUFFER_ROLE_IN, {kSize}, v1::DTYPE_BF16);
    AddBuffer(op, "c", v1::BUFFER_ROLE_OUT, {kSize}, v1::DTYPE_BF16);
    std::string a(2 * kSize, '\0'), b(2 * kSize, '\0');
    for (int64_t i = 0; i < kSize; ++i) {
      StoreElement(v1::DTYPE_BF16, a.data(), i, std::sin(0.01f * i) * 4);
      StoreElement(v1::DTYPE_BF16, b.data(), i, std::cos(0.003f * i) - 0.5f);
    }
    const std::string out = Run(op, {a, b})[0];
    const ElementMapper map(op);
    std::string want(2 * kSize, '\0');
    for (int64_t i = 0; i < kSize; ++i) {
      const float x = LoadElement(v1::DTYPE_BF16, a.data(), i);
      const float z =
          cls == "SiLU" ? x : LoadElement(v1::DTYPE_BF16, b.data(), i);
      StoreElement(v1::DTYPE_BF16, want.data(), i,
                   static_cast<float>(map(x, z)));
    }
    CHECK(out == want);
  }
}

TEST_CASE("RMSNorm and Softmax over rows", "[sim][kernels]") {
  v1::Operator rms;
  rms.set_class_name("RMSNorm");
  AddParam(rms, "rows", 2);
  AddParam(rms, "weighted", 1);
  AddParam(rms, "tile_size", 4);  // the row length (IRON's Rowwise)
  AddBuffer(rms, "x", v1::BUFFER_ROLE_IN, {2, 4}, v1::DTYPE_F32);
  AddBuffer(rms, "w", v1::BUFFER_ROLE_IN, {4}, v1::DTYPE_F32);
  AddBuffer(rms, "y", v1::BUFFER_ROLE_OUT, {2, 4}, v1::DTYPE_F32);
  std::vector<float> y =
      AsF32(Run(rms, {F32({1, 1, 1, 1, 2, 0, 0, 0}), F32({1, 2, 3, 4})})[0]);
  CHECK(y[0] == Approx(1));
  CHECK(y[3] == Approx(4));
  CHECK(y[4] == Approx(2 / std::sqrt(1.0)));  // mean(x^2) = 1

  v1::Operator sm;
  sm.set_class_name("Softmax");
  AddParam(sm, "rows", 2);
  AddParam(sm, "cols", 3);
  AddBuffer(sm, "x", v1::BUFFER_ROLE_IN, {2, 3}, v1::DTYPE_F32);
  AddBuffer(sm, "y", v1::BUFFER_ROLE_OUT, {2, 3}, v1::DTYPE_F32);
  std::vector<float> p = AsF32(Run(sm, {F32({0, 0, 0, 1, 2, 3})})[0]);
  CHECK(p[0] == Approx(1.0 / 3));
  CHECK(p[3] + p[4] + p[5] == Approx(1));
  CHECK(p[5] > p[4]);
}

TEST_CASE("Sample takes the argmax per row", "[sim][kernels]") {
  v1::Operator op;
  op.set_class_name("Sample");
  AddParam(op, "vocab", 4);
  AddParam(op, "k_max", 1);
  AddBuffer(op, "logits", v1::BUFFER_ROLE_IN, {2, 4}, v1::DTYPE_F32);
  AddBuffer(op, "token", v1::BUFFER_ROLE_OUT, {2}, v1::DTYPE_I32);
  std::string out = Run(op, {F32({0, 3, 1, 3, 9, 0, 0, 0})})[0];
  int32_t tokens[2];
  std::memcpy(tokens, out.data(), sizeof(tokens));
  CHECK(tokens[0] == 1);  // the first maximum
  CHECK(tokens[1] == 0);
}

TEST_CASE("MHA attends over the used kv length", "[sim][kernels]") {
  v1::Operator op;
  op.set_class_name("MHA");
  AddParam(op, "num_heads", 2);
  AddParam(op, "num_KV_heads", 1);
  AddParam(op, "d", 2);
  AddParam(op, "seq_pad", 4);
  AddBuffer(op, "q", v1::BUFFER_ROLE_IN, {2, 2}, v1::DTYPE_F32);
  AddBuffer(op, "k", v1::BUFFER_ROLE_IN, {1, 4, 2}, v1::DTYPE_F32);
  AddBuffer(op, "v", v1::BUFFER_ROLE_IN, {1, 4, 2}, v1::DTYPE_F32);
  AddBuffer(op, "o", v1::BUFFER_ROLE_OUT, {2, 2}, v1::DTYPE_F32);
  v1::CallValue* cv = op.add_values();
  cv->set_name("len");
  cv->set_symbol("kv_len");
  cv->set_bounds("seq_pad");
  const std::string q = F32({0, 0, 0, 0});  // uniform attention
  const std::string k = F32({1, 0, 0, 1, 5, 5, 7, 7});
  const std::string v = F32({1, 2, 3, 4, 100, 100, 100, 100});
  std::vector<float> used2 = AsF32(Run(op, {q, k, v}, {{"kv_len", 2}})[0]);
  CHECK(used2[0] == Approx(2));  // mean of the first two values only
  CHECK(used2[1] == Approx(3));
  CHECK(used2[2] == Approx(2));
  std::vector<float> all = AsF32(Run(op, {q, k, v})[0]);
  CHECK(all[0] == Approx(51));
}

TEST_CASE("RoPE rotates by the angle table", "[sim][kernels]") {
  v1::Operator op;
  op.set_class_name("RoPE");
  AddParam(op, "rows", 2);
  AddParam(op, "cols", 2);
  AddParam(op, "angle_rows", 2);
  AddBuffer(op, "x", v1::BUFFER_ROLE_IN, {2, 2}, v1::DTYPE_F32);
  AddBuffer(op, "angles", v1::BUFFER_ROLE_IN, {2, 2}, v1::DTYPE_F32);
  AddBuffer(op, "y", v1::BUFFER_ROLE_OUT, {2, 2}, v1::DTYPE_F32);
  const float c = std::cos(1.0f), s = std::sin(1.0f);
  std::vector<float> y =
      AsF32(Run(op, {F32({1, 0, 1, 0}), F32({1, 0, c, s})})[0]);
  CHECK(y[0] == 1);  // angle row 0: unchanged
  CHECK(y[1] == 0);
  CHECK(y[2] == Approx(c));  // angle row 1: 1 rad
  CHECK(y[3] == Approx(s));
}

TEST_CASE("GEMV lanes follow kernel_vector_size, bounded rows stay zero",
          "[sim][kernels]") {
  v1::Operator op = testing::Gemv(8, 128, 1, 4, 16, 1);
  v1::CallValue* cv = op.add_values();
  cv->set_symbol("rows");
  cv->set_bounds("M");
  const std::string a = testing::RandomBf16(8 * 128, 3),
                    x = testing::RandomBf16(128, 4);
  std::string y = Run(op, {a, x}, {{"rows", 5}})[0];
  double want = 0;
  for (int k = 0; k < 128; ++k)
    want += testing::Bf16At(a, k) * testing::Bf16At(x, k);
  CHECK(testing::Bf16At(y, 0) == Approx(want).margin(0.05));
  CHECK(testing::Bf16At(y, 4) != 0);
  CHECK(testing::Bf16At(y, 5) == 0);
  CHECK(testing::Bf16At(y, 7) == 0);
}

TEST_CASE("GEMV sums each lane in order, a partial last chunk included",
          "[sim][kernels]") {
  // K = 100 is not a multiple of the 16 lanes: the last chunk is 4 wide.
  v1::Operator op = testing::Gemv(3, 100, 1, 4, 16, 1);
  const std::string a = testing::RandomBf16(3 * 100, 5),
                    x = testing::RandomBf16(100, 6);
  const std::string y = Run(op, {a, x})[0];
  for (int row = 0; row < 3; ++row) {
    std::vector<float> lanes(16, 0.0f);
    for (int k = 0; k < 100; ++k) {
      lanes[k % 16] +=
          testing::Bf16At(a, row * 100 + k) * testing::Bf16At(x, k);
    }
    for (int stride = 1; stride < 16; stride *= 2) {
      for (int l = 0; l + stride < 16; l += 2 * stride) {
        lanes[l] += lanes[l + stride];
      }
    }
    CHECK(testing::Bf16At(y, row) == RoundTo(v1::DTYPE_BF16, lanes[0]));
  }
}

// Reads a bf16 buffer element by element, as the reference does.
struct Bf16Elements {
  const std::string& bytes;
  float operator[](int64_t i) const {
    return LoadElement(v1::DTYPE_BF16, bytes.data(), i);
  }
};

TEST_CASE("MHA gives bit for bit what attending element by element gives",
          "[sim][kernels]") {
  v1::Operator op;
  op.set_class_name("MHA");
  AddParam(op, "num_heads", 4);
  AddParam(op, "num_KV_heads", 2);
  AddParam(op, "d", 8);
  AddParam(op, "seq_pad", 6);
  AddBuffer(op, "q", v1::BUFFER_ROLE_IN, {4, 8}, v1::DTYPE_BF16);
  AddBuffer(op, "k", v1::BUFFER_ROLE_IN, {2, 6, 8}, v1::DTYPE_BF16);
  AddBuffer(op, "v", v1::BUFFER_ROLE_IN, {2, 6, 8}, v1::DTYPE_BF16);
  AddBuffer(op, "o", v1::BUFFER_ROLE_OUT, {4, 8}, v1::DTYPE_BF16);
  const std::string q = testing::RandomBf16(4 * 8, 7),
                    k = testing::RandomBf16(2 * 6 * 8, 8),
                    v = testing::RandomBf16(2 * 6 * 8, 9);
  const std::string o = Run(op, {q, k, v})[0];
  std::vector<float> p(6);
  for (int h = 0; h < 4; ++h) {
    std::vector<float> y(8, 0.0f);
    AttendRow(Bf16Elements{q}, Bf16Elements{k}, Bf16Elements{v}, h,
              (h / 2) * 6 * 8, 6, 8, p, y.data());
    for (int i = 0; i < 8; ++i) {
      CHECK(testing::Bf16At(o, h * 8 + i) == RoundTo(v1::DTYPE_BF16, y[i]));
    }
  }
}

TEST_CASE("unknown classes copy their first input", "[sim][kernels]") {
  v1::Operator op;
  op.set_class_name("Transpose");
  AddBuffer(op, "x", v1::BUFFER_ROLE_IN, {3}, v1::DTYPE_F32);
  AddBuffer(op, "y", v1::BUFFER_ROLE_OUT, {4}, v1::DTYPE_F32);
  CHECK(AsF32(Run(op, {F32({1, 2, 3})})[0]) == std::vector<float>{1, 2, 3, 0});
}

void AddShaped(v1::Operator& op, const std::string& name, v1::BufferRole role,
               const std::vector<uint64_t>& shape) {
  v1::Buffer* b = op.add_buffers();
  b->set_name(name);
  b->set_role(role);
  b->set_dtype(v1::DTYPE_F32);
  for (uint64_t e : shape) b->add_shape(e);
}

// An operator of `cls` with int params and f32 buffers: inputs in order,
// then the one output.
struct Case {
  std::string cls;
  std::vector<std::pair<std::string, int64_t>> params;
  std::vector<std::pair<std::string, std::vector<uint64_t>>> ins;
  std::vector<uint64_t> out;
  std::vector<std::vector<float>> inputs;
  std::vector<float> want;
};

TEST_CASE("the newer classes compute as their references do",
          "[sim][kernels][reference]") {
  const float tiny = std::ldexp(1.0f, -10), tinier = std::ldexp(1.0f, -20);
  const std::vector<Case> cases = {
      // 1 + 2^-10 + 2^-20 splits into 1, 2^-10, 2^-20; 3 is its own hi.
      // Planes [hi, mid, hi, lo, mid, hi] of a 2-element line.
      {"Limbs",
       {{"rows", 1}, {"line", 2}, {"tile_size", 12}},
       {{"x", {1, 2}}},
       {1, 12},
       {{1 + tiny + tinier, 3}},
       {1, 3, tiny, 0, 1, 3, tinier, 0, tiny, 0, 1, 3}},
      {"Magnitude",
       {{"rows", 1}, {"width", 4}, {"tile_size", 2}},
       {{"x", {1, 4}}},
       {1, 2},
       {{3, 5, 4, 12}},
       {5, 13}},
      {"Log",
       {{"size", 2}},
       {{"x", {2}}},
       {2},
       {{1, 3}},
       {0, static_cast<float>(std::log(3.0))}},
      {"RowwiseMul",
       {{"rows", 2}, {"tile_size", 2}},
       {{"x", {2, 2}}, {"row", {2}}},
       {2, 2},
       {{1, 2, 3, 4}, {10, 100}},
       {10, 200, 30, 400}},
      // keys [2 positions, 1 group, 2], q [2 heads, 2]: q[h] . keys[l].
      {"GQAScores",
       {{"heads", 2}, {"groups", 1}, {"seq_len", 2}, {"head_dim", 2}},
       {{"keys", {2, 1, 2}}, {"q", {2, 2}}},
       {2, 2},
       {{1, 2, 3, 4}, {1, 0, 0, 1}},
       {1, 3, 2, 4}},
      // weights [2 heads, 2 positions] over the same cache.
      {"GQAContext",
       {{"heads", 2}, {"groups", 1}, {"seq_len", 2}, {"head_dim", 2}},
       {{"cache", {2, 1, 2}}, {"weights", {2, 2}}},
       {2, 2},
       {{1, 2, 3, 4}, {1, 0, 0.5, 0.5}},
       {1, 2, 2, 3}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.cls);
    v1::Operator op;
    op.set_class_name(c.cls);
    for (const auto& [name, v] : c.params) AddParam(op, name, v);
    std::map<std::string, std::string> inputs;
    std::vector<std::string> in_bytes;
    for (size_t i = 0; i < c.ins.size(); ++i) {
      AddShaped(op, c.ins[i].first, v1::BUFFER_ROLE_IN, c.ins[i].second);
      inputs[c.ins[i].first] = F32(c.inputs[i]);
      in_bytes.push_back(F32(c.inputs[i]));
    }
    AddShaped(op, "y", v1::BUFFER_ROLE_OUT, c.out);
    const std::string sim = Run(op, in_bytes)[0];
    CHECK(AsF32(sim) == c.want);
    absl::StatusOr<Reference> ref =
        ReferenceOutputs(op, testing::Shared(inputs), {});
    REQUIRE(ref.ok());
    CHECK(ref->outputs.at("y") == sim);
  }
}

}  // namespace
}  // namespace irontune
