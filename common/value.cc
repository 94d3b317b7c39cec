#include "common/value.h"

#include <cstring>

namespace irontune {

bool ValuesEqual(const v1::Value& a, const v1::Value& b) {
  if (a.kind_case() != b.kind_case()) return false;
  switch (a.kind_case()) {
    case v1::Value::kIntValue:
      return a.int_value() == b.int_value();
    case v1::Value::kBoolValue:
      return a.bool_value() == b.bool_value();
    case v1::Value::kStringValue:
      return a.string_value() == b.string_value();
    case v1::Value::kDoubleValue: {
      const double da = a.double_value();
      const double db = b.double_value();
      return std::memcmp(&da, &db, sizeof(double)) == 0;
    }
    case v1::Value::KIND_NOT_SET:
      return true;
  }
  return false;
}

}  // namespace irontune
