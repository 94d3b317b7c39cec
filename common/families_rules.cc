// The catalogue's build constraints of the classes read at kIronBaseCommit
// and of GEMM, GEMV, MHA and Softmax at kIronCommit (common/
// families_rules.h). Facts from docs/npu-facts.md; checks it only implies
// are marked [inferred].
#include "common/families_rules.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/families.h"
#include "common/op_access.h"
#include "common/value.h"

namespace irontune::rules {
namespace {

// GEMV's kernel vector widths, widest first (iron/operators/gemv.py).
constexpr int64_t kGemvVectorSizes[] = {64, 32, 16};

}  // namespace

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
                    int columns, std::string_view name) {
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

namespace {

// The placement tunable (when present) one of `names` (placement.py).
std::string Placement(const v1::Operator& op,
                      std::initializer_list<std::string_view> names) {
  const v1::Value* v = nullptr;
  for (const v1::Tunable& t : op.tunables()) {
    if (t.name() == "placement") v = &t.value();
  }
  if (v == nullptr || v->kind_case() == v1::Value::KIND_NOT_SET) return "";
  for (std::string_view n : names) {
    if (v->kind_case() == v1::Value::kStringValue && v->string_value() == n)
      return "";
  }
  std::string list;
  for (std::string_view n : names)
    absl::StrAppend(&list, list.empty() ? "" : ", ", Sv(n));
  return absl::StrCat("placement ", ValueToString(*v), " is none of ", list);
}

}  // namespace

std::string RowsOverCores(const v1::Operator& op, int64_t rows,
                          int64_t default_columns) {
  const int64_t cores = Tunable(op, "num_aie_columns", default_columns) *
                        Tunable(op, "num_channels", 1);
  if (cores < 1 || rows % cores != 0) {
    return absl::StrCat("rows ", rows, " is not a multiple of the ", cores,
                        " cores (num_aie_columns x num_channels)");
  }
  return "";
}

int64_t SoftmaxDefaultBlock(int64_t cols) {
  if (cols <= 4096) return cols;
  for (int64_t b = 1024; b >= 32; b -= 32) {
    if (cols % b == 0) return b;
  }
  return std::min<int64_t>(cols, 1024);
}

int64_t ResampleWindow(int64_t in, int64_t out) {
  if (in < 1 || out < 1) return 0;
  // support = 2 * scale when downsampling (scale = in / out >= 1), else 2;
  // the window 2 * ceil(support) + 1.
  const int64_t ceil_support = in >= out ? (2 * in + out - 1) / out : 2;
  return 2 * ceil_support + 1;
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
    // gemm.py mac_block: aie2 (npu1) blocks m by 4r, aie2p by 2r.
    const int m_rs = generation == "npu1" ? 4 : 2;
    if (tile_m % (m_rs * mac->r) != 0) {
      return absl::StrCat("tile_m ", tile_m, " is not a multiple of ", m_rs,
                          "r = ", m_rs * mac->r, " (", shape, ")");
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
  if (std::string r = Placement(op, {"shims", "tiles"}); !r.empty()) return r;
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
  const int64_t batches = Param(op, "num_batches", 1),
                repeat = Param(op, "repeat", 1);
  if (m < 1 || k < 1)
    return absl::StrCat("GEMV needs positive M and K, not ", m, ", ", k);
  if (repeat < 1 || batches % repeat != 0) {
    return absl::StrCat("repeat ", repeat, " does not divide num_batches ",
                        batches);
  }
  if (std::string r = Positive(
          op, {"tile_size_input", "tile_size_output", "num_channels"}, 1);
      !r.empty()) {
    return r;
  }
  const int64_t bytes = 2;  // bf16
  const int64_t tsi =
      Tunable(op, "tile_size_input", k * bytes <= kGemvRowBankBytes ? 2 : 1);
  const int64_t tso =
      Tunable(op, "tile_size_output", std::max<int64_t>(tsi, 2));
  const int64_t lanes =
      Tunable(op, "num_aie_columns", columns) * Tunable(op, "num_channels", 1);
  if (tso % tsi != 0) {
    return absl::StrCat("tile_size_output ", tso,
                        " is not a multiple of tile_size_input ", tsi);
  }
  std::vector<int64_t> legal;
  for (int64_t w : kGemvVectorSizes) {
    if (k % w == 0 && k >= 2 * w) legal.push_back(w);
  }
  if (legal.empty()) {
    return absl::StrCat("K ", k,
                        " has no kernel vector width in {64, 32, 16} with K a "
                        "multiple of it and K >= 2 * width");
  }
  // IRON derives the width (the widest legal one); one given is checked.
  if (const int64_t v = Tunable(op, "kernel_vector_size", legal[0]);
      std::find(legal.begin(), legal.end(), v) == legal.end()) {
    return absl::StrCat("kernel_vector_size ", v, " is not legal for K ", k,
                        ": K must be a multiple of it and at least twice it "
                        "(legal here: ",
                        absl::StrJoin(legal, ", "), ")");
  }
  if (m % (tso * lanes) != 0) {
    return absl::StrCat("M ", m,
                        " is not a multiple of tile_size_output * "
                        "num_aie_columns * num_channels = ",
                        tso * lanes);
  }
  const int64_t need =
      2 * tsi * k * bytes + k * bytes + 2 * tso * bytes + kL1StackBytes;
  return L1(need, absl::StrCat("2 A tiles of ", tsi, " x ", k,
                               " + B + 2 output tiles"));
}

std::string WholeLines(const v1::Operator& op, std::string_view generation,
                       int columns) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  if (std::string r = Positive(op, {"num_channels"}, 1); !r.empty()) return r;
  const int64_t tile = Tunable(op, "tile_size", kElementwiseDefaultTile);
  if (tile < 1) return absl::StrCat("tile_size must be at least 1, not ", tile);
  if (tile > kElementwiseTileCap) {
    return absl::StrCat("tile_size ", tile, " exceeds the ",
                        kElementwiseTileCap, "-element line one core holds");
  }
  const int64_t n = Param(op, "size", FirstInputElements<int64_t>(op, 1));
  const int64_t share = tile * Tunable(op, "num_aie_columns", columns) *
                        Tunable(op, "num_channels", 1);
  if (n % share != 0) {
    return absl::StrCat(op.class_name(), " of ", n,
                        " elements is not whole lines of tile_size ", tile,
                        " over num_aie_columns x num_channels (", share,
                        " per pass)");
  }
  return "";
}

// The elementwise template: whole lines of tile_size over the cores.
std::string Line(const v1::Operator& op, std::string_view generation,
                 int columns, int buffers) {
  if (std::string r = WholeLines(op, generation, columns); !r.empty()) {
    return r;
  }
  const int64_t tile = Tunable(op, "tile_size", kElementwiseDefaultTile);
  if (op.class_name() == "Clamp" && tile % 32 != 0)
    return absl::StrCat("tile_size ", tile, " is not a multiple of 32");
  if (op.class_name() == "LeakyReLU" && tile < 64)
    return absl::StrCat("tile_size ", tile, " is below LeakyReLU's 64");
  const int64_t need = int64_t{2} * buffers * tile * 2 + kL1StackBytes;
  return L1(need,
            absl::StrCat(buffers, " buffers x 2 lines of ", tile, " bf16"));
}

namespace {

// Softmax's block and streamed (softmax.py compatible).
std::string SoftmaxBlock(const v1::Operator& op, int64_t rows, int64_t cols,
                         int64_t cores) {
  const int64_t block = Tunable(op, "block", SoftmaxDefaultBlock(cols));
  const bool streamed = Tunable(op, "streamed", block < cols ? 1 : 0) != 0;
  if (block < 32 || block % 32 != 0 || cols % block != 0) {
    return absl::StrCat("block ", block,
                        " is not a multiple of 32 dividing cols ", cols);
  }
  if (!streamed && block != cols) {
    return absl::StrCat("block ", block, " is not cols ", cols,
                        ": a row held whole is one block unless streamed");
  }
  if (streamed && rows / cores > 48) {
    return absl::StrCat("a streamed core holds at most 48 rows, not ",
                        rows / cores);
  }
  return L1(int64_t{2} * 3 * block * 2 + kL1StackBytes,
            absl::StrCat("3 buffers x 2 blocks of ", block, " bf16"));
}

}  // namespace

// Rows over cores: RMSNorm, LayerNorm, Softmax.
std::string Rows(const v1::Operator& op, std::string_view generation,
                 int columns, int64_t default_columns) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  if (std::string r = Positive(op, {"num_channels"}, 1); !r.empty()) return r;
  const bool softmax = op.class_name() == "Softmax";
  const int64_t rows = Param(op, "rows", 0);
  const int64_t line = Param(op, softmax ? "cols" : "tile_size", 0);
  if (rows < 1 || line < 1) {
    return absl::StrCat(op.class_name(), " needs positive rows and ",
                        softmax ? "cols" : "tile_size");
  }
  if (softmax && (rows % 16 != 0 || line % 16 != 0))
    return absl::StrCat("rows ", rows, " and cols ", line,
                        " must be multiples of 16");
  const int64_t cap = op.class_name() == "RMSNorm" && Param(op, "weighted", 0)
                          ? 4096
                          : kRowwiseTileCap;
  if (!softmax && line > cap)
    return absl::StrCat("tile_size ", line, " exceeds the ", cap,
                        "-element row one core holds");
  if (std::string r = RowsOverCores(op, rows, default_columns); !r.empty())
    return r;
  const int64_t cores = Tunable(op, "num_aie_columns", default_columns) *
                        Tunable(op, "num_channels", 1);
  if (softmax) return SoftmaxBlock(op, rows, line, cores);
  return L1(int64_t{2} * 3 * line * 2 + kL1StackBytes,
            absl::StrCat("3 buffers x 2 rows of ", line, " bf16"));
}

