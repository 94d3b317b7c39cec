// Operators and artifacts for the sim's tests.
#ifndef IRONTUNE_TESTS_TESTING_SIM_FIXTURES_H_
#define IRONTUNE_TESTS_TESTING_SIM_FIXTURES_H_

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>

#include "daemon/sim/sim_builder.h"
#include "daemon/npu/device.h"
#include "daemon/sim/kernels.h"
#include "irontune/v1/recording.pb.h"

namespace irontune::testing {

inline void AddParam(v1::Operator& op, const std::string& name, int64_t v) {
  v1::Param* p = op.add_params();
  p->set_name(name);
  p->mutable_value()->set_int_value(v);
}

inline void AddTunable(v1::Operator& op, const std::string& name, int64_t v) {
  v1::Tunable* t = op.add_tunables();
  t->set_name(name);
  t->mutable_value()->set_int_value(v);
}

inline void AddBuffer(v1::Operator& op, const std::string& name,
                      v1::BufferRole role,
                      std::initializer_list<uint64_t> shape,
                      v1::DType dtype = v1::DTYPE_BF16) {
  v1::Buffer* b = op.add_buffers();
  b->set_name(name);
  b->set_role(role);
  b->set_dtype(dtype);
  for (uint64_t e : shape) b->add_shape(e);
  b->set_fills(role != v1::BUFFER_ROLE_OUT);
  b->set_drains(role != v1::BUFFER_ROLE_IN);
}

inline v1::Operator Gemm(int64_t m, int64_t k, int64_t n, int64_t tm,
                         int64_t tk, int64_t tn, int64_t cols) {
  v1::Operator op;
  op.set_class_name("GEMM");
  AddParam(op, "M", m);
  AddParam(op, "K", k);
  AddParam(op, "N", n);
  AddTunable(op, "tile_m", tm);
  AddTunable(op, "tile_k", tk);
  AddTunable(op, "tile_n", tn);
  AddTunable(op, "num_aie_columns", cols);
  AddBuffer(op, "a", v1::BUFFER_ROLE_IN,
            {static_cast<uint64_t>(m), static_cast<uint64_t>(k)});
  AddBuffer(op, "b", v1::BUFFER_ROLE_IN,
            {static_cast<uint64_t>(k), static_cast<uint64_t>(n)});
  AddBuffer(op, "c", v1::BUFFER_ROLE_OUT,
            {static_cast<uint64_t>(m), static_cast<uint64_t>(n)});
  return op;
}

inline v1::Operator Gemv(int64_t m, int64_t k, int64_t tsi, int64_t tso,
                         int64_t v, int64_t cols) {
  v1::Operator op;
  op.set_class_name("GEMV");
  AddParam(op, "M", m);
  AddParam(op, "K", k);
  AddTunable(op, "num_aie_columns", cols);
  AddTunable(op, "tile_size_input", tsi);
  AddTunable(op, "tile_size_output", tso);
  AddTunable(op, "kernel_vector_size", v);
  AddBuffer(op, "a", v1::BUFFER_ROLE_IN,
            {static_cast<uint64_t>(m), static_cast<uint64_t>(k)});
  AddBuffer(op, "x", v1::BUFFER_ROLE_IN, {static_cast<uint64_t>(k)});
  AddBuffer(op, "y", v1::BUFFER_ROLE_OUT, {static_cast<uint64_t>(m)});
  return op;
}

inline Platform PlatformOf(const std::string& generation) {
  Platform p;
  p.generation = generation;
  p.name = generation == "npu1" ? "NPU Phoenix" : "NPU Strix";
  p.columns = generation == "npu1" ? 4 : 8;
  p.core_mhz = generation == "npu1" ? 1309 : 1584;
  p.full_elf = generation != "npu1";
  return p;
}

inline BuildOutcome BuildOrDie(const v1::Operator& op,
                               const std::string& generation, int steps = 1,
                               v1::Packaging packaging = v1::PACKAGING_FULL_ELF,
                               bool distinct = true) {
  SimBuilder builder;
  BuildRequest request;
  request.op = op;
  request.platform = PlatformOf(generation);
  request.steps = steps;
  request.packaging = packaging;
  request.distinct = distinct;
  absl::StatusOr<BuildOutcome> outcome = builder.Build(request);
  if (!outcome.ok())
    return BuildOutcome{std::nullopt, std::string(outcome.status().message())};
  return *std::move(outcome);
}

// `count` bf16 values in [-1, 1), seeded.
inline std::string RandomBf16(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(count * 2, '\0');
  for (size_t i = 0; i < count; ++i) {
    const float v = static_cast<float>(
        static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2 - 1);
    const uint16_t bits = sim::FloatToBf16(v);
    out[2 * i] = static_cast<char>(bits & 0xff);
    out[2 * i + 1] = static_cast<char>(bits >> 8);
  }
  return out;
}

inline float Bf16At(const std::string& bytes, size_t i) {
  const uint16_t bits = static_cast<uint16_t>(
      static_cast<unsigned char>(bytes[2 * i]) |
      (static_cast<unsigned char>(bytes[2 * i + 1]) << 8));
  return sim::Bf16ToFloat(bits);
}

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_TESTING_SIM_FIXTURES_H_
