#include "common/families.h"

#include <algorithm>
#include <initializer_list>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/op_access.h"
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

// Abseil 20220623 on Debian 12 has its own string_view (not std::).
absl::string_view Sv(std::string_view s) { return {s.data(), s.size()}; }

// Usable columns per generation (docs/npu-facts.md "Devices").
int GenerationColumns(std::string_view generation) {
  if (generation == "npu1") return 4;
  if (generation == "npu2") return 8;
  return 0;
}

std::vector<v1::Value> Ints(std::initializer_list<int64_t> values) {
  std::vector<v1::Value> out;
  for (int64_t v : values) out.push_back(IntValue(v));
  return out;
}

// Powers of two from 1 to `columns`: how IRON spreads work over columns.
std::vector<v1::Value> ColumnDomain(int columns) {
  std::vector<v1::Value> out;
  for (int64_t c = 1; c <= columns; c *= 2) out.push_back(IntValue(c));
  return out;
}

// ---------------------------------------------------------------------------
// Constraints. Each returns the first violation, or "".

// GEMV's kernel_vector_size (docs/npu-facts.md "GEMV").
constexpr int64_t kGemvVectorSizes[] = {16, 32, 64};

std::string KiB(int64_t bytes) {
  return absl::StrFormat("%.1f KiB", static_cast<double>(bytes) / 1024);
}

std::string L1(int64_t need, std::string_view what) {
  if (need <= kL1Bytes) return "";
  return absl::StrCat("L1: ", Sv(what), " + ", KiB(kL1StackBytes),
                      " stack need ", KiB(need), " of ", KiB(kL1Bytes));
}

int64_t Param(const v1::Operator& op, std::string_view name, int64_t fallback) {
  return IntParam(op, name).value_or(fallback);
}

int64_t Tunable(const v1::Operator& op, std::string_view name,
                int64_t fallback) {
  return IntTunable(op, name).value_or(fallback);
}

std::string Columns(const v1::Operator& op, std::string_view generation,
                    int columns, std::string_view name = "num_aie_columns") {
  if (!HasTunable(op, name)) return "";
  const int64_t cols = Tunable(op, name, 1);
  if (cols < 1)
    return absl::StrCat(Sv(name), " must be at least 1, not ", cols);
  if (cols > columns) {
    return absl::StrCat(Sv(name), " ", cols, " exceeds the ", columns,
                        " columns of ", Sv(generation));
  }
  return "";
}

std::string Positive(const v1::Operator& op,
                     std::initializer_list<std::string_view> names,
                     int64_t fallback) {
  for (std::string_view name : names) {
    const int64_t v = Tunable(op, name, fallback);
    if (v < 1) return absl::StrCat(Sv(name), " must be at least 1, not ", v);
  }
  return "";
}

std::string Gemm(const v1::Operator& op, std::string_view generation,
                 int columns) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  if (std::string r = Positive(op, {"tile_m", "tile_k", "tile_n"}, 64);
      !r.empty())
    return r;
  const int64_t m = Param(op, "M", 0), k = Param(op, "K", 0),
                n = Param(op, "N", 0);
  const int64_t tile_m = Tunable(op, "tile_m", 64),
                tile_k = Tunable(op, "tile_k", 64),
                tile_n = Tunable(op, "tile_n", 64),
                cols = Tunable(op, "num_aie_columns", columns);
  if (m < 1 || k < 1 || n < 1) {
    return absl::StrCat("GEMM needs positive M, K and N, not ", m, ", ", k,
                        ", ", n);
  }
  // docs/npu-facts.md "GEMM": divisibility.
  if (m % (kCoreRows * tile_m) != 0) {
    return absl::StrCat(
        "M ", m, " is not a multiple of 4 * tile_m = ", kCoreRows * tile_m);
  }
  if (k % tile_k != 0) {
    return absl::StrCat("K ", k, " is not a multiple of tile_k = ", tile_k);
  }
  if (n % (tile_n * cols) != 0) {
    return absl::StrCat(
        "N ", n,
        " is not a multiple of tile_n * num_aie_columns = ", tile_n * cols);
  }
  // docs/npu-facts.md "GEMM": MAC-shape multiples (npu2's shape [inferred]).
  if (std::optional<MacShape> mac = Bf16MacShape(generation)) {
    const std::string shape =
        absl::StrCat(Sv(generation), " MAC shape (", mac->r, ", ", mac->s, ", ",
                     mac->t, ")");
    if (tile_m % (2 * mac->r) != 0) {
      return absl::StrCat("tile_m ", tile_m,
                          " is not a multiple of 2r = ", 2 * mac->r, " (",
                          shape, ")");
    }
    if (tile_k % mac->s != 0) {
      return absl::StrCat("tile_k ", tile_k,
                          " is not a multiple of s = ", mac->s, " (", shape,
                          ")");
    }
    if (tile_n % (2 * mac->t) != 0) {
      return absl::StrCat("tile_n ", tile_n,
                          " is not a multiple of 2t = ", 2 * mac->t, " (",
                          shape, ")");
    }
  }
  // docs/npu-facts.md "Memory and DMA": L1 budget.
  const int64_t in = DTypeNameBytes(StringParam(op, "dtype_in", "bf16"));
  const int64_t out = DTypeNameBytes(StringParam(op, "dtype_out", "bf16"));
  const int64_t need = 2 * tile_m * tile_k * in + 2 * tile_k * tile_n * in +
                       kGemmCTiles * tile_m * tile_n * out + kL1StackBytes;
  return L1(need, absl::StrCat("2 A + 2 B + ", kGemmCTiles, " C tiles"));
}