std::string Rope(const v1::Operator& op, std::string_view generation,
                 int columns) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  const int64_t rows = Param(op, "rows", 0), cols = Param(op, "cols", 0);
  const int64_t angle_rows = Param(op, "angle_rows", rows);
  const int64_t method = Param(op, "method_type", 0);
  if (cols < 32 || cols % 32 != 0)
    return absl::StrCat("cols ", cols, " is not a positive multiple of 32");
  if (method != 0 && method != 1)
    return absl::StrCat("method_type ", method, " is not 0 or 1");
  if (rows < 1 || angle_rows < 1 || angle_rows > rows || rows % angle_rows != 0)
    return absl::StrCat("angle_rows ", angle_rows, " does not divide rows ",
                        rows);
  const int64_t n = Tunable(op, "num_aie_columns", columns);
  if (rows % n != 0 || angle_rows % n != 0) {
    return absl::StrCat("rows ", rows, " and angle_rows ", angle_rows,
                        " are not both multiples of num_aie_columns ", n);
  }
  return "";
}

namespace {

// MHA.COLUMNS (mha.py): the widths it is placed on, and the shim column
// of Q on each, which one query's pipelines stop short of.
int64_t MhaWidth(int columns) { return columns >= 8 ? 8 : 4; }
int64_t MhaQColumn(int64_t width) { return width == 8 ? 4 : 2; }

// One query (seq_len 1), its heads packed into a block's rows.
std::string MhaPacked(const v1::Operator& op, int64_t width) {
  const int64_t heads = Param(op, "num_heads", 0);
  const int64_t kv = Param(op, "num_KV_heads", heads);
  const int64_t b_q = Tunable(op, "B_q", 64);
  const int64_t pipes = Tunable(op, "num_pipelines", 1);
  if (b_q % (heads / kv) != 0) {
    return absl::StrCat("one query packs a KV group's ", heads / kv,
                        " heads into B_q ", b_q,
                        " rows, which they must divide");
  }
  const int64_t q = MhaQColumn(width);
  if (pipes > q || kv % pipes != 0) {
    return absl::StrCat("one query takes num_pipelines ", pipes, " at most ", q,
                        " dividing num_KV_heads ", kv);
  }
  return "";
}

// The block and length rules of mha.py compatible() and check_derived.
std::string MhaBlocks(const v1::Operator& op, int64_t width) {
  const int64_t pipes = Tunable(op, "num_pipelines", 1);
  const int64_t b_q = Tunable(op, "B_q", 64), b_kv = Tunable(op, "B_kv", 64);
  if (b_q != b_kv)
    return absl::StrCat("B_q ", b_q, " and B_kv ", b_kv, " must match");
  if (b_kv % 64 != 0) {
    return absl::StrCat("B_kv ", b_kv,
                        " is not a multiple of 64, the vector the softmax "
                        "masks a row of keys by");
  }
  const int64_t seq_len = Param(op, "seq_len", 0);
  const bool packed = seq_len == 1;
  const int64_t unit = b_q * pipes;
  const int64_t seq_pad = Param(
      op, "seq_pad",
      packed ? 1 : (std::max<int64_t>(seq_len, 1) + unit - 1) / unit * unit);
  if (!packed && seq_pad % unit != 0) {
    return absl::StrCat("seq_pad ", seq_pad,
                        " is not a multiple of B_q * num_pipelines = ", unit);
  }
  const int64_t kv_len = Param(op, "kv_len", seq_pad);
  if (kv_len % b_kv != 0 || kv_len < seq_pad) {
    return absl::StrCat("kv_len ", kv_len, " is not whole ", b_kv,
                        "-row blocks of at least seq_pad ", seq_pad);
  }
  if (pipes > width) {
    return absl::StrCat("num_pipelines ", pipes, " exceeds the ", width,
                        " columns MHA is placed on, one pipeline a column");
  }
  return packed ? MhaPacked(op, width) : "";
}

}  // namespace

