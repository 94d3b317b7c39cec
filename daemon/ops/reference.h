// The CPU reference of each known operator family: what an operator's
// drained buffers should hold for given inputs, used to judge a setting's
// output (daemon/tune/judge.h).
//
// Semantics and layouts are the simulated NPU's (daemon/sim/
// kernels.h, docs/simulated-npu.md), but sums run in plain f64 in index
// order, not in the setting's tile order, and each result is rounded once to
// its buffer's dtype:
//
//   GEMM     A [M,K] x B [K,N] (B [N,K] when b_col_maj) -> C [M,N] ([N,M]
//            when c_col_maj).
//   GEMV     A [M,K] x x [K] -> y [M], per batch when x and y hold
//            num_batches of them (A too when it holds num_batches of A).
//   ElementwiseAdd, ElementwiseMul, SiLU (x / (1 + e^-x)).
//   RMSNorm  x * rsqrt(mean(x^2) + 1e-6) * w over the input's last axis
//            (weighted when a second input is given).
//   Softmax  over rows of `cols` (else the input's last axis).
//   RoPE     interleaved pairs of each head rotated by row x theta^(-p/d),
//            theta the "theta" param or 500000.
//   MHA      q [H,d], k and v [KVH, seq_pad, d]: attention of each head over
//            the used kv length (seq_pad bounded by the per-call values).
//   Sample   the index of each row's first maximum of `vocab` logits.
//   Log, RowwiseMul  elementwise maps (ElementMap; RowwiseMul's row
//            broadcast over x's rows).
//   Limbs, Magnitude  each row of the input's last axis mapped (RowMap).
//   GQAScores, GQAContext  GqaRow per head, over the positions in use (an
//            operator without `heads`, the older gqa_context.py's, has no
//            reference).
//
// Sampled rows: large operators are bounded as the sim bounds them
// (daemon/ops/numeric.h): at most kSampleWorkBudget multiply-adds, so only rows
// SampleRow(j, r, rows), j < r, are computed (GEMM at most kMaxGemmRows),
// over the rows in use when a per-call value bounds an extent. The others
// are left zero; `computed` says which elements hold reference values, and
// only those are meant to be compared. The sim computes the same rows.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_OPS_REFERENCE_H_
#define IRONTUNE_DAEMON_OPS_REFERENCE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/expression.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// The elements of one output buffer the reference computed: for
// b < batches, j < computed and e < row_elements, element
//   b * batch_stride + SampleRow(j, computed, rows) * row_stride
//     + e * element_stride.
// computed == rows means every row in use.
struct ComputedRows {
  int64_t rows = 0;      // rows in use
  int64_t computed = 0;  // rows computed, evenly spaced (<= rows)
  int64_t row_elements = 1;
  int64_t row_stride = 1;
  int64_t element_stride = 1;
  int64_t batches = 1;
  int64_t batch_stride = 0;

  // The computed row indices, ascending.
  std::vector<int64_t> RowIndices() const;
  // The number of computed elements.
  int64_t Elements() const { return batches * computed * row_elements; }
  // The k-th computed element's index, k < Elements(), in the order above.
  int64_t ElementIndex(int64_t k) const;
};

// Bytes several holders share and none changes: an input buffer's, held by
// the images fed it and by whoever judges with it.
using SharedBytes = std::shared_ptr<const std::string>;
// Input buffers by operator buffer name, shared, not copied.
using SharedInputs = std::map<std::string, SharedBytes>;

struct Reference {
  // Drained buffers by operator buffer name, raw bytes in the buffer's
  // dtype, each the buffer's full size (uncomputed elements zero).
  std::map<std::string, std::string> outputs;
  // Which elements of each output were computed.
  std::map<std::string, ComputedRows> computed;
};

// The reference outputs of `op` for `inputs` (filled buffers by operator
// buffer name, raw bytes in their dtypes; a missing or null input reads as
// zeros; only read, never copied),
// `values` the per-call values by CallValue name.
// Errors: Unimplemented for a class without a reference, a dtype the
// reference does not read, or buffers that do not fit the family's layout
// (the sim copies its first input there: only a bit-identical output can be
// judged); InvalidArgument for an input whose size is not its buffer's.
absl::StatusOr<Reference> ReferenceOutputs(const v1::Operator& op,
                                           const SharedInputs& inputs,
                                           const CallValues& values);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_OPS_REFERENCE_H_
