#include "common/value_json.h"

namespace irontune {

nlohmann::json ValueJson(const v1::Value& v) {
  switch (v.kind_case()) {
    case v1::Value::kIntValue:
      return v.int_value();
    case v1::Value::kBoolValue:
      return v.bool_value();
    case v1::Value::kStringValue:
      return v.string_value();
    case v1::Value::kDoubleValue:
      return v.double_value();
    case v1::Value::KIND_NOT_SET:
      break;
  }
  return nullptr;
}

}  // namespace irontune
