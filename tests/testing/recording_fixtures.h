// Recordings built by hand for tests and benchmarks: the expression and
// step builders they are made of, two for the recording format's own tests
// (SmallCalls, RichCalls) and small ones that tune in moments (AddCalls,
// AddSiluCalls). Each is valid as built; tests mutate copies. Header-only,
// no state; safe from any thread.
#ifndef IRONTUNE_TESTS_TESTING_RECORDING_FIXTURES_H_
#define IRONTUNE_TESTS_TESTING_RECORDING_FIXTURES_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "common/recording.h"
#include "common/value.h"
#include "irontune/v1/recording.pb.h"
#include "irontune/v1/tuner.pb.h"
#include "tests/testing/operator_fixtures.h"

namespace irontune::testing {

inline v1::Value Int(int64_t x) { return IntValue(x); }

// Expressions of bindings: a constant, a recording value, a binary op.
inline v1::Expression Const(int64_t x) {
  v1::Expression e;
  e.set_constant(x);
  return e;
}

inline v1::Expression Name(const std::string& name) {
  v1::Expression e;
  e.set_value(name);
  return e;
}

inline v1::Expression Bin(v1::Expression::Op op, v1::Expression lhs,
                          v1::Expression rhs) {
  v1::Expression e;
  e.mutable_binary()->set_op(op);
  *e.mutable_binary()->mutable_lhs() = std::move(lhs);
  *e.mutable_binary()->mutable_rhs() = std::move(rhs);
  return e;
}

// AddBuffer of operator_fixtures.h, `dtype` first.
inline void AddBuffer(v1::Operator* op, const std::string& name,
                      v1::BufferRole role, v1::DType dtype,
                      std::initializer_list<uint64_t> shape) {
  AddBuffer(*op, name, role, shape, dtype);
}

// Appends a step running operator `op` on whole graph buffers, in order.
inline void AddStep(v1::Recording* rec, uint32_t op,
                    std::initializer_list<std::string> buffers) {
  v1::Step* step = rec->add_steps();
  step->set_op(op);
  for (const std::string& b : buffers) step->add_refs()->set_buffer(b);
}

// An ElementwiseAdd of 1024 bf16 (operator 0: buffers a, b in and c out,
// param "size", tunable "tile_size", call value "n" bounding "size"), run
// once by one recording "decode" with per-call value "position", in one
// call with contents for x and two points.
//
//   calls[0].recording: values [position]; buffers x, y, z (2048 bytes);
//   steps[0] = op 0 on (x, y, z); bindings[0]: op 0 member n =
//   min(position + 1, 1024).
inline v1::Calls SmallCalls() {
  v1::Calls calls;
  calls.set_format_version(v1::FORMAT_VERSION_1);
  v1::Operator* op = calls.add_operators();
  op->set_class_name("ElementwiseAdd");
  v1::Param* size = op->add_params();
  size->set_name("size");
  *size->mutable_value() = Int(1024);
  v1::Tunable* tile = op->add_tunables();
  tile->set_name("tile_size");
  *tile->mutable_value() = Int(256);
  for (int64_t x : {128, 256, 512}) *tile->add_domain() = Int(x);
  AddBuffer(op, "a", v1::BUFFER_ROLE_IN, v1::DTYPE_BF16, {1024});
  AddBuffer(op, "b", v1::BUFFER_ROLE_IN, v1::DTYPE_BF16, {1024});
  AddBuffer(op, "c", v1::BUFFER_ROLE_OUT, v1::DTYPE_BF16, {1024});
  v1::ExtentAxis* axis = op->mutable_buffers(0)->add_extents();
  axis->set_extent("size");
  axis->set_axis(0);
  v1::CallValue* n = op->add_values();
  n->set_name("n");
  n->set_symbol("rows");
  n->set_bounds("size");
  op->mutable_tolerance()->mutable_close()->set_atol(1e-2);
  op->mutable_tolerance()->mutable_close()->set_rtol(1e-2);

  v1::Timed* call = calls.add_calls();
  v1::Recording* rec = call->mutable_recording();
  rec->set_name("decode");
  rec->add_values("position");
  for (const char* name : {"x", "y", "z"}) {
    v1::GraphBuffer* g = rec->add_buffers();
    g->set_name(name);
    g->set_nbytes(2048);
  }
  AddStep(rec, 0, {"x", "y", "z"});
  rec->add_inputs("x");
  rec->add_inputs("y");
  rec->add_outputs("z");
  v1::Binding* binding = rec->add_bindings();
  binding->set_op(0);
  binding->set_member("n");
  *binding->mutable_expression() =
      Bin(v1::Expression::OP_MIN,
          Bin(v1::Expression::OP_ADD, Name("position"), Const(1)), Const(1024));
  (*call->mutable_values())["position"] = 5;
  v1::Content* content = call->add_contents();
  content->set_buffer("x");
  content->set_data(std::string(2048, '\x01'));
  for (int64_t position : {0, 100}) {
    v1::Point* point = call->add_points();
    point->set_weight(0.5);
    (*point->mutable_values())["position"] = position;
  }
  return calls;
}

// Several operators (RMSNorm, GEMM, ElementwiseAdd, a Softmax no step
// runs), two recordings with several values, bindings with nested
// expressions, contents, points and every Value kind.
inline v1::Calls RichCalls() {
  v1::Calls calls;
  calls.set_format_version(v1::FORMAT_VERSION_1);

  v1::Operator* norm = calls.add_operators();  // 0
  norm->set_class_name("RMSNorm");
  v1::Param* p = norm->add_params();
  p->set_name("size");
  *p->mutable_value() = Int(64);
  p = norm->add_params();
  p->set_name("eps");
  p->mutable_value()->set_double_value(1e-5);
  p->mutable_default_value()->set_double_value(1e-6);
  v1::Tunable* t = norm->add_tunables();
  t->set_name("columns");
  *t->mutable_value() = Int(4);
  for (int64_t x : {1, 2, 4, 8}) *t->add_domain() = Int(x);
  t = norm->add_tunables();
  t->set_name("vectorized");
  t->mutable_value()->set_bool_value(true);
  t->add_domain()->set_bool_value(false);
  t->add_domain()->set_bool_value(true);
  norm->add_pinned("vectorized");
  AddBuffer(norm, "in", v1::BUFFER_ROLE_IN, v1::DTYPE_BF16, {64});
  AddBuffer(norm, "out", v1::BUFFER_ROLE_OUT, v1::DTYPE_BF16, {64});
  norm->mutable_tolerance()->mutable_exact();

  v1::Operator* gemm = calls.add_operators();  // 1
  gemm->set_class_name("GEMM");
  for (const char* name : {"M", "K", "N"}) {
    p = gemm->add_params();
    p->set_name(name);
    *p->mutable_value() = Int(name[0] == 'M' ? 4 : 32);
  }
  t = gemm->add_tunables();
  t->set_name("tile_m");
  *t->mutable_value() = Int(4);
  t = gemm->add_tunables();
  t->set_name("layout");
  t->mutable_value()->set_string_value("row");
  t->add_domain()->set_string_value("row");
  t->add_domain()->set_string_value("col");
  AddBuffer(gemm, "A", v1::BUFFER_ROLE_IN, v1::DTYPE_BF16, {4, 32});
  AddBuffer(gemm, "B", v1::BUFFER_ROLE_IN, v1::DTYPE_I8, {32, 32});
  AddBuffer(gemm, "C", v1::BUFFER_ROLE_INOUT, v1::DTYPE_F32, {4, 32});
  v1::ExtentAxis* axis = gemm->mutable_buffers(0)->add_extents();
  axis->set_extent("M");
  axis = gemm->mutable_buffers(2)->add_extents();
  axis->set_extent("N");
  axis->set_axis(1);
  v1::CallValue* cv = gemm->add_values();
  cv->set_name("rows");
  cv->set_symbol("m_rows");
  cv->set_bounds("M");
  cv = gemm->add_values();
  cv->set_name("offset");
  cv->set_symbol("k_off");
  gemm->mutable_tolerance()->mutable_close()->set_atol(0.125);
  gemm->mutable_tolerance()->mutable_close()->set_rtol(0.0625);

  v1::Operator* add = calls.add_operators();  // 2
  add->set_class_name("ElementwiseAdd");
  p = add->add_params();
  p->set_name("size");
  *p->mutable_value() = Int(64);
  AddBuffer(add, "a", v1::BUFFER_ROLE_IN, v1::DTYPE_BF16, {64});
  AddBuffer(add, "b", v1::BUFFER_ROLE_IN, v1::DTYPE_BF16, {64});
  AddBuffer(add, "c", v1::BUFFER_ROLE_OUT, v1::DTYPE_BF16, {64});
  cv = add->add_values();
  cv->set_name("pos");
  cv->set_symbol("pos");

  v1::Operator* softmax = calls.add_operators();  // 3: never run
  softmax->set_class_name("Softmax");
  AddBuffer(softmax, "x", v1::BUFFER_ROLE_INOUT, v1::DTYPE_F16, {2, 16});

  using E = v1::Expression;
  for (int c = 0; c < 2; ++c) {
    v1::Timed* call = calls.add_calls();
    v1::Recording* rec = call->mutable_recording();
    rec->set_name(c == 0 ? "decode" : "prefill");
    rec->add_values("position");
    rec->add_values("rows");
    // One arena holding several operator buffers, plus separate ones.
    v1::GraphBuffer* g = rec->add_buffers();
    g->set_name("hidden");
    g->set_nbytes(512);
    g = rec->add_buffers();
    g->set_name("weights");
    g->set_nbytes(1024);
    g = rec->add_buffers();
    g->set_name("acc");
    g->set_nbytes(512);
    AddStep(rec, 0, {"hidden", "hidden"});
    rec->mutable_steps(0)->mutable_refs(1)->set_offset(128);
    rec->mutable_steps(0)->mutable_refs(1)->set_length(128);
    AddStep(rec, 1, {"hidden", "weights", "acc"});
    rec->mutable_steps(1)->mutable_refs(0)->set_offset(256);
    AddStep(rec, 2, {"hidden", "hidden", "hidden"});
    rec->mutable_steps(2)->mutable_refs(1)->set_offset(128);
    rec->mutable_steps(2)->mutable_refs(2)->set_offset(384);
    AddStep(rec, 0, {"acc", "acc"});
    rec->mutable_steps(3)->mutable_refs(1)->set_offset(256);
    rec->add_inputs("hidden");
    rec->add_inputs("weights");
    rec->add_outputs("acc");

    v1::Binding* b = rec->add_bindings();
    b->set_op(1);
    b->set_member("rows");
    *b->mutable_expression() =
        Bin(E::OP_MAX, Const(1),
            Bin(E::OP_MIN, Name("rows"),
                Bin(E::OP_SUB, Const(4),
                    Bin(E::OP_MOD, Name("position"), Const(4)))));
    b = rec->add_bindings();
    b->set_op(1);
    b->set_member("offset");
    *b->mutable_expression() =
        Bin(E::OP_MUL, Bin(E::OP_FLOOR_DIV, Name("position"), Const(-8)),
            Const(-32));
    b = rec->add_bindings();
    b->set_op(2);
    b->set_member("pos");
    *b->mutable_expression() = Name("position");

    (*call->mutable_values())["position"] = 17 + c;
    (*call->mutable_values())["rows"] = c == 0 ? 1 : 4;
    v1::Content* content = call->add_contents();
    content->set_buffer("weights");
    std::string data(1024, '\0');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i);
    content->set_data(data);
    if (c == 0) {
      for (int k = 0; k < 4; ++k) {
        v1::Point* point = call->add_points();
        point->set_weight(0.25);
        (*point->mutable_values())["position"] = 1000 * k - 5;
        (*point->mutable_values())["rows"] = k + 1;
      }
    }
  }
  return calls;
}