std::string Mha(const v1::Operator& op, std::string_view generation,
                int columns) {
  if (columns < 4) {
    return absl::StrCat("MHA is placed on 4 columns or more; ", Sv(generation),
                        " has ", columns);
  }
  const int64_t pipes = Tunable(op, "num_pipelines", 1);
  const int64_t b_q = Tunable(op, "B_q", 64), b_kv = Tunable(op, "B_kv", 64);
  const int64_t heads = Param(op, "num_heads", 0);
  const int64_t kv = Param(op, "num_KV_heads", heads);
  if (Param(op, "d", 64) != 64) return "MHA supports d = 64 only";
  if (pipes < 1) return absl::StrCat("num_pipelines ", pipes, " is below 1");
  if (pipes > 6 && pipes % 2 != 0)
    return absl::StrCat("num_pipelines ", pipes, " above 6 must be even");
  // [inferred] the micro-tiles of the bfp16 QK^T and PV products: 8 x 8.
  if (b_q < 8 || b_q % 8 != 0 || b_kv < 8 || b_kv % 8 != 0)
    return absl::StrCat("B_q ", b_q, " and B_kv ", b_kv,
                        " must be multiples of the micro-tile 8");
  if (heads < 1 || kv < 1 || kv > heads || heads % kv != 0) {
    return absl::StrCat("num_heads ", heads,
                        " is not a positive multiple of num_KV_heads ", kv);
  }
  if (std::string r = Placement(op, {"memtiles", "tiles", "columns"});
      !r.empty()) {
    return r;
  }
  return MhaBlocks(op, MhaWidth(columns));
}