std::string Gemv(const v1::Operator& op, std::string_view generation,
                 int columns) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  const int64_t m = Param(op, "M", 0), k = Param(op, "K", 0);
  const int64_t cols = Tunable(op, "num_aie_columns", columns);
  const int64_t tsi = Tunable(op, "tile_size_input", 2);
  const int64_t tso =
      Tunable(op, "tile_size_output",
              std::max<int64_t>(m / std::max<int64_t>(cols, 1), 1));
  const int64_t v = Tunable(op, "kernel_vector_size", 64);
  if (m < 1 || k < 1)
    return absl::StrCat("GEMV needs positive M and K, not ", m, ", ", k);
  if (std::string r = Positive(op, {"tile_size_input", "tile_size_output"}, 1);
      !r.empty()) {
    return r;
  }
  // docs/npu-facts.md "GEMV".
  if (tso % tsi != 0) {
    return absl::StrCat("tile_size_output ", tso,
                        " is not a multiple of tile_size_input ", tsi);
  }
  if (std::find(std::begin(kGemvVectorSizes), std::end(kGemvVectorSizes), v) ==
      std::end(kGemvVectorSizes)) {
    return absl::StrCat("kernel_vector_size ", v, " is not 16, 32 or 64");
  }
  if (k % v != 0)
    return absl::StrCat("K ", k, " is not a multiple of kernel_vector_size ",
                        v);
  if (k < 2 * v)
    return absl::StrCat("K ", k, " is below 2 * kernel_vector_size = ", 2 * v);
  // [inferred] each column writes whole output tiles.
  if (m % (tso * cols) != 0) {
    return absl::StrCat(
        "M ", m, " is not a multiple of tile_size_output * num_aie_columns = ",
        tso * cols);
  }
  const int64_t bytes = 2;  // bf16
  const int64_t need =
      2 * tsi * k * bytes + k * bytes + 2 * tso * bytes + kL1StackBytes;
  return L1(need, absl::StrCat("2 A tiles of ", tsi, " x ", k,
                               " + x + 2 output tiles"));
}

enum class Tail { kRefused, kPadded };

// Streaming families: `buffers` tiles of `tile_elements` x the tunable
// elements each, double-buffered, bf16.
std::string Stream(const v1::Operator& op, std::string_view generation,
                   int columns, int64_t elements, int buffers,
                   std::string_view tunable = "tile_size",
                   Tail tail = Tail::kRefused, int64_t tile_elements = 1) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  const int64_t tile = Tunable(op, tunable, 1024);
  if (tile < 1)
    return absl::StrCat(Sv(tunable), " must be at least 1, not ", tile);
  // [inferred] a kernel call takes whole tiles (Sample pads its last).
  if (tail == Tail::kRefused && elements % tile != 0) {
    return absl::StrCat(op.class_name(), " of ", elements,
                        " elements is not a multiple of ", Sv(tunable), " ",
                        tile);
  }
  const int64_t need =
      int64_t{2} * buffers * tile * tile_elements * 2 + kL1StackBytes;
  return L1(need, absl::StrCat(buffers, " buffers x 2 tiles of ",
                               tile * tile_elements, " bf16"));
}

