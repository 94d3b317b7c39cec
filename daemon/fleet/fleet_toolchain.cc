#include "daemon/fleet/fleet_toolchain.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace irontune {
namespace {

// `value` quoted with its quotes and backslashes escaped, so no value can
// end early and pass for another part; "unknown" bare for an empty one.
std::string Part(std::string_view value) {
  if (value.empty()) return "unknown";
  return absl::StrCat(
      "\"", absl::CEscape(absl::string_view(value.data(), value.size())), "\"");
}

}  // namespace

std::string FleetToolchain(std::string_view builder_environment,
                           const StackVersions& stack) {
  return absl::StrCat("firmware ", Part(stack.firmware), "; driver ",
                      Part(stack.driver), "; xrt ", Part(stack.xrt),
                      "; builder ", Part(builder_environment));
}

}  // namespace irontune
