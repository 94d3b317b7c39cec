// Element conversions and output-row sampling shared by the simulated NPU's
// kernels (daemon/sim/kernels.h) and the CPU reference that judges
// outputs (daemon/ops/reference.h). One place, so both read and round elements
// the same way and compute the same rows.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_OPS_NUMERIC_H_
#define IRONTUNE_DAEMON_OPS_NUMERIC_H_

#include <cstdint>

#include "irontune/v1/recording.pb.h"

namespace irontune {

// bf16 <-> f32, rounding to nearest even (NaN kept quiet).
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);
// IEEE half <-> f32, rounding to nearest even; overflow to infinity.
float F16ToFloat(uint16_t bits);
uint16_t FloatToF16(float value);

// Element `i` of a buffer of `dtype` at `data` (little-endian), as a float;
// 0 for DTYPE_UNSPECIFIED. REQUIRES: `data` holds element i.
float LoadElement(v1::DType dtype, const char* data, uint64_t i);
// Stores `v` as element `i`: floats rounded to nearest even, integers
// rounded and saturated (NaN as 0). REQUIRES: `data` holds element i.
void StoreElement(v1::DType dtype, char* data, uint64_t i, float v);
// `v` at the precision of `dtype` (bf16, f16; others unchanged).
float RoundTo(v1::DType dtype, float v);

// Bounded work: a step computes at most kSampleWorkBudget multiply-adds.
inline constexpr int64_t kSampleWorkBudget = int64_t{1} << 25;
// GEMM computes at most this many rows of C.
inline constexpr int64_t kMaxGemmRows = 64;

// How many of `rows` rows to compute when each costs `work_per_row`:
// min(kSampleWorkBudget / work_per_row (at least 1), cap), within
// [0, rows].
int64_t SampledRows(int64_t rows, int64_t work_per_row, int64_t cap);
// The j-th of r evenly spaced rows of `rows`: j * rows / r.
// REQUIRES: 0 <= j < r.
int64_t SampleRow(int64_t j, int64_t r, int64_t rows);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_OPS_NUMERIC_H_
