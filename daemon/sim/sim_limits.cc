#include "daemon/sim/sim_limits.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/families.h"
#include "daemon/sim/footprint.h"

namespace irontune::sim {
namespace {

// docs/npu-facts.md "Memory and DMA": shim descriptor d0 and d1 at most 1023
// four-byte units; iter at most 64.
constexpr int64_t kShimMaxUnits = 1023;
constexpr int64_t kShimUnitBytes = 4;
constexpr int64_t kShimMaxIter = 64;

std::string KiB(int64_t bytes) {
  return absl::StrFormat("%.1f KiB", static_cast<double>(bytes) / 1024);
}

// The device's columns, named as the platform reports them ("... exceeds
// the 8 columns of NPU Strix"); ConstraintViolation checks the same bound
// naming only the generation.
std::string Columns(const OpView& op, const SimPreset& p,
                    std::string_view name) {
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

// The GEMM's physical transfer limits: memtile capacity and shim
// descriptors. REQUIRES: the operator passed ConstraintViolation.
std::string GemmTransfers(const OpView& op, const SimPreset& p) {
  GemmShape g = ReadGemm(op, p.columns);
  g.m = op.Param("M", 0);  // the design is built for the whole M
  // docs/npu-facts.md "Memory and DMA": memtile.
  if (int64_t need = GemmMemtileBytes(g, p.core_rows); need > p.memtile_bytes) {
    return absl::StrCat("memtile: A, B and C tiles of a column need ",
                        KiB(need), " of ", KiB(p.memtile_bytes));
  }
  // docs/npu-facts.md "Memory and DMA": shim descriptors. A tile row is d0 and
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

}  // namespace

std::string SimUnsupported(std::string_view cls) {
  if (cls != "Resample" && cls != "ResampleTaps") return "";
  return absl::StrCat(
      AsAbsl(cls),
      ": the simulated NPU has no kernel for IRON's bit-exact antialiased "
      "bicubic resample (its output would be a copy of its input, which no "
      "gate can judge); tune it on an NPU (--device xrt:N)");
}

std::string SimRefusal(const OpView& op, const SimPreset& p) {
  const std::string& cls = op.class_name();
  if (std::string r = Columns(op, p, "num_aie_columns"); !r.empty()) return r;
  if (cls == "MHA") {
    if (std::string r = Columns(op, p, "num_pipelines"); !r.empty()) return r;
  }
  if (std::string r = ConstraintViolation(op.op(), p.generation, p.columns);
      !r.empty()) {
    return r;
  }
  if (cls == "GEMM") return GemmTransfers(op, p);
  return "";
}

}  // namespace irontune::sim