// ElementwiseAdd of 2048 bf16 elements (a + b -> c) recorded at tile_size
// 512 on 4 columns; tile_size may take `tile_sizes`, num_aie_columns only 4.
// Gate: atol = rtol = 2^-7.
inline v1::Operator Add2048(std::initializer_list<int64_t> tile_sizes) {
  v1::Operator op = Op("ElementwiseAdd", {{"size", 2048}},
                       {{"tile_size", 512}, {"num_aie_columns", 4}});
  for (int64_t t : tile_sizes) *op.mutable_tunables(0)->add_domain() = Int(t);
  *op.mutable_tunables(1)->add_domain() = Int(4);
  AddBuffer(op, "a", v1::BUFFER_ROLE_IN, {2048});
  AddBuffer(op, "b", v1::BUFFER_ROLE_IN, {2048});
  AddBuffer(op, "c", v1::BUFFER_ROLE_OUT, {2048});
  op.mutable_tolerance()->mutable_close()->set_atol(0.0078125);
  op.mutable_tolerance()->mutable_close()->set_rtol(0.0078125);
  return op;
}

// SiLU of 8192 bf16 elements (x -> y) at tile_size 1024 on 8 columns, its
// recorded domain tile_size `tile_sizes` on 8 columns. Gate: atol = rtol =
// 2^-7.
inline v1::Operator Silu8192(std::initializer_list<int64_t> tile_sizes = {
                                 1024}) {
  v1::Operator op = Op("SiLU", {{"size", 8192}},
                       {{"tile_size", 1024}, {"num_aie_columns", 8}});
  for (int64_t t : tile_sizes) *op.mutable_tunables(0)->add_domain() = Int(t);
  *op.mutable_tunables(1)->add_domain() = Int(8);
  AddBuffer(op, "x", v1::BUFFER_ROLE_IN, {8192});
  AddBuffer(op, "y", v1::BUFFER_ROLE_OUT, {8192});
  op.mutable_tolerance()->mutable_close()->set_atol(0.0078125);
  op.mutable_tolerance()->mutable_close()->set_rtol(0.0078125);
  return op;
}

