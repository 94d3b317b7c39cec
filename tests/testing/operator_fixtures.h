// Operators built by hand for tests and benchmarks: params, tunables and
// bf16 buffers appended one by one, and GEMM/GEMV operators at one setting.
// Each builder returns a fresh operator with values only (no domains, no
// defaults, no tolerance unless it says so); callers add what their case
// needs. Header-only, no state; safe from any thread.
#ifndef IRONTUNE_TESTS_TESTING_OPERATOR_FIXTURES_H_
#define IRONTUNE_TESTS_TESTING_OPERATOR_FIXTURES_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "common/value.h"
#include "daemon/ops/reference.h"
#include "irontune/v1/recording.pb.h"

namespace irontune::testing {

// Appends param `name` = `v`.
inline void AddParam(v1::Operator& op, const std::string& name, v1::Value v) {
  v1::Param* p = op.add_params();
  p->set_name(name);
  *p->mutable_value() = std::move(v);
}

inline void AddParam(v1::Operator& op, const std::string& name, int64_t v) {
  AddParam(op, name, IntValue(v));
}

// Appends tunable `name` at value `v`, with no domain.
inline void AddTunable(v1::Operator& op, const std::string& name, int64_t v) {
  v1::Tunable* t = op.add_tunables();
  t->set_name(name);
  *t->mutable_value() = IntValue(v);
}

// Appends a buffer of `shape`; inputs are filled, outputs drained, in-outs
// both.
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

using IntFields = std::initializer_list<std::pair<const char*, int64_t>>;

// An operator of class `cls` with integer `params` and `tunables`, in the
// order given, and no buffers.
inline v1::Operator Op(const std::string& cls, IntFields params,
                       IntFields tunables) {
  v1::Operator op;
  op.set_class_name(cls);
  for (const auto& [name, v] : params) AddParam(op, name, v);
  for (const auto& [name, v] : tunables) AddTunable(op, name, v);
  return op;
}

// A GEMM's params (M, K, N) and tunables (tile_m, tile_k, tile_n,
// num_aie_columns), without buffers: what family rules read.
inline v1::Operator GemmParams(int64_t m, int64_t k, int64_t n, int64_t tm,
                               int64_t tk, int64_t tn, int64_t cols) {
  return Op("GEMM", {{"M", m}, {"K", k}, {"N", n}},
            {{"tile_m", tm},
             {"tile_k", tk},
             {"tile_n", tn},
             {"num_aie_columns", cols}});
}

// A GEMV's params (M, K) and tunables (num_aie_columns, tile_size_input,
// tile_size_output, kernel_vector_size), without buffers.
inline v1::Operator GemvParams(int64_t m, int64_t k, int64_t tsi, int64_t tso,
                               int64_t v, int64_t cols) {
  return Op("GEMV", {{"M", m}, {"K", k}},
            {{"num_aie_columns", cols},
             {"tile_size_input", tsi},
             {"tile_size_output", tso},
             {"kernel_vector_size", v}});
}

// A bf16 GEMM c[M, N] = a[M, K] b[K, N] at one setting (GemmParams).
inline v1::Operator Gemm(int64_t m, int64_t k, int64_t n, int64_t tm,
                         int64_t tk, int64_t tn, int64_t cols) {
  v1::Operator op = GemmParams(m, k, n, tm, tk, tn, cols);
  const auto dim = [](int64_t d) { return static_cast<uint64_t>(d); };
  AddBuffer(op, "a", v1::BUFFER_ROLE_IN, {dim(m), dim(k)});
  AddBuffer(op, "b", v1::BUFFER_ROLE_IN, {dim(k), dim(n)});
  AddBuffer(op, "c", v1::BUFFER_ROLE_OUT, {dim(m), dim(n)});
  return op;
}

// Gemm with IRON's buffer names: C[M, N] = A[M, K] B[K, N].
inline v1::Operator IronGemm(int64_t m, int64_t k, int64_t n, int64_t tm,
                             int64_t tk, int64_t tn, int64_t cols) {
  v1::Operator op = Gemm(m, k, n, tm, tk, tn, cols);
  for (v1::Buffer& b : *op.mutable_buffers()) {
    b.set_name(absl::AsciiStrToUpper(b.name()));
  }
  return op;
}

// A bf16 GEMV y[M] = a[M, K] x[K] at one setting (GemvParams).
inline v1::Operator Gemv(int64_t m, int64_t k, int64_t tsi, int64_t tso,
                         int64_t v, int64_t cols) {
  v1::Operator op = GemvParams(m, k, tsi, tso, v, cols);
  const auto dim = [](int64_t d) { return static_cast<uint64_t>(d); };
  AddBuffer(op, "a", v1::BUFFER_ROLE_IN, {dim(m), dim(k)});
  AddBuffer(op, "x", v1::BUFFER_ROLE_IN, {dim(k)});
  AddBuffer(op, "y", v1::BUFFER_ROLE_OUT, {dim(m)});
  return op;
}

// `inputs` as a judge or reference reads them (shared, by buffer name).
inline SharedInputs Shared(std::map<std::string, std::string> inputs) {
  SharedInputs out;
  for (auto& [name, bytes] : inputs) {
    out[name] = std::make_shared<const std::string>(std::move(bytes));
  }
  return out;
}

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_TESTING_OPERATOR_FIXTURES_H_
