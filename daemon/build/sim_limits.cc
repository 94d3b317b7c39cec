#include "daemon/build/sim_limits.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/device/sim/footprint.h"

namespace irontune::sim {
namespace {

// NPU_FACTS.md "Memory and DMA": shim descriptor d0 and d1 at most 1023
// four-byte units; iter at most 64.
constexpr int64_t kShimMaxUnits = 1023;
constexpr int64_t kShimUnitBytes = 4;
constexpr int64_t kShimMaxIter = 64;
// NPU_FACTS.md "GEMV": kernel_vector_size in {64, 32, 16}.
constexpr int64_t kGemvVectorSizes[] = {16, 32, 64};

std::string KiB(int64_t bytes) {
  return absl::StrFormat("%.1f KiB", static_cast<double>(bytes) / 1024);
}

// The check of an L1 budget: empty when `need` fits.
std::string L1(const SimPreset& p, int64_t need, std::string_view what) {
  if (need <= p.l1_bytes) return "";
  return absl::StrCat("L1: ", AsAbsl(what), " + ", KiB(p.l1_stack_bytes),
                      " stack need ", KiB(need), " of ", KiB(p.l1_bytes));
}

std::string Columns(const OpView& op, const SimPreset& p,
                    std::string_view name = "num_aie_columns") {
  if (!op.HasTunable(name)) return "";
  const int64_t cols = op.Tunable(name, 1);
  if (cols < 1)
    return absl::StrCat(AsAbsl(name), " must be at least 1, not ", cols);
  if (cols > p.columns) {
    return absl::StrCat(AsAbsl(name), " ", cols, " exceeds the ", p.columns,
                        " columns of ", p.name);
  }
  return "";
}

std::string Positive(const OpView& op,
                     std::initializer_list<std::string_view> names,
                     int64_t fallback) {
  for (std::string_view name : names) {
    const int64_t v = op.Tunable(name, fallback);
    if (v < 1)
      return absl::StrCat(AsAbsl(name), " must be at least 1, not ", v);
  }
  return "";
}

int64_t FirstInputElements(const v1::Operator& op, int64_t fallback) {
  for (const v1::Buffer& b : op.buffers()) {
    if (b.role() != v1::BUFFER_ROLE_IN && b.role() != v1::BUFFER_ROLE_INOUT)
      continue;
    int64_t n = 1;
    for (uint64_t e : b.shape())
      n *= static_cast<int64_t>(std::min<uint64_t>(e, 1u << 30));
    return n;
  }
  return fallback;
}

std::string Gemm(const OpView& op, const SimPreset& p) {
  GemmShape g = ReadGemm(op, p.columns);
  g.m = op.Param("M", 0);  // the design is built for the whole M
  if (std::string r = Columns(op, p); !r.empty()) return r;
  if (std::string r = Positive(op, {"tile_m", "tile_k", "tile_n"}, 64);
      !r.empty())
    return r;
  if (g.m < 1 || g.k < 1 || g.n < 1) {
    return absl::StrCat("GEMM needs positive M, K and N, not ", g.m, ", ", g.k,
                        ", ", g.n);
  }
  // NPU_FACTS.md "GEMM": divisibility.
  if (g.m % (p.core_rows * g.tile_m) != 0) {
    return absl::StrCat("M ", g.m, " is not a multiple of 4 * tile_m = ",
                        p.core_rows * g.tile_m);
  }
  if (g.k % g.tile_k != 0) {
    return absl::StrCat("K ", g.k, " is not a multiple of tile_k = ", g.tile_k);
  }
  if (g.n % (g.tile_n * g.columns) != 0) {
    return absl::StrCat("N ", g.n,
                        " is not a multiple of tile_n * num_aie_columns = ",
                        g.tile_n * g.columns);
  }
  // NPU_FACTS.md "GEMM": MAC-shape multiples (npu2's shape [inferred]).
  const MacShape& mac = p.bf16_mac;
  const std::string shape = absl::StrCat(p.generation, " MAC shape (", mac.r,
                                         ", ", mac.s, ", ", mac.t, ")");
  if (g.tile_m % (2 * mac.r) != 0) {
    return absl::StrCat("tile_m ", g.tile_m,
                        " is not a multiple of 2r = ", 2 * mac.r, " (", shape,
                        ")");
  }
  if (g.tile_k % mac.s != 0) {
    return absl::StrCat("tile_k ", g.tile_k,
                        " is not a multiple of s = ", mac.s, " (", shape, ")");
  }
  if (g.tile_n % (2 * mac.t) != 0) {
    return absl::StrCat("tile_n ", g.tile_n,
                        " is not a multiple of 2t = ", 2 * mac.t, " (", shape,
                        ")");
  }
  // NPU_FACTS.md "Memory and DMA": L1 budget, memtile.
  if (std::string r = L1(p, GemmL1Bytes(g, p.l1_stack_bytes),
                         absl::StrCat("2 A + 2 B + ", kGemmCTiles, " C tiles"));
      !r.empty()) {
    return r;
  }
  if (int64_t need = GemmMemtileBytes(g, p.core_rows); need > p.memtile_bytes) {
    return absl::StrCat("memtile: A, B and C tiles of a column need ",
                        KiB(need), " of ", KiB(p.memtile_bytes));
  }
  // NPU_FACTS.md "Memory and DMA": shim descriptors. A tile row is d0 and
  // its rows d1 [inferred: IRON's GEMM transfers]; A is resent once per
  // block of N in the stride-0 iter dimension [inferred].
  const int64_t a_d0 = g.tile_k * g.in_bytes / kShimUnitBytes;
  const int64_t b_d0 = g.tile_n * g.in_bytes / kShimUnitBytes;
  if (a_d0 > kShimMaxUnits) {
    return absl::StrCat("shim: an A tile row of tile_k ", g.tile_k, " is ",
                        a_d0, " four-byte units; d0 allows ", kShimMaxUnits);
  }
  if (b_d0 > kShimMaxUnits) {
    return absl::StrCat("shim: a B tile row of tile_n ", g.tile_n, " is ", b_d0,
                        " four-byte units; d0 allows ", kShimMaxUnits);
  }
  if (g.tile_m > kShimMaxUnits || g.tile_k > kShimMaxUnits) {
    return absl::StrCat("shim: tiles of ", std::max(g.tile_m, g.tile_k),
                        " rows exceed d1's ", kShimMaxUnits);
  }
  if (const int64_t iter = g.n / (g.tile_n * g.columns); iter > kShimMaxIter) {
    return absl::StrCat("shim: A is resent N / (tile_n * num_aie_columns) = ",
                        iter, " times; iter allows ", kShimMaxIter);
  }
  return "";
}

std::string Gemv(const OpView& op, const SimPreset& p) {
  if (std::string r = Columns(op, p); !r.empty()) return r;
  const int64_t m = op.Param("M", 0), k = op.Param("K", 0);
  const int64_t cols = op.Tunable("num_aie_columns", p.columns);
  const int64_t tsi = op.Tunable("tile_size_input", 2);
  const int64_t tso = op.Tunable(
      "tile_size_output", std::max<int64_t>(m / std::max<int64_t>(cols, 1), 1));
  const int64_t v = op.Tunable("kernel_vector_size", 64);
  if (m < 1 || k < 1)
    return absl::StrCat("GEMV needs positive M and K, not ", m, ", ", k);
  if (std::string r = Positive(op, {"tile_size_input", "tile_size_output"}, 1);
      !r.empty()) {
    return r;
  }
  // NPU_FACTS.md "GEMV".
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
      2 * tsi * k * bytes + k * bytes + 2 * tso * bytes + p.l1_stack_bytes;
  return L1(
      p, need,
      absl::StrCat("2 A tiles of ", tsi, " x ", k, " + x + 2 output tiles"));
}

enum class Tail { kRefused, kPadded };

// Element-wise families: `buffers` tiles of `tile_elements` x the tunable
// elements each, double-buffered.
std::string Stream(const OpView& op, const SimPreset& p, int64_t elements,
                   int buffers, std::string_view tunable = "tile_size",
                   Tail tail = Tail::kRefused, int64_t tile_elements = 1) {
  if (std::string r = Columns(op, p); !r.empty()) return r;
  const int64_t tile = op.Tunable(tunable, 1024);
  if (tile < 1)
    return absl::StrCat(AsAbsl(tunable), " must be at least 1, not ", tile);
  // [inferred] a kernel call takes whole tiles (Sample pads its last).
  if (tail == Tail::kRefused && elements % tile != 0) {
    return absl::StrCat(op.class_name(), " of ", elements,
                        " elements is not a multiple of ", AsAbsl(tunable), " ",
                        tile);
  }
  const int64_t need =
      int64_t{2} * buffers * tile * tile_elements * 2 + p.l1_stack_bytes;
  return L1(p, need,
            absl::StrCat(buffers, " buffers x 2 tiles of ",
                         tile * tile_elements, " bf16"));
}

std::string Mha(const OpView& op, const SimPreset& p) {
  const int64_t pipes = op.Tunable("num_pipelines", 1);
  const int64_t heads = op.Param("num_heads", 0),
                kv = op.Param("num_KV_heads", 0);
  if (pipes < 1)
    return absl::StrCat("num_pipelines must be at least 1, not ", pipes);
  // [inferred] a pipeline is a column.
  if (pipes > p.columns) {
    return absl::StrCat("num_pipelines ", pipes, " exceeds the ", p.columns,
                        " columns of ", p.name);
  }
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

std::string SimRefusal(const OpView& op, const SimPreset& p) {
  const std::string& cls = op.class_name();
  if (cls == "GEMM") return Gemm(op, p);
  if (cls == "GEMV") return Gemv(op, p);
  if (cls == "MHA") return Mha(op, p);
  if (cls == "ElementwiseAdd" || cls == "ElementwiseMul") {
    return Stream(op, p, FirstInputElements(op.op(), op.Param("size", 1)), 3);
  }
  if (cls == "SiLU")
    return Stream(op, p, FirstInputElements(op.op(), op.Param("size", 1)), 2);
  if (cls == "RMSNorm") {
    const int64_t n =
        FirstInputElements(op.op(), op.Param("rows", 1) * op.Param("batch", 1));
    return Stream(op, p, n, op.Param("weighted", 0) ? 3 : 2);
  }
  if (cls == "Softmax") {
    const int64_t cols = op.Param("cols", 1);
    const int64_t tile = op.Tunable("tile_size", 1024);
    if (cols > 0 && tile > 0 && tile % cols != 0) {
      return absl::StrCat("tile_size ", tile, " does not hold whole rows of ",
                          cols);
    }
    return Stream(op, p,
                  FirstInputElements(op.op(), op.Param("rows", 1) * cols), 2);
  }
  if (cls == "RoPE") {
    if (op.Param("head_dim", 2) % 2 != 0) return "RoPE needs an even head_dim";
    // Tiles of tile_rows rows: x in, y out and a cos/sin table.
    const int64_t row = op.Param("num_heads", 1) * op.Param("head_dim", 1);
    return Stream(op, p, op.Param("rows", 1), 3, "tile_rows", Tail::kRefused,
                  row);
  }
  if (cls == "Sample") {
    return Stream(op, p, op.Param("vocab", 1), 1, "tile_size", Tail::kPadded);
  }
  return Columns(op, p);
}

}  // namespace irontune::sim