// One call of recording `name` whose step i runs `ops[i]` on fresh graph
// buffers `buffers[i]` (one per operator buffer, of its size); the buffers
// the operators read are the recording's inputs, those they write its
// outputs. REQUIRES: buffers[i] names one graph buffer per buffer of ops[i].
inline v1::Calls OneCall(const std::string& name, std::vector<v1::Operator> ops,
                         std::vector<std::vector<std::string>> buffers) {
  v1::Calls calls;
  calls.set_format_version(v1::FORMAT_VERSION_1);
  v1::Recording* rec = calls.add_calls()->mutable_recording();
  rec->set_name(name);
  std::vector<std::string> inputs, outputs;
  for (size_t i = 0; i < ops.size(); ++i) {
    v1::Step* step = rec->add_steps();
    step->set_op(static_cast<uint32_t>(i));
    for (int b = 0; b < ops[i].buffers_size(); ++b) {
      const v1::Buffer& buffer = ops[i].buffers(b);
      uint64_t nbytes = DTypeSize(buffer.dtype());
      for (uint64_t e : buffer.shape()) nbytes *= e;
      v1::GraphBuffer* g = rec->add_buffers();
      g->set_name(buffers[i][b]);
      g->set_nbytes(nbytes);
      step->add_refs()->set_buffer(buffers[i][b]);
      if (buffer.role() == v1::BUFFER_ROLE_IN) inputs.push_back(g->name());
      if (buffer.role() == v1::BUFFER_ROLE_OUT) outputs.push_back(g->name());
    }
    *calls.add_operators() = std::move(ops[i]);
  }
  for (const std::string& b : inputs) rec->add_inputs(b);
  for (const std::string& b : outputs) rec->add_outputs(b);
  return calls;
}

