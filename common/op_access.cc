#include "common/op_access.h"

#include <algorithm>

namespace irontune {
namespace {

// BoundExtent over `values` keyed by the CallValue field `key`.
template <typename Values>
int64_t Bounded(const v1::Operator& op, const Values& values,
                const std::string& (v1::CallValue::*key)() const,
                std::string_view name, int64_t fallback) {
  int64_t extent = IntParam(op, name).value_or(fallback);
  for (const v1::CallValue& cv : op.values()) {
    if (cv.bounds() != name) continue;
    auto it = values.find((cv.*key)());
    if (it == values.end()) continue;
    extent = std::clamp<int64_t>(it->second, 1, std::max<int64_t>(extent, 1));
  }
  return extent;
}

}  // namespace

std::optional<int64_t> AsInt(const v1::Value& value) {
  switch (value.kind_case()) {
    case v1::Value::kIntValue:
      return value.int_value();
    case v1::Value::kBoolValue:
      return value.bool_value() ? 1 : 0;
    default:
      return std::nullopt;
  }
}

const v1::Value* FindParam(const v1::Operator& op, std::string_view name) {
  for (const v1::Param& p : op.params()) {
    if (p.name() == name) return &p.value();
  }
  return nullptr;
}

std::optional<int64_t> IntParam(const v1::Operator& op, std::string_view name) {
  const v1::Value* value = FindParam(op, name);
  if (value == nullptr) return std::nullopt;
  return AsInt(*value);
}

std::string StringParam(const v1::Operator& op, std::string_view name,
                        std::string_view fallback) {
  for (const v1::Param& p : op.params()) {
    if (p.name() == name && p.value().kind_case() == v1::Value::kStringValue) {
      return p.value().string_value();
    }
  }
  return std::string(fallback);
}

std::optional<int64_t> IntTunable(const v1::Operator& op,
                                  std::string_view name) {
  for (const v1::Tunable& t : op.tunables()) {
    if (t.name() == name) return AsInt(t.value());
  }
  return std::nullopt;
}

bool HasTunable(const v1::Operator& op, std::string_view name) {
  return std::any_of(op.tunables().begin(), op.tunables().end(),
                     [&](const v1::Tunable& t) { return t.name() == name; });
}

int64_t BoundExtent(const v1::Operator& op, const CallValues& values,
                    std::string_view name, int64_t fallback) {
  return Bounded(op, values, &v1::CallValue::name, name, fallback);
}

int64_t BoundExtentBySymbol(const v1::Operator& op,
                            const std::map<std::string, int64_t>& values,
                            std::string_view name, int64_t fallback) {
  return Bounded(op, values, &v1::CallValue::symbol, name, fallback);
}

BufferRoles FindRoles(const v1::Operator& op) {
  BufferRoles roles;
  for (int i = 0; i < op.buffers_size(); ++i) {
    const v1::Buffer& b = op.buffers(i);
    const bool unspecified = b.role() == v1::BUFFER_ROLE_UNSPECIFIED;
    const bool inout = b.role() == v1::BUFFER_ROLE_INOUT;
    if (b.role() == v1::BUFFER_ROLE_IN || inout || (unspecified && b.fills()))
      roles.in.push_back(i);
    if (b.role() == v1::BUFFER_ROLE_OUT || inout || (unspecified && b.drains()))
      roles.out.push_back(i);
  }
  return roles;
}

CallValues WithAddresses(const v1::Recording& rec, CallValues values) {
  for (const std::string& address : rec.addresses()) {
    values.emplace(address, 0);  // a value the call gives wins
  }
  return values;
}

}  // namespace irontune
