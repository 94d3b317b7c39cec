#include "common/families.h"

#include <algorithm>
#include <catch2/catch.hpp>

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

v1::Operator Gemm(int64_t m, int64_t k, int64_t n, int64_t tm, int64_t tk,
                  int64_t tn, int64_t cols) {
  return testing::GemmParams(m, k, n, tm, tk, tn, cols);
}

v1::Operator Gemv(int64_t m, int64_t k, int64_t tsi, int64_t tso, int64_t v,
                  int64_t cols) {
  return testing::GemvParams(m, k, tsi, tso, v, cols);
}

TEST_CASE("domains follow the generation's columns", "[families]") {
  CHECK(Domain("GEMM", "num_aie_columns", "npu1") ==
        std::vector<int64_t>{1, 2, 4});
  CHECK(Domain("GEMM", "num_aie_columns", "npu2") ==
        std::vector<int64_t>{1, 2, 4, 8});
  CHECK(Domain("GEMM", "tile_m", "npu2") == std::vector<int64_t>{32, 64, 128});
  CHECK(Domain("GEMM", "tile_k", "npu1") ==
        std::vector<int64_t>{32, 64, 128, 256});
  // IRON derives GEMV's kernel_vector_size: no domain, refused in profiles.
  CHECK(Domain("GEMV", "kernel_vector_size", "npu2").empty());
  CHECK(Domain("GEMV", "tile_size_input", "npu1") ==
        std::vector<int64_t>{1, 2, 4});
  CHECK(Domain("GEMV", "tile_size_output", "npu1") ==
        std::vector<int64_t>{32, 64, 128, 256, 512});
  CHECK(Domain("RoPE", "num_aie_columns", "npu2") ==
        std::vector<int64_t>{1, 2, 4, 8});
  // MHA builds on the 8-column npu2 only.
  CHECK(Domain("MHA", "num_pipelines", "npu1").empty());
  CHECK(Domain("MHA", "num_pipelines", "npu2") ==
        std::vector<int64_t>{1, 2, 4, 6, 8});
  CHECK(Domain("Sample", "cores", "npu1") == std::vector<int64_t>{1, 2, 4});
  for (const char* cls :
       {"ElementwiseAdd", "ElementwiseMul", "SiLU", "AXPY", "GELU", "ReLU",
        "Sigmoid", "Tanh", "Clamp", "LeakyReLU", "Dequant"}) {
    CAPTURE(cls);
    CHECK(Domain(cls, "tile_size", "npu2") ==
          std::vector<int64_t>{256, 512, 1024, 2048, 4096});
    CHECK(Domain(cls, "num_aie_columns", "npu1") ==
          std::vector<int64_t>{1, 2, 4});
    CHECK(Domain(cls, "num_channels", "npu1") == std::vector<int64_t>{1, 2});
  }
  // The row length of RMSNorm, LayerNorm and Softmax is a param, not a
  // tunable.
  for (const char* cls : {"RMSNorm", "LayerNorm", "Softmax"}) {
    CAPTURE(cls);
    CHECK(Domain(cls, "tile_size", "npu2").empty());
  }
  // Every known family has a domain for each of its tunables on npu2 (MHA
  // alone refuses npu1).
  for (const Family& f : AllFamilies()) {
    for (const std::string& t : f.tunables) {
      CAPTURE(f.class_name, t);
      if (f.class_name != "MHA")
        CHECK_FALSE(FamilyDomain(f, t, "npu1").empty());
      CHECK_FALSE(FamilyDomain(f, t, "npu2").empty());
    }
  }
  // None for a tunable the family lacks or an unknown generation.
  CHECK(Domain("GEMM", "tile_size", "npu2").empty());
  CHECK(Domain("GEMM", "tile_m", "npu9").empty());
}

