// v1::Value, the scalar of params, tunables and profile entries: makers and
// equality. Rendering lives in common/profile.h (ValueToString), beside the
// JSON it follows.
#ifndef IRONTUNE_COMMON_VALUE_H_
#define IRONTUNE_COMMON_VALUE_H_

#include <cstdint>
#include <string>

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

}  // namespace irontune

#endif  // IRONTUNE_COMMON_VALUE_H_
