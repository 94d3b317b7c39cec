// v1::Value, the scalar of params, tunables and profile entries: makers,
// equality, order and its two text forms:
//
//   ValueToString  the one human and profile form, JSON-ish: 64, true,
//                  "bf16", 0.5. What profiles, shape keys, logs and the
//                  client print.
//   ValueKey       a typed form for identity keys: distinct values (as
//                  ValuesEqual tells them) have distinct keys, an int never
//                  keys like a double or a string.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_COMMON_VALUE_H_
#define IRONTUNE_COMMON_VALUE_H_

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "irontune/v1/value.pb.h"

namespace irontune {

inline v1::Value IntValue(int64_t v) {
  v1::Value out;
  out.set_int_value(v);
  return out;
}

inline v1::Value BoolValue(bool v) {
  v1::Value out;
  out.set_bool_value(v);
  return out;
}

inline v1::Value StringValue(std::string v) {
  v1::Value out;
  out.set_string_value(std::move(v));
  return out;
}

inline v1::Value DoubleValue(double v) {
  v1::Value out;
  out.set_double_value(v);
  return out;
}

// Equality of two values, exact (ints, bools, strings, doubles bit for
// bit); an int and a double are never equal; two unset values are equal.
bool ValuesEqual(const v1::Value& a, const v1::Value& b);

// A total order on values that agrees with ValuesEqual: by kind (int, bool,
// string, double, in the proto's field order), then by value (doubles by
// std::strong_order).
std::strong_ordering CompareValues(const v1::Value& a, const v1::Value& b);

// The human and profile text of `v`: 64, true, "bf16", 0.5. A double always
// has a '.' or an exponent (64.0, 1e+300) and reads back bit for bit;
// strings are JSON-escaped. JSON has no NaN or infinity: they render as
// Python's json module writes them (NaN, Infinity), which Profile::FromJson
// refuses. An unset value renders as null.
std::string ValueToString(const v1::Value& v);
// Appends ValueToString(v) to `out`.
void AppendValueText(const v1::Value& v, std::string* out);
// Appends `s` as a JSON string (quoted, escaped), as ValueToString writes a
// string value.
void AppendJsonString(std::string_view s, std::string* out);

// The key text of `v`: "i:64", "b:1", "s:<byte length>:<bytes>",
// "d:<the double's 64 bits in 16 hex digits>", "unset". Two values have
// equal keys exactly when ValuesEqual holds; the text is stable across
// builds, so it may be hashed or stored.
std::string ValueKey(const v1::Value& v);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_VALUE_H_
