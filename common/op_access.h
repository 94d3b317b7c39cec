// Typed reads of an operator's params, tunables and per-call bounds, for the
// families' constraints and the CPU reference. (The sim has its own view,
// sim::OpView, keyed by symbol; these key per-call values by CallValue name,
// as MeasureRequest.values does.)
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_COMMON_OP_ACCESS_H_
#define IRONTUNE_COMMON_OP_ACCESS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/expression.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// An int (or bool, as 0/1) value; nullopt for any other kind.
std::optional<int64_t> AsInt(const v1::Value& value);

// Param `name` as an int, else nullopt (missing or not an int).
std::optional<int64_t> IntParam(const v1::Operator& op, std::string_view name);
// Param `name` as a string, else `fallback`.
std::string StringParam(const v1::Operator& op, std::string_view name,
                        std::string_view fallback);
// Tunable `name`'s value as an int, else nullopt.
std::optional<int64_t> IntTunable(const v1::Operator& op,
                                  std::string_view name);
bool HasTunable(const v1::Operator& op, std::string_view name);

// Param `name` (else `fallback`) bounded by the per-call values: the
// smallest value given (by CallValue name) to a CallValue bounding `name`,
// clamped to [1, param]. Agrees with sim::OpView::Extent, which keys the
// same values by symbol.
int64_t BoundExtent(const v1::Operator& op, const CallValues& values,
                    std::string_view name, int64_t fallback);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_OP_ACCESS_H_
