// The operator families irontune knows: IRON's classes, with the params that
// name a profile entry (dims) and the tunables a profile sets. Facts from
// ../shared/NPU_FACTS.md ("IRON operators and profiles").
//
// Immutable after construction; every function is thread-safe.
#ifndef IRONTUNE_COMMON_FAMILIES_H_
#define IRONTUNE_COMMON_FAMILIES_H_

#include <string>
#include <string_view>
#include <vector>

#include "irontune/v1/value.pb.h"

namespace irontune {

struct Dim {
  std::string name;
  // Unset (kind_case() == KIND_NOT_SET) where the dim has no default: an
  // entry always names it.
  v1::Value default_value;
};

struct Family {
  std::string class_name;
  std::vector<Dim> dims;              // in the order a profile entry lists them
  std::vector<std::string> tunables;  // in the order a profile entry lists them
};

// The family of `class_name`, or nullptr for a class irontune does not know.
const Family* FindFamily(std::string_view class_name);

// Every known family, in a fixed order.
const std::vector<Family>& AllFamilies();

}  // namespace irontune

#endif  // IRONTUNE_COMMON_FAMILIES_H_