std::string Mha(const v1::Operator& op, std::string_view generation,
                int columns) {
  const int64_t pipes = Tunable(op, "num_pipelines", 1);
  const int64_t heads = Param(op, "num_heads", 0),
                kv = Param(op, "num_KV_heads", 0);
  if (pipes < 1)
    return absl::StrCat("num_pipelines must be at least 1, not ", pipes);
  // [inferred] a pipeline is a column.
  if (std::string r = Columns(op, generation, columns, "num_pipelines");
      !r.empty())
    return r;
  if (heads < 1 || kv < 1 || heads % kv != 0) {
    return absl::StrCat("num_heads ", heads,
                        " is not a positive multiple of num_KV_heads ", kv);
  }
  if (heads % pipes != 0) {
    return absl::StrCat("num_heads ", heads,
                        " is not a multiple of num_pipelines ", pipes);
  }
  return "";
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

std::optional<MacShape> Bf16MacShape(std::string_view generation) {
  if (generation == "npu1") return MacShape{4, 8, 4};
  if (generation == "npu2") return MacShape{4, 8, 8};
  return std::nullopt;
}

int DTypeNameBytes(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(Sv(name));
  if (lower == "i8" || lower == "int8" || lower == "u8" || lower == "uint8") {
    return 1;
  }
  if (lower == "f32" || lower == "float32" || lower == "i32" ||
      lower == "int32") {
    return 4;
  }
  return 2;
}

std::vector<v1::Value> FamilyDomain(const Family& family,
                                    std::string_view tunable,
                                    std::string_view generation) {
  const int columns = GenerationColumns(generation);
  if (columns == 0 || std::find(family.tunables.begin(), family.tunables.end(),
                                tunable) == family.tunables.end()) {
    return {};
  }
  const std::string& cls = family.class_name;
  // Columns and pipelines: every power of two the device has.
  if (tunable == "num_aie_columns" || tunable == "num_pipelines") {
    return ColumnDomain(columns);
  }
  if (cls == "GEMM") {
    if (tunable == "tile_k") return Ints({32, 64, 128, 256});
    return Ints({32, 64, 128});  // tile_m, tile_n
  }
  if (cls == "GEMV") {
    if (tunable == "tile_size_input") return Ints({1, 2, 4});
    if (tunable == "tile_size_output") return Ints({32, 64, 128, 256, 512});
    if (tunable == "kernel_vector_size") return Ints({16, 32, 64});
  }
  if (tunable == "tile_rows") return Ints({1, 2, 4, 8, 16, 32});
  if (tunable == "tile_size") return Ints({256, 512, 1024, 2048, 4096});
  return {};
}

std::string ConstraintViolation(const v1::Operator& op,
                                std::string_view generation, int columns) {
  const std::string& cls = op.class_name();
  const std::string_view gen = generation;
  if (cls == "GEMM") return Gemm(op, gen, columns);
  if (cls == "GEMV") return Gemv(op, gen, columns);
  if (cls == "MHA") return Mha(op, gen, columns);
  if (cls == "ElementwiseAdd" || cls == "ElementwiseMul") {
    return Stream(op, gen, columns,
                  FirstInputElements<int64_t>(op, Param(op, "size", 1)), 3);
  }
  if (cls == "SiLU") {
    return Stream(op, gen, columns,
                  FirstInputElements<int64_t>(op, Param(op, "size", 1)), 2);
  }
  if (cls == "RMSNorm") {
    const int64_t n = FirstInputElements<int64_t>(
        op, Param(op, "rows", 1) * Param(op, "batch", 1));
    return Stream(op, gen, columns, n, Param(op, "weighted", 0) ? 3 : 2);
  }
  if (cls == "Softmax") {
    const int64_t cols = Param(op, "cols", 1);
    const int64_t tile = Tunable(op, "tile_size", 1024);
    if (cols > 0 && tile > 0 && tile % cols != 0) {
      return absl::StrCat("tile_size ", tile, " does not hold whole rows of ",
                          cols);
    }
    return Stream(op, gen, columns,
                  FirstInputElements<int64_t>(op, Param(op, "rows", 1) * cols),
                  2);
  }
  if (cls == "RoPE") {
    if (Param(op, "head_dim", 2) % 2 != 0) return "RoPE needs an even head_dim";
    // Tiles of tile_rows rows: x in, y out and a cos/sin table.
    const int64_t row = Param(op, "num_heads", 1) * Param(op, "head_dim", 1);
    return Stream(op, gen, columns, Param(op, "rows", 1), 3, "tile_rows",
                  Tail::kRefused, row);
  }
  if (cls == "Sample") {
    return Stream(op, gen, columns, Param(op, "vocab", 1), 1, "tile_size",
                  Tail::kPadded);
  }
  return Columns(op, gen, columns);
}

}  // namespace irontune
