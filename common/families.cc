#include "common/families.h"

#include <algorithm>

#include "common/value.h"

namespace irontune {
namespace {

Dim Required(std::string name) { return Dim{std::move(name), v1::Value()}; }
Dim Default(std::string name, v1::Value v) {
  return Dim{std::move(name), std::move(v)};
}

std::vector<Family> MakeFamilies() {
  const std::vector<std::string> sized = {"tile_size", "num_aie_columns"};
  return {
      {"GEMM",
       {Required("M"), Required("K"), Required("N"),
        Default("b_col_maj", BoolValue(false)),
        Default("c_col_maj", BoolValue(false)),
        Default("dtype_in", StringValue("bf16")),
        Default("dtype_out", StringValue("bf16"))},
       {"tile_m", "tile_k", "tile_n", "num_aie_columns"}},
      {"GEMV",
       {Required("M"), Required("K"), Default("num_batches", IntValue(1))},
       {"num_aie_columns", "tile_size_input", "tile_size_output",
        "kernel_vector_size"}},
      {"RMSNorm",
       {Required("rows"), Default("batch", IntValue(1)),
        Default("weighted", BoolValue(false))},
       sized},
      {"Softmax", {Required("rows"), Required("cols")}, sized},
      {"ElementwiseAdd", {Required("size")}, sized},
      {"ElementwiseMul", {Required("size")}, sized},
      {"SiLU", {Required("size")}, sized},
      {"RoPE",
       {Required("rows"), Required("num_heads"), Required("head_dim")},
       {"tile_rows", "num_aie_columns"}},
      {"MHA",
       {Required("num_heads"), Required("num_KV_heads"), Required("d"),
        Required("seq_pad")},
       {"num_pipelines"}},
      {"Sample",
       {Required("vocab"), Required("k_max")},
       {"tile_size", "num_aie_columns"}},
  };
}

}  // namespace

const std::vector<Family>& AllFamilies() {
  static const std::vector<Family>* families =
      new std::vector<Family>(MakeFamilies());
  return *families;
}

const Family* FindFamily(std::string_view class_name) {
  const auto& all = AllFamilies();
  auto it = std::find_if(all.begin(), all.end(), [&](const Family& f) {
    return f.class_name == class_name;
  });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace irontune
