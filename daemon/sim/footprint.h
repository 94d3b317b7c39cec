// Memory footprints of the sim's designs, shared by the builder's limits
// (daemon/sim/sim_limits.h) and the performance model's L1 pressure.
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_SIM_FOOTPRINT_H_
#define IRONTUNE_DAEMON_SIM_FOOTPRINT_H_

#include <cstdint>
#include <string_view>

#include "common/families.h"
#include "daemon/sim/design.h"

namespace irontune::sim {

// DTypeNameBytes and kGemmCTiles (the L1 budget's C tiles) are
// common/families.h's.
using ::irontune::DTypeNameBytes;
using ::irontune::kGemmCTiles;

struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
  // IRON's default tiles (docs/npu-facts.md, "GEMM").
  int64_t tile_m = 64, tile_k = 64, tile_n = 64;
  int64_t columns = 1;
  int in_bytes = 2, out_bytes = 2;
};

// The GEMM's shape and setting from its params and tunables; M bounded by
// the per-call values. Missing tunables take IRON's defaults (tiles 64,
// every column of `platform_columns`).
GemmShape ReadGemm(const OpView& op, int platform_columns);

// docs/npu-facts.md "Memory and DMA": a GEMM tile's L1 budget is 2 A tiles +
// 2 B tiles + kGemmCTiles C tiles + ~3.3 KiB of stack.
int64_t GemmL1Bytes(const GemmShape& g, int stack_bytes);
// Per column memtile: 4 rows' A tiles and one B tile, each double-buffered,
// plus 4 C tiles on their way out, double-buffered [inferred from IRON's
// GEMM data flow].
int64_t GemmMemtileBytes(const GemmShape& g, int core_rows);

}  // namespace irontune::sim

#endif  // IRONTUNE_DAEMON_SIM_FOOTPRINT_H_
