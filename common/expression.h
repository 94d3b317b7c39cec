// Evaluating recording expressions (v1::Expression) over per-call values.
#ifndef IRONTUNE_COMMON_EXPRESSION_H_
#define IRONTUNE_COMMON_EXPRESSION_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// Per-call values by name. Ordered, so that keys built from it are stable.
using CallValues = std::map<std::string, int64_t, std::less<>>;

// Evaluates `expr` at `values` with 64-bit integers. FLOOR_DIV and MOD
// round toward negative infinity (Python's // and %).
// Fails with InvalidArgument on: a value name not in `values`, division or
// modulo by zero, overflow, an unset node or operator, or depth beyond
// `max_depth`. Never recurses deeper than `max_depth`.
absl::StatusOr<int64_t> EvaluateExpression(const v1::Expression& expr,
                                           const CallValues& values,
                                           int max_depth = 64);

// The depth of `expr`: 1 for a leaf. Stops counting at `cap` + 1, so a
// hostile tree costs at most `cap` levels of recursion.
int ExpressionDepth(const v1::Expression& expr, int cap = 64);

// A readable rendering, e.g. "min(position + 1, 8192)".
std::string ExpressionToString(const v1::Expression& expr, int max_depth = 64);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_EXPRESSION_H_
