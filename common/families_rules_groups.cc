// The build constraints of the classes added from IRON's newest readable
// sources: GQAScores, GQAContext (iron/operators/gqa.py @ 607010e), Limbs,
// Log, Magnitude, RowwiseMul (on iron/common/elementwise.py), Resample and
// ResampleTaps (iron/operators/resample/op.py @ 19fadcd).
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/families.h"
#include "common/families_rules.h"
#include "common/op_access.h"

namespace irontune::rules {
namespace {

// _KVGroups validate, resolve and compatible (gqa.py), then each kernel's
// L1: one core per head of a group, chunk positions of the cache a block.
std::string KvGroups(const v1::Operator& op, std::string_view generation,
                     int columns) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  const int64_t groups = Param(op, "groups", 0), len = Param(op, "seq_len", 0);
  // A recording of the older gqa_context.py gives heads_per_group, not heads.
  const int64_t heads =
      Param(op, "heads", groups * Param(op, "heads_per_group", 0));
  const int64_t dim = Param(op, "head_dim", 64);
  const int64_t cols = Tunable(op, "num_aie_columns", 1);
  const int64_t chunk = Tunable(op, "chunk", 128);
  if (groups < 1 || heads < 1 || heads % groups != 0) {
    return absl::StrCat("heads ", heads,
                        " is not a positive multiple of groups ", groups);
  }
  if (heads / groups > kCoreRows) {
    return absl::StrCat(
        "heads_per_group ", heads / groups,
        " exceeds the 4 core rows of a column (one core a head)");
  }
  if (groups % cols != 0) {
    return absl::StrCat("groups ", groups, " is not a multiple of the ", cols,
                        " columns");
  }
  if (chunk < 64 || chunk % 64 != 0)
    return absl::StrCat("chunk ", chunk, " is not a multiple of 64");
  if (len < 1 || len % chunk != 0)
    return absl::StrCat("seq_len ", len, " is not a multiple of chunk ", chunk);
  if (op.class_name() == "GQAContext") {
    return L1(2 * chunk * dim * 2 + 64 * dim * 4 + kL1StackBytes,
              "2 value chunks + the partial sums");
  }
  if (!(dim % 16 == 0 && dim >= 32)) {
    return absl::StrCat("head_dim ", dim,
                        " has no GEMV vector width in {64, 32, 16}");
  }
  return L1(2 * chunk * dim * 2 + 2 * dim * 2 + 2 * chunk * 2 + kL1StackBytes,
            "2 key chunks + 2 queries + 2 score blocks");
}

// Rowwise classes with a line of their own: Limbs (6 * line out of line
// in), Magnitude (width / 2 out of width in), RowwiseMul.
std::string RowLine(const v1::Operator& op, std::string_view generation,
                    int columns) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  if (std::string r = Positive(op, {"num_channels"}, 1); !r.empty()) return r;
  const std::string& cls = op.class_name();
  const int64_t rows = Param(op, "rows", 0);
  int64_t in = 0, out = 0, in_bytes = 4, out_bytes = 4, cap = kRowwiseTileCap;
  if (cls == "Limbs") {
    in = Param(op, "line", 0);
    if (in < 32 || in % 32 != 0)
      return absl::StrCat("line ", in,
                          " is not a whole number of 32-element "
                          "vectors");
    out = Param(op, "tile_size", 6 * in);
    if (out != 6 * in)
      return absl::StrCat("tile_size ", out, " is not 6 * line = ", 6 * in);
    out_bytes = 2;
  } else if (cls == "Magnitude") {
    in = Param(op, "width", 0);
    if (in < 64 || in % 64 != 0)
      return absl::StrCat("width ", in,
                          " is not two halves of whole "
                          "32-element vectors");
    out = Param(op, "tile_size", in / 2);
    if (out != in / 2)
      return absl::StrCat("tile_size ", out, " is not width / 2 = ", in / 2);
  } else {  // RowwiseMul
    in = out = Param(op, "tile_size", 0);
    in_bytes = out_bytes = 2;
    cap = 4096;
  }
  if (rows < 1 || out < 1)
    return absl::StrCat(cls, " needs positive rows and a positive line");
  if (out > cap)
    return absl::StrCat("tile_size ", out, " exceeds the ", cap,
                        "-element line one core holds");
  if (std::string r = RowsOverCores(op, rows, 1); !r.empty()) return r;
  const int64_t held = cls == "RowwiseMul" ? in * in_bytes : 0;  // the row
  return L1(2 * in * in_bytes + 2 * out * out_bytes + held + kL1StackBytes,
            "2 lines in + 2 lines out");
}

