// Typed reads of an operator's params, tunables, buffer roles and per-call
// bounds, for the families' constraints, the CPU reference and the sim
// (whose sim::OpView reads through these).
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_COMMON_OP_ACCESS_H_
#define IRONTUNE_COMMON_OP_ACCESS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/expression.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// An int (or bool, as 0/1) value; nullopt for any other kind.
std::optional<int64_t> AsInt(const v1::Value& value);

// The value of the first param named `name`, else nullptr. Points into `op`.
const v1::Value* FindParam(const v1::Operator& op, std::string_view name);
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
// smallest value given to a CallValue bounding `name`, clamped to
// [1, param]; the param itself when no such value is given. BoundExtent
// keys `values` by CallValue name, as MeasureRequest.values does;
// BoundExtentBySymbol by CallValue symbol, as Image::WriteValues does.
int64_t BoundExtent(const v1::Operator& op, const CallValues& values,
                    std::string_view name, int64_t fallback);
int64_t BoundExtentBySymbol(const v1::Operator& op,
                            const std::map<std::string, int64_t>& values,
                            std::string_view name, int64_t fallback);

// The graph's values a recording's bindings are evaluated at (IRON's
// Timed.op_values): `values`, and 0 for each of rec.addresses() it does not
// give (a table's address the graph fills in at run time).
CallValues WithAddresses(const v1::Recording& rec, CallValues values);

// The indices of an operator's buffers that it reads (in) and writes (out),
// in buffer order. IN and OUT buffers are one, INOUT both; an unspecified
// role follows the buffer's fills (in) and drains (out).
struct BufferRoles {
  std::vector<int> in, out;
};
BufferRoles FindRoles(const v1::Operator& op);

// The element count of the operator's first IN or INOUT buffer (product of
// its shape, each extent capped at 2^30), computed in T; `fallback` where
// it has none.
template <typename T>
T FirstInputElements(const v1::Operator& op, T fallback) {
  for (const v1::Buffer& b : op.buffers()) {
    if (b.role() != v1::BUFFER_ROLE_IN && b.role() != v1::BUFFER_ROLE_INOUT) {
      continue;
    }
    T n = 1;
    for (uint64_t e : b.shape()) {
      n *= static_cast<int64_t>(std::min<uint64_t>(e, 1u << 30));
    }
    return n;
  }
  return fallback;
}

}  // namespace irontune

#endif  // IRONTUNE_COMMON_OP_ACCESS_H_
