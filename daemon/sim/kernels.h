// The simulated NPU's outputs: each step's outputs computed on the CPU from
// its input buffers, in an accumulation order that follows the setting's
// tiles, so settings of one operator give close but not always bit-identical
// results, as on the NPU.
//
//   GEMM     A [M,K] x B [K,N] (B [N,K] when b_col_maj) -> C [M,N] ([N,M]
//            when c_col_maj). f32 sums over each tile_k chunk of K, the
//            running result rounded to the output dtype at every chunk
//            boundary: another tile_k rounds at other points.
//   GEMV     A [M,K] x x [K] -> y [M] (per batch when the buffers hold
//            num_batches of x and y); f32 in kernel_vector_size lanes,
//            reduced pairwise.
//   ElementwiseAdd/Mul, SiLU, RMSNorm (x * rsqrt(mean(x^2) + eps) * w, the
//   row the input's last axis), Softmax (over the last axis), RoPE
//   (interleaved pairs rotated by position x theta^(-2i/d), theta the
//   "theta" param or 500000, docs/npu-facts.md "Llama 3.2 1B"), MHA (q [H,d],
//   k and v [KVH, seq_pad, d], attention over the used kv length), Sample
//   (argmax per row of logits, the first maximum; the index written to the
//   output), Log (log(x + offset), f32 in, bf16 out) and RowwiseMul (each
//   row times one row) as elementwise maps, Limbs and Magnitude (each row
//   mapped, daemon/ops/numeric.h RowMap), GQAScores and GQAContext (one
//   query's heads against a [seq_len, groups, head_dim] cache, GqaRow; in
//   f64 in index order, as the reference: their settings' outputs are
//   bit-identical).
//   Anything else, or buffers whose sizes do not fit the layout above:
//   the first input's bytes copied into every output (zero-padded).
//
// Bounded work: a step computes at most kSampleWorkBudget multiply-adds; a
// large operator computes a deterministic sample of its output rows
// (evenly spaced: row j*rows/r for j < r; GEMM at most kMaxGemmRows rows)
// and leaves the other rows zero. Settings of one operator sample the same
// rows, so their outputs stay comparable.
// Extents bounded by per-call values (OpView::Extent) compute only the rows
// in use; the rest stay zero.
// Inputs never written read as zeros; when every input of a step is
// unwritten the outputs are left unwritten too (they read as zeros), so an
// overhead benchmark never allocates them.
//
// Thread-safe (pure functions over the buffers passed in).
#ifndef IRONTUNE_DAEMON_SIM_KERNELS_H_
#define IRONTUNE_DAEMON_SIM_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "daemon/ops/numeric.h"
#include "daemon/sim/design.h"

namespace irontune::sim {

// The sampling and element conversions live in daemon/ops/numeric.h, shared
// with the CPU reference (daemon/ops/reference.h) so both compute the same
// rows.
using ::irontune::Bf16ToFloat;
using ::irontune::FloatToBf16;
using ::irontune::kMaxGemmRows;
using ::irontune::kSampleWorkBudget;

// One operator buffer of a step: its declaration and its host storage.
// `bytes` empty means never written (zeros); a computed output is resized to
// `nbytes`.
struct StepBuffer {
  const v1::Buffer* meta = nullptr;  // not owned
  std::string* bytes = nullptr;      // not owned
  uint64_t nbytes = 0;
};

// Computes one step of `op` over `buffers` (one per operator buffer, in
// order). REQUIRES: buffers.size() == op.op().buffers_size(), each
// non-empty `bytes` of size `nbytes`. Never fails on odd shapes (it falls
// back to the copy); returns Internal only on a broken REQUIRES.
absl::Status ComputeStep(const OpView& op, std::vector<StepBuffer>& buffers);

}  // namespace irontune::sim

#endif  // IRONTUNE_DAEMON_SIM_KERNELS_H_
