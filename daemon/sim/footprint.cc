#include "daemon/sim/footprint.h"

namespace irontune::sim {

GemmShape ReadGemm(const OpView& op, int platform_columns) {
  GemmShape g;
  g.m = op.Extent("M", 0);
  g.k = op.Param("K", 0);
  g.n = op.Param("N", 0);
  g.tile_m = op.Tunable("tile_m", g.tile_m);
  g.tile_k = op.Tunable("tile_k", g.tile_k);
  g.tile_n = op.Tunable("tile_n", g.tile_n);
  g.columns = op.Tunable("num_aie_columns", platform_columns);
  g.in_bytes = DTypeNameBytes(op.StringParam("dtype_in", "bf16"));
  g.out_bytes = DTypeNameBytes(op.StringParam("dtype_out", "bf16"));
  return g;
}

int64_t GemmL1Bytes(const GemmShape& g, int stack_bytes) {
  const int64_t a = g.tile_m * g.tile_k * g.in_bytes;
  const int64_t b = g.tile_k * g.tile_n * g.in_bytes;
  const int64_t c = g.tile_m * g.tile_n * g.out_bytes;
  return 2 * a + 2 * b + kGemmCTiles * c + stack_bytes;
}

int64_t GemmMemtileBytes(const GemmShape& g, int core_rows) {
  const int64_t a = g.tile_m * g.tile_k * g.in_bytes;
  const int64_t b = g.tile_k * g.tile_n * g.in_bytes;
  const int64_t c = g.tile_m * g.tile_n * g.out_bytes;
  return 2 * (core_rows * a + b + core_rows * c);
}

}  // namespace irontune::sim