// Log: the elementwise template over f32 lines in, bf16 out.
std::string LogLine(const v1::Operator& op, std::string_view generation,
                    int columns) {
  if (std::string r = WholeLines(op, generation, columns); !r.empty()) {
    return r;
  }
  const int64_t tile = Tunable(op, "tile_size", kElementwiseDefaultTile);
  return L1(2 * tile * 4 + 2 * tile * 2 + kL1StackBytes,
            absl::StrCat("2 f32 lines in + 2 bf16 lines out of ", tile));
}

// resample/op.py per_chunk: the outputs one chunk of `words` holds.
int64_t PerChunk(int64_t in, int64_t out, int64_t words, int64_t slots) {
  const int64_t fit = (words - 4) / (2 + (ResampleWindow(in, out) + 1) / 2);
  if (slots <= 0) return fit;
  return slots <= fit ? slots : 0;
}

std::string ResampleTaps(const v1::Operator& op, std::string_view generation,
                         int columns) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  if (std::string r = Positive(op, {"num_channels"}, 2); !r.empty()) return r;
  const int64_t in = Param(op, "in_size", 0), out = Param(op, "out_size", 0);
  if (in < 1 || out < 1)
    return absl::StrCat("ResampleTaps: ", in, " -> ", out,
                        " samples; both must be at least 1");
  const int64_t words = Param(op, "words", 256), slots = Param(op, "slots", 0);
  const int64_t per = PerChunk(in, out, words, slots);
  const int64_t chunks =
      Param(op, "chunks",
            16 * ((out + 16 * std::max<int64_t>(1, per) - 1) /
                  (16 * std::max<int64_t>(1, per))));
  const int64_t cores =
      Tunable(op, "num_aie_columns", columns) * Tunable(op, "num_channels", 2);
  if (chunks % cores != 0) {
    return absl::StrCat("chunks ", chunks, " is not a multiple of the ", cores,
                        " cores (num_aie_columns x num_channels)");
  }
  if (per < 1 || per * chunks < out) {
    return absl::StrCat(chunks, " chunks of ", words, " words do not hold ",
                        out, " outputs of a ", ResampleWindow(in, out),
                        "-tap window");
  }
  return "";
}

std::string Resample(const v1::Operator& op, std::string_view generation,
                     int columns) {
  if (std::string r = Columns(op, generation, columns); !r.empty()) return r;
  if (std::string r = Positive(op, {"num_channels"}, 2); !r.empty()) return r;
  const int64_t h = Param(op, "height", 0), w = Param(op, "width", 0);
  const int64_t ho = Param(op, "out_height", 0), wo = Param(op, "out_width", 0);
  if (std::min({h, w, ho, wo}) < 1)
    return "Resample: every size must be at least 1";
  if (ho % 16 != 0 || wo % 16 != 0)
    return absl::StrCat("Resample: ", ho, "x", wo,
                        " is not whole 16-pixel patches");
  const int64_t words = Param(op, "words", 356);
  const int64_t cap = 2 * ((words - 4) / 16 - 2) - 1;
  for (const auto& [in, out] : {std::pair{w, wo}, std::pair{h, ho}}) {
    if (ResampleWindow(in, out) > cap) {
      return absl::StrCat("Resample: ", in, " -> ", out, " samples is a ",
                          ResampleWindow(in, out), "-tap window; ", words,
                          "-word chunks hold ", cap);
    }
  }
  const int64_t cores =
      Tunable(op, "num_aie_columns", columns) * Tunable(op, "num_channels", 2);
  const int64_t strips = wo / 16, bands = ho / 16;
  const int64_t nmax = strips / cores + 1;
  if (nmax > Param(op, "patch_columns", 8)) {
    return absl::StrCat("Resample: ", strips, " patch columns over ", cores,
                        " cores is ", nmax, " a core; a core holds ",
                        Param(op, "patch_columns", 8));
  }
  const int64_t rows = Param(op, "patch_rows", bands * 16 * (wo / 256 + 1));
  if (rows < bands * nmax * cores) {
    return absl::StrCat("Resample: patch_rows is ", rows, "; the image needs ",
                        bands * nmax * cores);
  }
  return "";
}

}  // namespace

std::optional<std::string> Grouped(const v1::Operator& op,
                                   std::string_view generation, int columns) {
  const std::string& cls = op.class_name();
  if (cls == "GQAScores" || cls == "GQAContext")
    return KvGroups(op, generation, columns);
  if (cls == "Limbs" || cls == "Magnitude" || cls == "RowwiseMul")
    return RowLine(op, generation, columns);
  if (cls == "Log") return LogLine(op, generation, columns);
  if (cls == "ResampleTaps") return ResampleTaps(op, generation, columns);
  if (cls == "Resample") return Resample(op, generation, columns);
  return std::nullopt;
}

}  // namespace irontune::rules