std::string Tiled(const v1::Operator& op, std::string_view generation,
                  int columns) {
  const std::string& cls = op.class_name();
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  const int64_t cols = Tunable(op, "num_aie_columns", columns);
  if (cls == "DepthwiseConv1d") {
    const int64_t rows = Param(op, "rows", 0), ch = Param(op, "channels", 0);
    if (ch < 32 || ch % 32 != 0)
      return absl::StrCat("channels ", ch, " is not a multiple of 32");
    if (rows % cols != 0 || rows / cols < 4)
      return absl::StrCat("rows ", rows, " does not split into ", cols,
                          " runs of at least 4");
    return "";
  }
  // Transpose.
  const int64_t m = Tunable(op, "m", 64), n = Tunable(op, "n", 64),
                s = Tunable(op, "s", 8), ch = Tunable(op, "num_channels", 1);
  if (s < 1 || m % s != 0 || n % s != 0)
    return absl::StrCat("m ", m, " and n ", n, " must be multiples of s ", s);
  if (m * n > 8192) return absl::StrCat("m * n ", m * n, " exceeds 8192");
  if (s == 8 && (m <= 16 || n <= 16)) return "s 8 needs m and n above 16";
  if (Param(op, "M", 0) % (m * ch) != 0 || Param(op, "N", 0) % (n * cols) != 0)
    return absl::StrCat(
        "M must be a multiple of m * num_channels and N of "
        "n * num_aie_columns");
  return "";
}

std::string Movement(const v1::Operator& op, int columns) {
  const std::string& cls = op.class_name();
  if (cls == "Sample") {
    const int64_t vocab = Param(op, "vocab", 0),
                  cores = Tunable(op, "cores", 4);
    if (cores < 1 || cores > columns)
      return absl::StrCat("cores ", cores, " is not 1 to ", columns);
    if (vocab < 1 || vocab % cores != 0)
      return absl::StrCat("vocab ", vocab, " does not split over ", cores,
                          " cores");
    if (!HasTunable(op, "chunk")) return "";
    const int64_t chunk = Tunable(op, "chunk", 2);
    if (chunk < 2 || chunk % 2 != 0 || chunk > 8192 ||
        (vocab / cores) % chunk != 0)
      return absl::StrCat("chunk ", chunk,
                          " is not an even divisor of the slice ",
                          vocab / cores, " up to 8192");
    return "";
  }
  if (cls == "Dequant") {
    const int64_t cores = Tunable(op, "num_aie_columns", columns) *
                          Tunable(op, "num_channels", 1);
    const int64_t tile = Tunable(op, "tile_size", 4096);
    const int64_t size = Param(op, "size", 0);
    if (cores < 1 || cores > 16)
      return absl::StrCat(cores, " cores; at most 16");
    if (tile < 1 || size % (cores * std::min<int64_t>(tile, 16384)) != 0)
      return absl::StrCat("size ", size, " is not whole tiles over ", cores,
                          " cores");
    return "";
  }
  // Copy.
  const int64_t ch = Tunable(op, "num_channels", 1);
  const int64_t n = Param(op, "input_buffer_size", 0);
  if (ch < 1 || n % ch != 0)
    return absl::StrCat("input_buffer_size ", n,
                        " is not a multiple of num_channels ", ch);
  const int64_t tile = Tunable(op, "tile_size", n / ch);
  if (tile < 1 || (n / ch) % tile != 0)
    return absl::StrCat("tile_size ", tile,
                        " does not divide the per-channel transfer ", n / ch);
  return "";
}

}  // namespace irontune::rules