// Add2048 with tile_size 256 or 512, once, in recording "add" on graph
// buffers x, y -> z: two settings to tune.
inline v1::Calls AddCalls() {
  return OneCall("add", {Add2048({256, 512})}, {{"x", "y", "z"}});
}

// Add2048 (p, q -> r) then Silu8192 (s -> t), once each, in recording
// "small": two settings each (the recorded domains: tile_size 256 or 512,
// and 512 or 1024), so it tunes both shapes in moments.
inline v1::Calls AddSiluCalls() {
  return OneCall("small", {Add2048({256, 512}), Silu8192({512, 1024})},
                 {{"p", "q", "r"}, {"s", "t"}});
}

// An Autotune of AddSiluCalls: a few seconds' work at most when `quick`
// (3 rounds of 5 calls); else 1000 rounds of 1000 calls a setting, which
// keeps the real-time sim's worker busy for minutes (jobs sent after it
// wait in the queue).
inline v1::AutotuneRequest SmallAutotune(bool quick) {
  v1::AutotuneRequest request;
  *request.mutable_calls() = AddSiluCalls();
  request.mutable_timing()->set_rounds(quick ? 3 : 1000);
  request.mutable_timing()->set_calls(quick ? 5 : 1000);
  return request;
}

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_TESTING_RECORDING_FIXTURES_H_
