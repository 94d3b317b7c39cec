// Judging a setting's output (IRON's tuner, iron/tune/measure.py `judge`
// and `Standalone.digest`): whether what a setting wrote may replace what
// the default (recorded) setting writes, and the digest two settings'
// outputs are compared by first. The gates are those IRON's operators
// return from tolerance() at kIronCommit (iron/common/declare/operator.py):
// mlir-aie's aie.utils.verify.Tolerance and its compare().
//
// Gates: the default operator's tolerance and the setting's own; a setting
// must pass both. An exact gate on either admits only a bit-identical
// output, as does a per-call value bounding an extent short of its param,
// or a bounded extent given no value (the rows past the bound are not the
// operator's to compare). A missing gate (Operator.tolerance unset) is named:
// "only a bit-identical output is admitted: GEMM states no tolerance (the
// default's Operator.tolerance is unset)". Judge never compares bytes with
// the default's output itself: the caller compares the outputs' digests
// (OutputDigest, Measurement.output) first and skips Judge when they are
// equal; a bit-identical output is always admitted.
//
// Otherwise each drained buffer is compared, element by element, with the
// CPU reference (daemon/ops/reference.h) on the rows the reference computed
// (the same deterministic sample the sim computes), under the default's
// gate first, then its own:
//   close      |got - want| <= atol + rtol * |want|
//   bf16_ulps  bf16 outputs only: got within `ulps` bf16 units in the last
//              place of want rounded to bf16 (-0 and +0 are one point), or,
//              when atol > 0, |got - want| < atol
// NaN must meet NaN and an infinity one of its sign under every gate. At
// most floor(max_mismatch_frac * n) of a buffer's n compared elements may
// miss; a non-finite miss always fails. Integer buffers under bf16_ulps are
// compared bit for bit. A class without a reference admits only a
// bit-identical output.
//
// The reference does not depend on the tunables, only on the operator's
// class, params, buffers and call values, the per-call values and the
// inputs: a ReferenceMemo computes it once for every setting of one point.
//
// Thread-safe (pure functions), except ReferenceMemo (one thread at a time).
#ifndef IRONTUNE_DAEMON_TUNE_JUDGE_H_
#define IRONTUNE_DAEMON_TUNE_JUDGE_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/expression.h"
#include "daemon/ops/reference.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

inline constexpr char kOnlyBitIdentical[] =
    "only a bit-identical output is admitted";

// Computes the CPU reference of `op` on `inputs` at per-call `values`, as
// ReferenceOutputs (daemon/ops/reference.h) does; tests count calls.
using ReferenceFn = std::function<absl::StatusOr<Reference>(
    const v1::Operator& op, const SharedInputs& inputs,
    const CallValues& values)>;

// Where a judge takes the reference of `op` on `inputs` at `values` from:
// the reference or why there is none (ReferenceOutputs' error). The
// pointer stays valid while the judge's call lasts.
using ReferenceLookup = std::function<absl::StatusOr<const Reference*>(
    const v1::Operator& op, const SharedInputs& inputs,
    const CallValues& values)>;

// References computed once and kept, by what they depend on: the caller's
// `inputs_id` (naming the inputs: equal ids must mean equal inputs), the
// operator as a design without its tunables (class, params, buffers, call
// values) and the per-call values. It holds every reference asked for
// until it is destroyed (each as large as the operator's outputs): keep
// one for as long as its points are judged again (one shape's search).
// Not thread-safe: one thread at a time.
class ReferenceMemo {
 public:
  // `compute` null: ReferenceOutputs.
  explicit ReferenceMemo(ReferenceFn compute = {});

  // The reference of `op` on `inputs` at `values`, computed on the first
  // ask under its key; the pointer stays valid while the memo lives.
  // REQUIRES: every ask with `inputs_id` gives the same `inputs`.
  absl::StatusOr<const Reference*> Get(const std::string& inputs_id,
                                       const v1::Operator& op,
                                       const SharedInputs& inputs,
                                       const CallValues& values);

 private:
  ReferenceFn compute_;
  std::map<std::string, absl::StatusOr<Reference>> kept_;  // by key
};

// Why `op`'s output `written` (drained buffers by operator buffer name, raw
// bytes) on `inputs` (filled buffers by name) may not replace the output of
// `default_op`; nullopt when it may. `inputs` are only read (shared with
// the images that were fed them). `values` are the per-call values by
// CallValue name, as MeasurePlan.values.
// Details name the buffer, the gate, how many elements miss, the worst
// element (its index into the buffer), its error and its bound, e.g.
//   "C under the default's gate: 3 of 4096 elements miss (0 allowed); worst
//    element 1234 off by 0.31 > 0.05".
// The reference is asked of `reference` (null: computed here) only where
// the gates and the bounds leave the output to compare.
// REQUIRES: `default_op` and `op` are settings of one design.
std::optional<std::string> Judge(
    const v1::Operator& default_op, const v1::Operator& op,
    const SharedInputs& inputs,
    const std::map<std::string, std::string>& written, const CallValues& values,
    const ReferenceLookup& reference = {});

// The bytes of drained buffer `buffer` of `op` that lie under the call's
// bounds (IRON's `Standalone.written`): along each axis that a CallValue
// with a value in `values` bounds, only indices below that value (clamped
// to the axis). The axis is the one the catalogue's buffer shape names with
// the bounded param (common/families.h), else the first whose extent equals
// the param. `bytes` whole where no axis is bounded or its size is not the
// buffer's shape times its dtype.
std::string RowsUnderBound(const v1::Operator& op, const v1::Buffer& buffer,
                           const std::string& bytes, const CallValues& values);

// The sha256 (hex) of what one run of `op` wrote (IRON's
// `Standalone.digest`): the drained buffers in the operator's buffer order,
// each only its rows under the bound (RowsUnderBound), concatenated. Rows
// past a bound do not change it. Buffers missing from `written` are skipped.
std::string OutputDigest(const v1::Operator& op,
                         const std::map<std::string, std::string>& written,
                         const CallValues& values);

// A judge: decides whether `op`'s output may replace `default_op`'s, given
// what the recorded setting was fed (`inputs`) and what `op` wrote
// (`written`), at per-call `values`, taking the CPU reference (if it needs
// one) from `reference`; nullopt = admitted, else why not. Judge above is
// the default; tests substitute their own.
using JudgeFn = std::function<std::optional<std::string>(
    const v1::Operator& default_op, const v1::Operator& op,
    const SharedInputs& inputs,
    const std::map<std::string, std::string>& written, const CallValues& values,
    const ReferenceLookup& reference)>;

// A judge that admits only a bit-identical output, so it refuses every
// output it is asked about (equal outputs never reach a judge).
JudgeFn BitIdenticalJudge();

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_JUDGE_H_
