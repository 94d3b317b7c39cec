// Judging a setting's output (IRON's autotune judge): whether what a setting
// wrote may replace what the default (recorded) setting writes.
//
// Gates: the default operator's tolerance and the setting's own; a setting
// must pass both. A missing or exact gate on either admits only a
// bit-identical output, as does a per-call value bounding an extent short of
// its param (the rows past it are not the operator's to compare). Those
// cases return "only a bit-identical output is admitted[ under a bound]":
// Judge never compares bytes with the default's output itself. The caller
// compares the outputs' sha256 digests (Measurement.output) first and skips
// Judge when they are equal; a bit-identical output is always admitted.
//
// Otherwise each drained buffer is compared, element by element, with the
// CPU reference (daemon/ops/reference.h) on the rows the reference computed
// (the same deterministic sample the sim computes):
// |got - want| <= atol + rtol * |want|, under the default's gate first, then
// its own. A class without a reference admits only a bit-identical output.
//
// Thread-safe (a pure function).
#ifndef IRONTUNE_DAEMON_TUNE_JUDGE_H_
#define IRONTUNE_DAEMON_TUNE_JUDGE_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/expression.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

inline constexpr char kOnlyBitIdentical[] =
    "only a bit-identical output is admitted";

// Why `op`'s output `written` (drained buffers by operator buffer name, raw
// bytes) on `inputs` (filled buffers by name) may not replace the output of
// `default_op`; nullopt when it may. `values` are the per-call values by
// CallValue name, as MeasurePlan.values.
// Details name the buffer, the gate, the worst element (its index into the
// buffer), its error and its bound, e.g.
//   "C under the default's gate: worst element 1234 off by 0.31 > 0.05".
// REQUIRES: `default_op` and `op` are settings of one design.
std::optional<std::string> Judge(
    const v1::Operator& default_op, const v1::Operator& op,
    const std::map<std::string, std::string>& inputs,
    const std::map<std::string, std::string>& written,
    const CallValues& values);

// A judge: decides whether `op`'s output may replace `default_op`'s, given
// what the recorded setting was fed (`inputs`) and what `op` wrote
// (`written`), at per-call `values`; nullopt = admitted, else why not.
// Judge above is the default; tests substitute their own.
using JudgeFn = std::function<std::optional<std::string>(
    const v1::Operator& default_op, const v1::Operator& op,
    const std::map<std::string, std::string>& inputs,
    const std::map<std::string, std::string>& written,
    const CallValues& values)>;

// A judge that admits only a bit-identical output, so it refuses every
// output it is asked about (equal outputs never reach a judge).
JudgeFn BitIdenticalJudge();

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_JUDGE_H_
