#include "common/buffer_role.h"

#include <utility>

namespace irontune {
namespace {

constexpr std::pair<v1::BufferRole, std::string_view> kRoleNames[] = {
    {v1::BUFFER_ROLE_IN, "in"},
    {v1::BUFFER_ROLE_OUT, "out"},
    {v1::BUFFER_ROLE_INOUT, "inout"},
};

}  // namespace

std::string_view BufferRoleName(v1::BufferRole role) {
  for (const auto& [r, name] : kRoleNames) {
    if (r == role) return name;
  }
  return "unspecified";
}

}  // namespace irontune
