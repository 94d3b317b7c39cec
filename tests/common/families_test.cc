#include "common/families.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "common/value.h"
#include "tests/testing/operator_fixtures.h"

namespace irontune {
namespace {

std::vector<int64_t> Ints(const std::vector<v1::Value>& values) {
  std::vector<int64_t> out;
  for (const v1::Value& v : values) out.push_back(v.int_value());
  return out;
}

std::vector<int64_t> Domain(const std::string& cls, const std::string& tunable,
                            const std::string& generation) {
  const Family* family = FindFamily(cls);
  REQUIRE(family != nullptr);
  return Ints(FamilyDomain(*family, tunable, generation));
}

void SetTunable(v1::Operator& op, const std::string& name, int64_t v) {
  for (v1::Tunable& t : *op.mutable_tunables()) {
    if (t.name() == name) {
      *t.mutable_value() = IntValue(v);
      return;
    }
  }
  v1::Tunable* t = op.add_tunables();
  t->set_name(name);
  *t->mutable_value() = IntValue(v);
}

using testing::AddParam;
using testing::GemmParams;
using testing::GemvParams;

std::vector<int64_t> Rule(const DomainRule& rule, int64_t start,
                          const v1::Operator& op = v1::Operator(),
                          int columns = 8) {
  DomainDevice dev = DomainDeviceOf("npu2");
  dev.columns = columns;
  return Ints(RuleValues(rule, op, IntValue(start), dev));
}

v1::Operator Sized(const std::string& name, int64_t v) {
  v1::Operator op;
  AddParam(op, name, IntValue(v));
  return op;
}

// What the operator's rule yields (OperatorDomain), as ints.
std::vector<int64_t> OpDomain(const v1::Operator& op, const std::string& t,
                              const std::string& generation) {
  return Ints(OperatorDomain(op, t, generation));
}

TEST_CASE("Width: the resolved value and the powers of two up to the columns",
          "[families][domain]") {
  CHECK(Rule(WidthRule(), 1) == std::vector<int64_t>{8, 4, 2, 1});
  CHECK(Rule(WidthRule(), 1, {}, 4) == std::vector<int64_t>{4, 2, 1});
  // The resolved value is kept where it is no power of two, or above the
  // columns (the constraints refuse that one, not the domain).
  CHECK(Rule(WidthRule(), 6) == std::vector<int64_t>{8, 6, 4, 2, 1});
  CHECK(Rule(WidthRule(), 8, {}, 4) == std::vector<int64_t>{8, 4, 2, 1});
  // bit_length(6) is 3: powers 1, 2, 4.
  CHECK(Rule(WidthRule(), 1, {}, 6) == std::vector<int64_t>{4, 2, 1});
  CHECK(Rule(WidthRule(), 3, {}, 0) == std::vector<int64_t>{3});
}

TEST_CASE("Divisors: octaves of the resolved value that divide, in steps",
          "[families][domain]") {
  const DomainRule line =
      DivisorsRule(ParamBound("size"), ConstBound(64), ConstBound(4096), 3);
  // 6144 = 3 * 2^11: up to 2048 within 3 octaves (4096 would be the 4th);
  // down while the half is a multiple of 64.
  CHECK(Rule(line, 256, Sized("size", 6144)) ==
        std::vector<int64_t>{2048, 1024, 512, 256, 128, 64});
  // The cap ends the upward walk: 4096 divides 2^20 but exceeds the cap.
  CHECK(Rule(line, 2048, Sized("size", 1 << 20)) ==
        std::vector<int64_t>{4096, 2048, 1024, 512, 256});
  // The resolved value stays though it exceeds the cap and divides nothing;
  // the downward walk passes values that do not divide or exceed the cap.
  const DomainRule loose = DivisorsRule(ParamBound("n"), {}, ConstBound(4));
  CHECK(Rule(loose, 32, Sized("n", 24)) == std::vector<int64_t>{32, 4, 2, 1});
  // span bounds both walks.
  const DomainRule narrow = DivisorsRule(ParamBound("n"), {}, {}, 1);
  CHECK(Rule(narrow, 64, Sized("n", 1 << 20)) ==
        std::vector<int64_t>{128, 64, 32});
  // An odd start has no half; a step the half misses ends the walk.
  CHECK(Rule(narrow, 3, Sized("n", 9)) == std::vector<int64_t>{3});
  const DomainRule stepped = DivisorsRule(ParamBound("n"), ConstBound(16));
  CHECK(Rule(stepped, 64, Sized("n", 64)) == std::vector<int64_t>{64, 32, 16});
  // A bound the operator cannot give, or a start that is no positive int:
  // the start alone.
  CHECK(Rule(stepped, 64) == std::vector<int64_t>{64});
  CHECK(Rule(stepped, 0, Sized("n", 64)) == std::vector<int64_t>{0});
  CHECK(line.Text() == "Divisors(of=size, step=64, cap=4096, span=3)");
  CHECK(When(stepped, "prio_accuracy").Text() ==
        "Divisors(of=n, step=16) when prio_accuracy");
}

TEST_CASE("Choices, Placement and Pinned", "[families][domain]") {
  const DomainRule s = ChoicesRule({IntValue(8), IntValue(4)});
  CHECK(Rule(s, 4) == std::vector<int64_t>{8, 4});
  CHECK(Rule(s, 2) == std::vector<int64_t>{2, 8, 4});
  const DomainRule p = PlacementRule({"shims", "tiles"});
  const DomainDevice dev = DomainDeviceOf("npu2");
  std::vector<v1::Value> got = RuleValues(p, {}, StringValue("tiles"), dev);
  REQUIRE(got.size() == 2);
  CHECK(got[0].string_value() == "tiles");
  CHECK(got[1].string_value() == "shims");
  CHECK(Rule(PinnedRule(), 5) == std::vector<int64_t>{5});
  CHECK(Rule(DomainRule(), 5).empty());
}

TEST_CASE("each class's rules, evaluated for its shape", "[families][domain]") {
  // GEMM 256 x 2048 x 2048 at 64 x 64 x 64 on 8 columns. tile_m divides
  // M / 4 = 64 in mac blocks: 8 on npu2 (2r), 16 on npu1 (4r).
  v1::Operator gemm = GemmParams(256, 2048, 2048, 64, 64, 64, 8);
  CHECK(OpDomain(gemm, "tile_m", "npu2") ==
        std::vector<int64_t>{64, 32, 16, 8});
  CHECK(OpDomain(gemm, "tile_m", "npu1") == std::vector<int64_t>{64, 32, 16});
  // tile_k is searched only under prio_accuracy (false by default).
  CHECK(OpDomain(gemm, "tile_k", "npu2") == std::vector<int64_t>{64});
  AddParam(gemm, "prio_accuracy", BoolValue(true));
  CHECK(OpDomain(gemm, "tile_k", "npu2") ==
        std::vector<int64_t>{2048, 1024, 512, 256, 128, 64, 32, 16, 8});
  CHECK(OpDomain(gemm, "tile_n", "npu2") ==
        std::vector<int64_t>{2048, 1024, 512, 256, 128, 64, 32, 16});
  CHECK(OpDomain(gemm, "num_aie_columns", "npu2") ==
        std::vector<int64_t>{8, 4, 2, 1});
  CHECK(OpDomain(gemm, "tile_m", "npu9").empty());
  CHECK(OpDomain(gemm, "tile_size", "npu2").empty());

  // GEMV 2048 x 2048: tile_size_input capped at 64 KiB / (2 * K * 2) = 8;
  // tile_size_output in steps of it, 3 octaves either side.
  v1::Operator gemv = GemvParams(2048, 2048, 2, 256, 64, 8);
  CHECK(OpDomain(gemv, "tile_size_input", "npu2") ==
        std::vector<int64_t>{8, 4, 2, 1});
  CHECK(OpDomain(gemv, "tile_size_output", "npu2") ==
        std::vector<int64_t>{2048, 1024, 512, 256, 128, 64, 32});
  // Unset, tile_size_input resolves to 2 rows (a row of 4 KiB).
  v1::Operator open = gemv;
  open.mutable_tunables(1)->clear_value();
  REQUIRE(open.tunables(1).name() == "tile_size_input");
  CHECK(OpDomain(open, "tile_size_input", "npu2") ==
        std::vector<int64_t>{8, 4, 2, 1});

  // MHA over 8192 keys: blocks of 64 up to 64 KiB / (64 * 2) = 512.
  v1::Operator mha;
  mha.set_class_name("MHA");
  AddParam(mha, "num_heads", IntValue(32));
  AddParam(mha, "seq_pad", IntValue(8192));
  SetTunable(mha, "B_q", 64);
  SetTunable(mha, "num_pipelines", 8);
  CHECK(OpDomain(mha, "B_q", "npu2") ==
        std::vector<int64_t>{512, 256, 128, 64});
  CHECK(OpDomain(mha, "num_pipelines", "npu2") ==
        std::vector<int64_t>{8, 4, 2, 1});
  AddParam(mha, "kv_len", IntValue(8192 + 128));
  CHECK(OpDomain(mha, "B_q", "npu2") == std::vector<int64_t>{128, 64});

  v1::Operator add;
  add.set_class_name("ElementwiseAdd");
  AddParam(add, "size", IntValue(6144));
  SetTunable(add, "tile_size", 256);
  CHECK(OpDomain(add, "tile_size", "npu2") ==
        std::vector<int64_t>{2048, 1024, 512, 256, 128, 64});

  v1::Operator transpose;
  transpose.set_class_name("Transpose");
  AddParam(transpose, "M", IntValue(2048));
  AddParam(transpose, "N", IntValue(512));
  for (const char* t : {"m", "n"}) SetTunable(transpose, t, 64);
  SetTunable(transpose, "s", 8);
  // cap 8192 / n = 128.
  CHECK(OpDomain(transpose, "m", "npu2") ==
        std::vector<int64_t>{128, 64, 32, 16, 8});
  CHECK(OpDomain(transpose, "s", "npu2") == std::vector<int64_t>{8, 4});

  v1::Operator gqa;
  gqa.set_class_name("GQAScores");
  AddParam(gqa, "seq_len", IntValue(2048));
  SetTunable(gqa, "chunk", 128);
  CHECK(OpDomain(gqa, "chunk", "npu2") ==
        std::vector<int64_t>{512, 256, 128, 64});

  // Softmax's block resolves to the row (96), of which no 32-multiple half
  // exists; streamed is a choice of both.
  v1::Operator softmax;
  softmax.set_class_name("Softmax");
  AddParam(softmax, "rows", IntValue(32));
  AddParam(softmax, "cols", IntValue(96));
  softmax.add_tunables()->set_name("block");
  softmax.add_tunables()->set_name("streamed");
  CHECK(OpDomain(softmax, "block", "npu2") == std::vector<int64_t>{96});
  const std::vector<v1::Value> streamed =
      OperatorDomain(softmax, "streamed", "npu2");
  REQUIRE(streamed.size() == 2);
  CHECK(streamed[0].kind_case() == v1::Value::kBoolValue);
}

TEST_CASE("shape-free domains give every tunable values of its kind",
          "[families][domain]") {
  CHECK(Domain("GEMM", "num_aie_columns", "npu1") ==
        std::vector<int64_t>{4, 2, 1});
  CHECK(Domain("GEMM", "num_aie_columns", "npu2") ==
        std::vector<int64_t>{8, 4, 2, 1});
  CHECK(Domain("GEMM", "tile_k", "npu2") == std::vector<int64_t>{64});
  // IRON derives GEMV's kernel_vector_size: no domain, refused in profiles.
  CHECK(Domain("GEMV", "kernel_vector_size", "npu2").empty());
  const std::vector<v1::Value> placement =
      FamilyDomain(*FindFamily("GEMM"), "placement", "npu2");
  REQUIRE(placement.size() == 2);
  CHECK(placement[0].string_value() == "shims");
  for (const Family& f : AllFamilies()) {
    for (const TunableSpec& t : f.tunable_specs) {
      CAPTURE(f.class_name, t.name);
      CHECK(t.domain.kind != DomainRule::Kind::kNone);
      CHECK_FALSE(FamilyDomain(f, t.name, "npu1").empty());
      CHECK_FALSE(FamilyDomain(f, t.name, "npu2").empty());
    }
  }
  CHECK(Domain("GEMM", "tile_size", "npu2").empty());
  CHECK(Domain("GEMM", "tile_m", "npu9").empty());
}

TEST_CASE("GEMM constraints, rule by rule", "[families]") {
  CHECK(ConstraintViolation(GemmParams(256, 256, 512, 64, 64, 64, 8), "npu2",
                            8) == "");
  CHECK(ConstraintViolation(GemmParams(256, 256, 512, 64, 64, 64, 8), "npu1",
                            4) ==
        "num_aie_columns 8 exceeds the 4 columns of npu1");
  CHECK(ConstraintViolation(GemmParams(256, 256, 512, 64, 64, 64, 0), "npu2",
                            8) == "num_aie_columns must be at least 1, not 0");
  CHECK(ConstraintViolation(GemmParams(256, 256, 256, 64, 0, 64, 1), "npu2",
                            8) == "tile_k must be at least 1, not 0");
  CHECK(ConstraintViolation(GemmParams(100, 256, 256, 64, 64, 64, 1), "npu2",
                            8) ==
        "M 100 is not a multiple of 4 * tile_m = 256");
  CHECK(ConstraintViolation(GemmParams(256, 96, 256, 64, 64, 64, 1), "npu2",
                            8) == "K 96 is not a multiple of tile_k = 64");
  CHECK(ConstraintViolation(GemmParams(256, 256, 256, 64, 64, 64, 8), "npu2",
                            8) ==
        "N 256 is not a multiple of tile_n * num_aie_columns = 512");
  // MAC shapes: npu1 (4, 8, 4), npu2 (4, 8, 8).
  // gemm.py mac_block: npu1 (aie2) blocks m by 4r = 16, npu2 by 2r = 8.
  CHECK(
      ConstraintViolation(GemmParams(32, 256, 256, 8, 64, 64, 1), "npu1", 4) ==
      "tile_m 8 is not a multiple of 4r = 16 (npu1 MAC shape (4, 8, 4))");
  CHECK(ConstraintViolation(GemmParams(32, 256, 256, 8, 64, 64, 1), "npu2",
                            8) == "");
  CHECK(
      ConstraintViolation(GemmParams(16, 256, 256, 4, 64, 64, 1), "npu2", 8) ==
      "tile_m 4 is not a multiple of 2r = 8 (npu2 MAC shape (4, 8, 8))");
  v1::Operator placed = GemmParams(256, 256, 512, 64, 64, 64, 8);
  v1::Tunable* placement = placed.add_tunables();
  placement->set_name("placement");
  *placement->mutable_value() = StringValue("tiles");
  CHECK(ConstraintViolation(placed, "npu2", 8) == "");
  *placement->mutable_value() = StringValue("rows");
  CHECK(ConstraintViolation(placed, "npu2", 8) ==
        "placement \"rows\" is none of shims, tiles");
  CHECK(ConstraintViolation(GemmParams(256, 240, 256, 64, 12, 64, 1), "npu1",
                            4) ==
        "tile_k 12 is not a multiple of s = 8 (npu1 MAC shape (4, 8, 4))");
  CHECK(ConstraintViolation(GemmParams(256, 256, 256, 64, 64, 8, 1), "npu1",
                            4) == "");
  CHECK(
      ConstraintViolation(GemmParams(256, 256, 256, 64, 64, 8, 1), "npu2", 8) ==
      "tile_n 8 is not a multiple of 2t = 16 (npu2 MAC shape (4, 8, 8))");
  // L1: 2 * (128*128*2) * 3 + stack > 64 KiB.
  CHECK_THAT(ConstraintViolation(GemmParams(512, 512, 512, 128, 128, 128, 1),
                                 "npu2", 8),
             Catch::StartsWith("L1: 2 A + 2 B + 2 C tiles + 3.3 KiB stack "
                               "need 195.3 KiB of 64.0 KiB"));
  // 64 x 128 x 64 bf16: 2*16 + 2*16 + 2*8 KiB + stack = 83.3 KiB.
  CHECK_THAT(
      ConstraintViolation(GemmParams(256, 256, 256, 64, 128, 64, 1), "npu2", 8),
      Catch::StartsWith("L1: "));
  // Missing tunables take IRON's defaults: tiles 64, every column.
  v1::Operator bare = GemmParams(256, 256, 512, 64, 64, 64, 1);
  bare.clear_tunables();
  CHECK(ConstraintViolation(bare, "npu2", 8) == "");
  CHECK(ConstraintViolation(bare, "npu2", 16) ==
        "N 512 is not a multiple of tile_n * num_aie_columns = 1024");
}

TEST_CASE("GEMV constraints, rule by rule", "[families]") {
  CHECK(ConstraintViolation(GemvParams(2048, 8192, 1, 256, 64, 8), "npu2", 8) ==
        "");
  CHECK_THAT(
      ConstraintViolation(GemvParams(2048, 8192, 2, 256, 64, 8), "npu2", 8),
      Catch::StartsWith("L1: 2 A tiles of 2 x 8192"));
  CHECK(ConstraintViolation(GemvParams(2048, 2048, 2, 3, 64, 8), "npu2", 8) ==
        "tile_size_output 3 is not a multiple of tile_size_input 2");
  // The kernel's vector width is IRON's to pick: some width in {64, 32, 16}
  // must divide K with K at least twice it; a width given must be one.
  CHECK(ConstraintViolation(GemvParams(2048, 96, 1, 256, 32, 8), "npu2", 8) ==
        "");
  CHECK(ConstraintViolation(GemvParams(2048, 96, 1, 256, 64, 8), "npu2", 8) ==
        "kernel_vector_size 64 is not legal for K 96: K must be a multiple of "
        "it and at least twice it (legal here: 32, 16)");
  CHECK(ConstraintViolation(GemvParams(2048, 24, 1, 256, 64, 8), "npu2", 8) ==
        "K 24 has no kernel vector width in {64, 32, 16} with K a multiple of "
        "it and K >= 2 * width");
  CHECK(ConstraintViolation(GemvParams(2048, 2048, 1, 512, 64, 8), "npu2", 8) ==
        "M 2048 is not a multiple of tile_size_output * num_aie_columns * "
        "num_channels = 4096");
  // num_channels lanes a column (gemv.py @ 607010e).
  v1::Operator laned = GemvParams(2048, 2048, 1, 128, 64, 8);
  CHECK(ConstraintViolation(laned, "npu2", 8) == "");
  SetTunable(laned, "num_channels", 4);
  CHECK(ConstraintViolation(laned, "npu2", 8) ==
        "M 2048 is not a multiple of tile_size_output * num_aie_columns * "
        "num_channels = 4096");
  CHECK(ConstraintViolation(GemvParams(2048, 2048, 0, 512, 64, 8), "npu2", 8) ==
        "tile_size_input must be at least 1, not 0");
  CHECK(ConstraintViolation(GemvParams(2048, 2048, 1, 256, 64, 8), "npu1", 4) ==
        "num_aie_columns 8 exceeds the 4 columns of npu1");
}

TEST_CASE("other families' constraints", "[families]") {
  v1::Operator add;
  add.set_class_name("ElementwiseAdd");
  AddParam(add, "size", IntValue(2048 * 3));
  SetTunable(add, "tile_size", 2048);
  SetTunable(add, "num_aie_columns", 1);
  CHECK(ConstraintViolation(add, "npu2", 8) == "");
  SetTunable(add, "num_aie_columns", 2);
  CHECK(ConstraintViolation(add, "npu2", 8) ==
        "ElementwiseAdd of 6144 elements is not whole lines of tile_size 2048 "
        "over num_aie_columns x num_channels (4096 per pass)");
  SetTunable(add, "tile_size", 8192);
  CHECK(ConstraintViolation(add, "npu2", 8) ==
        "tile_size 8192 exceeds the 4096-element line one core holds");

  v1::Operator softmax;
  softmax.set_class_name("Softmax");
  AddParam(softmax, "rows", IntValue(32));
  AddParam(softmax, "cols", IntValue(96));
  SetTunable(softmax, "num_aie_columns", 4);
  CHECK(ConstraintViolation(softmax, "npu2", 8) == "");
  SetTunable(softmax, "num_aie_columns", 8);
  SetTunable(softmax, "num_channels", 8);
  CHECK(ConstraintViolation(softmax, "npu2", 8) ==
        "rows 32 is not a multiple of the 64 cores (num_aie_columns x "
        "num_channels)");

  v1::Operator rms;
  rms.set_class_name("RMSNorm");
  AddParam(rms, "rows", IntValue(1));
  AddParam(rms, "tile_size", IntValue(8192));
  AddParam(rms, "weighted", BoolValue(true));
  SetTunable(rms, "num_aie_columns", 1);
  CHECK(ConstraintViolation(rms, "npu2", 8) ==
        "tile_size 8192 exceeds the 4096-element row one core holds");

  v1::Operator rope;
  rope.set_class_name("RoPE");
  AddParam(rope, "rows", IntValue(32));
  AddParam(rope, "cols", IntValue(64));
  AddParam(rope, "angle_rows", IntValue(1));
  SetTunable(rope, "num_aie_columns", 1);
  CHECK(ConstraintViolation(rope, "npu2", 8) == "");
  SetTunable(rope, "num_aie_columns", 2);
  CHECK(ConstraintViolation(rope, "npu2", 8) ==
        "rows 32 and angle_rows 1 are not both multiples of num_aie_columns "
        "2");

  v1::Operator sample;
  sample.set_class_name("Sample");
  AddParam(sample, "vocab", IntValue(128256));
  SetTunable(sample, "cores", 8);
  CHECK(ConstraintViolation(sample, "npu2", 8) == "");
  SetTunable(sample, "chunk", 4000);
  CHECK(ConstraintViolation(sample, "npu2", 8) ==
        "chunk 4000 is not an even divisor of the slice 16032 up to 8192");

  v1::Operator mha;
  mha.set_class_name("MHA");
  AddParam(mha, "num_heads", IntValue(32));
  AddParam(mha, "num_KV_heads", IntValue(8));
  SetTunable(mha, "num_pipelines", 8);
  CHECK(ConstraintViolation(mha, "npu2", 8) == "");
  // mha.py @ 607010e places MHA on 4 columns too, a pipeline a column.
  CHECK(ConstraintViolation(mha, "npu1", 4) ==
        "num_pipelines 8 exceeds the 4 columns MHA is placed on, one pipeline "
        "a column");
  CHECK(ConstraintViolation(mha, "npu1", 2) ==
        "MHA is placed on 4 columns or more; npu1 has 2");
  SetTunable(mha, "num_pipelines", 4);
  CHECK(ConstraintViolation(mha, "npu1", 4) == "");
  SetTunable(mha, "num_pipelines", 7);
  CHECK(ConstraintViolation(mha, "npu2", 8) ==
        "num_pipelines 7 above 6 must be even");
  SetTunable(mha, "num_pipelines", 8);
  SetTunable(mha, "B_q", 128);
  CHECK(ConstraintViolation(mha, "npu2", 8) ==
        "B_q 128 and B_kv 64 must match");
  SetTunable(mha, "B_kv", 128);
  AddParam(mha, "seq_pad", IntValue(1536));
  CHECK(ConstraintViolation(mha, "npu2", 8) ==
        "seq_pad 1536 is not a multiple of B_q * num_pipelines = 1024");
  SetTunable(mha, "B_q", 32);
  SetTunable(mha, "B_kv", 32);
  CHECK(ConstraintViolation(mha, "npu2", 8) ==
        "B_kv 32 is not a multiple of 64, the vector the softmax masks a row "
        "of keys by");
  SetTunable(mha, "B_q", 64);
  SetTunable(mha, "B_kv", 64);
  AddParam(mha, "kv_len", IntValue(1024));
  CHECK(ConstraintViolation(mha, "npu2", 8) ==
        "kv_len 1024 is not whole 64-row blocks of at least seq_pad 1536");

  // Softmax's block and streamed (softmax.py @ 607010e).
  v1::Operator rows = softmax;
  SetTunable(rows, "num_aie_columns", 4);
  SetTunable(rows, "num_channels", 1);
  SetTunable(rows, "block", 32);
  // Left open, streamed resolves to block < cols: true here.
  CHECK(ConstraintViolation(rows, "npu2", 8) == "");
  v1::Tunable* streamed = rows.add_tunables();
  streamed->set_name("streamed");
  *streamed->mutable_value() = BoolValue(false);
  CHECK(ConstraintViolation(rows, "npu2", 8) ==
        "block 32 is not cols 96: a row held whole is one block unless "
        "streamed");
  *streamed->mutable_value() = BoolValue(true);
  CHECK(ConstraintViolation(rows, "npu2", 8) == "");
  SetTunable(rows, "block", 48);
  CHECK(ConstraintViolation(rows, "npu2", 8) ==
        "block 48 is not a multiple of 32 dividing cols 96");
}

TEST_CASE("unknown classes are checked for columns only", "[families]") {
  v1::Operator op;
  op.set_class_name("Conv9d");
  AddParam(op, "size", IntValue(7));
  SetTunable(op, "tile_size", 3);
  CHECK(ConstraintViolation(op, "npu1", 4) == "");
  SetTunable(op, "num_aie_columns", 4);
  CHECK(ConstraintViolation(op, "npu1", 4) == "");
  SetTunable(op, "num_aie_columns", 8);
  CHECK(ConstraintViolation(op, "npu1", 4) ==
        "num_aie_columns 8 exceeds the 4 columns of npu1");
  CHECK(FindFamily("Conv9d") == nullptr);
}

TEST_CASE("the catalogue holds IRON's classes with their fields",
          "[families]") {
  // iron/operators/__init__.py at kIronBaseCommit, and the seven classes
  // with tunables IRON's newest readable sources add (gqa.py, limbs.py,
  // log.py, magnitude.py, elementwise_mul.py, resample/op.py).
  const std::vector<std::string> iron = {"AXPY",
                                         "GQAScores",
                                         "Limbs",
                                         "Log",
                                         "Magnitude",
                                         "RowwiseMul",
                                         "Resample",
                                         "ResampleTaps",
                                         "Clamp",
                                         "Copy",
                                         "DepthwiseConv1d",
                                         "Dequant",
                                         "ElementwiseAdd",
                                         "ElementwiseMul",
                                         "Emit",
                                         "GELU",
                                         "GEMM",
                                         "GEMV",
                                         "GQAContext",
                                         "LayerNorm",
                                         "LeakyReLU",
                                         "MHA",
                                         "ReLU",
                                         "RMSNorm",
                                         "Repeat",
                                         "RoPE",
                                         "Sample",
                                         "Sigmoid",
                                         "SiLU",
                                         "Softmax",
                                         "Tanh",
                                         "Transpose"};
  std::vector<std::string> have;
  for (const Family& f : AllFamilies()) have.push_back(f.class_name);
  std::vector<std::string> want = iron;
  std::sort(want.begin(), want.end());
  CHECK(have == want);

  auto names = [](const std::vector<Dim>& dims) {
    std::vector<std::string> out;
    for (const Dim& d : dims) out.push_back(d.name);
    return out;
  };
  const Family& rms = *FindFamily("RMSNorm");
  CHECK(names(rms.dims) ==
        std::vector<std::string>{"rows", "tile_size", "epsilon", "weighted"});
  CHECK(rms.tunables ==
        std::vector<std::string>{"num_aie_columns", "num_channels"});
  const Family& rope = *FindFamily("RoPE");
  CHECK(names(rope.dims) ==
        std::vector<std::string>{"rows", "cols", "angle_rows", "method_type"});
  CHECK(rope.tunables == std::vector<std::string>{"num_aie_columns"});
  CHECK(FindFamily("Sample")->tunables ==
        std::vector<std::string>{"cores", "chunk"});
  CHECK_FALSE(IsTunable(*FindFamily("Softmax"), "tile_size"));
  const Family& gemm = *FindFamily("GEMM");
  for (const char* p : {"prio_accuracy", "emulate_bf16_mmul_with_bfp16",
                        "round_conv_even", "use_scalar"}) {
    CAPTURE(p);
    CHECK(IsDim(gemm, p));
  }
  CHECK(IsDerived(gemm, "n_aie_rows"));
  CHECK(IsDim(*FindFamily("GEMV"), "repeat"));
  CHECK(IsDerived(*FindFamily("GEMV"), "kernel_vector_size"));
  CHECK(IsTunable(*FindFamily("ElementwiseAdd"), "num_channels"));
  CHECK(IsDerived(*FindFamily("MHA"), "q_shims"));
  // Classes without tunables.
  CHECK(FindFamily("Emit")->tunables.empty());
  CHECK(FindFamily("Repeat")->tunables.empty());
  // Every class lists its buffers and a gate.
  for (const Family& f : AllFamilies()) {
    CAPTURE(f.class_name);
    CHECK_FALSE(f.buffers.empty());
    CHECK(f.gate.gate_case() != v1::Tolerance::GATE_NOT_SET);
    CHECK_FALSE(f.tolerance.empty());
  }
}

TEST_CASE("docs/operators.md has a section per class", "[families]") {
  const std::string md = CatalogueMarkdown();
  for (const Family& f : AllFamilies()) {
    CAPTURE(f.class_name);
    CHECK(md.find("\n## " + f.class_name + "\n") != std::string::npos);
  }
  CHECK(md.find(std::string(kIronCommit)) != std::string::npos);
  CHECK(md.find("No tunables: IRON refuses any profile entry") !=
        std::string::npos);
}

// The class names of deploy/iron-builder's allow-list, the lines
// `    "Name",` between `CATALOGUE = (` and `)`, in its order.
std::vector<std::string> AdapterCatalogue() {
  std::ifstream in(std::string(IRONTUNE_SOURCE_DIR) + "/deploy/iron-builder");
  REQUIRE(in);
  std::vector<std::string> names;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line == "CATALOGUE = (";
      continue;
    }
    if (line == ")") return names;
    const size_t open = line.find('"'), close = line.rfind('"');
    INFO(line);
    REQUIRE(open == 4);
    REQUIRE(line.substr(close) == "\",");
    names.push_back(line.substr(open + 1, close - open - 1));
  }
  FAIL("deploy/iron-builder has no CATALOGUE = ( ... ) block");
  return names;
}

TEST_CASE("deploy/iron-builder builds exactly the catalogue's classes",
          "[families]") {
  std::vector<std::string> adapter = AdapterCatalogue();
  std::vector<std::string> catalogue;
  for (const Family& f : AllFamilies()) catalogue.push_back(f.class_name);
  std::sort(adapter.begin(), adapter.end());
  std::sort(catalogue.begin(), catalogue.end());
  CHECK(std::adjacent_find(adapter.begin(), adapter.end()) == adapter.end());
  CHECK(adapter == catalogue);
}

}  // namespace
}  // namespace irontune
