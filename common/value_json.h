// A v1::Value as a JSON scalar: an int, bool, string or double as itself,
// an unset value as null. The one JSON form of a value, written by the
// builder protocol's requests and the client's inspect report.
//
// Thread-safe (a pure function).
#ifndef IRONTUNE_COMMON_VALUE_JSON_H_
#define IRONTUNE_COMMON_VALUE_JSON_H_

#include "irontune/v1/value.pb.h"
#include "nlohmann/json.hpp"

namespace irontune {

nlohmann::json ValueJson(const v1::Value& v);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_VALUE_JSON_H_