TEST_CASE("GEMM constraints, rule by rule", "[families]") {
  CHECK(ConstraintViolation(Gemm(256, 256, 512, 64, 64, 64, 8), "npu2", 8) ==
        "");
  CHECK(ConstraintViolation(Gemm(256, 256, 512, 64, 64, 64, 8), "npu1", 4) ==
        "num_aie_columns 8 exceeds the 4 columns of npu1");
  CHECK(ConstraintViolation(Gemm(256, 256, 512, 64, 64, 64, 0), "npu2", 8) ==
        "num_aie_columns must be at least 1, not 0");
  CHECK(ConstraintViolation(Gemm(256, 256, 256, 64, 0, 64, 1), "npu2", 8) ==
        "tile_k must be at least 1, not 0");
  CHECK(ConstraintViolation(Gemm(100, 256, 256, 64, 64, 64, 1), "npu2", 8) ==
        "M 100 is not a multiple of 4 * tile_m = 256");
  CHECK(ConstraintViolation(Gemm(256, 96, 256, 64, 64, 64, 1), "npu2", 8) ==
        "K 96 is not a multiple of tile_k = 64");
  CHECK(ConstraintViolation(Gemm(256, 256, 256, 64, 64, 64, 8), "npu2", 8) ==
        "N 256 is not a multiple of tile_n * num_aie_columns = 512");
  // MAC shapes: npu1 (4, 8, 4), npu2 (4, 8, 8).
  CHECK(ConstraintViolation(Gemm(16, 256, 256, 4, 64, 64, 1), "npu1", 4) ==
        "tile_m 4 is not a multiple of 2r = 8 (npu1 MAC shape (4, 8, 4))");
  CHECK(ConstraintViolation(Gemm(256, 240, 256, 64, 12, 64, 1), "npu1", 4) ==
        "tile_k 12 is not a multiple of s = 8 (npu1 MAC shape (4, 8, 4))");
  CHECK(ConstraintViolation(Gemm(256, 256, 256, 64, 64, 8, 1), "npu1", 4) ==
        "");
  CHECK(ConstraintViolation(Gemm(256, 256, 256, 64, 64, 8, 1), "npu2", 8) ==
        "tile_n 8 is not a multiple of 2t = 16 (npu2 MAC shape (4, 8, 8))");
  // L1: 2 * (128*128*2) * 3 + stack > 64 KiB.
  CHECK_THAT(
      ConstraintViolation(Gemm(512, 512, 512, 128, 128, 128, 1), "npu2", 8),
      Catch::StartsWith("L1: 2 A + 2 B + 2 C tiles + 3.3 KiB stack "
                        "need 195.3 KiB of 64.0 KiB"));
  // 64 x 128 x 64 bf16: 2*16 + 2*16 + 2*8 KiB + stack = 83.3 KiB.
  CHECK_THAT(
      ConstraintViolation(Gemm(256, 256, 256, 64, 128, 64, 1), "npu2", 8),
      Catch::StartsWith("L1: "));
  // Missing tunables take IRON's defaults: tiles 64, every column.
  v1::Operator bare = Gemm(256, 256, 512, 64, 64, 64, 1);
  bare.clear_tunables();
  CHECK(ConstraintViolation(bare, "npu2", 8) == "");
  CHECK(ConstraintViolation(bare, "npu2", 16) ==
        "N 512 is not a multiple of tile_n * num_aie_columns = 1024");
}

TEST_CASE("GEMV constraints, rule by rule", "[families]") {
  CHECK(ConstraintViolation(Gemv(2048, 8192, 1, 256, 64, 8), "npu2", 8) == "");
  CHECK_THAT(ConstraintViolation(Gemv(2048, 8192, 2, 256, 64, 8), "npu2", 8),
             Catch::StartsWith("L1: 2 A tiles of 2 x 8192"));
  CHECK(ConstraintViolation(Gemv(2048, 2048, 2, 3, 64, 8), "npu2", 8) ==
        "tile_size_output 3 is not a multiple of tile_size_input 2");
  // The kernel's vector width is IRON's to pick: some width in {64, 32, 16}
  // must divide K with K at least twice it; a width given must be one.
  CHECK(ConstraintViolation(Gemv(2048, 96, 1, 256, 32, 8), "npu2", 8) == "");
  CHECK(ConstraintViolation(Gemv(2048, 96, 1, 256, 64, 8), "npu2", 8) ==
        "kernel_vector_size 64 is not legal for K 96: K must be a multiple of "
        "it and at least twice it (legal here: 32, 16)");
  CHECK(ConstraintViolation(Gemv(2048, 24, 1, 256, 64, 8), "npu2", 8) ==
        "K 24 has no kernel vector width in {64, 32, 16} with K a multiple of "
        "it and K >= 2 * width");
  CHECK(ConstraintViolation(Gemv(2048, 2048, 1, 512, 64, 8), "npu2", 8) ==
        "M 2048 is not a multiple of tile_size_output * num_aie_columns = "
        "4096");
  CHECK(ConstraintViolation(Gemv(2048, 2048, 0, 512, 64, 8), "npu2", 8) ==
        "tile_size_input must be at least 1, not 0");
  CHECK(ConstraintViolation(Gemv(2048, 2048, 1, 256, 64, 8), "npu1", 4) ==
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
  CHECK(ConstraintViolation(mha, "npu1", 4) ==
        "MHA is pinned to the 8-column npu2 array");
  SetTunable(mha, "num_pipelines", 7);
  CHECK(ConstraintViolation(mha, "npu2", 8) ==
        "num_pipelines 7 above 6 must be even");
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
  // iron/operators/__init__.py at kIronCommit.
  const std::vector<std::string> iron = {"AXPY",
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

}  // namespace
}  // namespace irontune
