#include "daemon/xrt/stack_versions.h"

#include <sys/utsname.h>

#include <cstdint>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

// The longest fw_version file read: the driver writes four numbers.
constexpr size_t kMaxFirmwareText = 64;

// The trimmed string at `key` of `j`, "" where it is no string or says
// unknown ("unknown", "N/A": XRT's words for it).
std::string Known(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  std::string v(absl::StripAsciiWhitespace(it->get<std::string>()));
  if (absl::EqualsIgnoreCase(v, "unknown") || absl::EqualsIgnoreCase(v, "N/A"))
    return "";
  return v;
}

// "VERSION, HASH", VERSION alone without a hash, "" without a version.
std::string VersionAndHash(const nlohmann::json& j) {
  const std::string version = Known(j, "version");
  if (version.empty()) return "";
  const std::string hash = Known(j, "hash");
  return hash.empty() ? version : absl::StrCat(version, ", ", hash);
}

// The amdxdna entry of `drivers` (an array; "" when XRT has none), or
// nullptr.
const nlohmann::json* AmdxdnaDriver(const nlohmann::json& host) {
  const auto drivers = host.find("drivers");
  if (drivers == host.end() || !drivers->is_array()) return nullptr;
  for (const nlohmann::json& d : *drivers) {
    if (d.is_object() && Known(d, "name") == "amdxdna") return &d;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<XrtHostVersions> ParseXrtHostInfo(
    absl::string_view json, absl::string_view kernel_release) {
  const nlohmann::json host =
      nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
  if (!host.is_object()) {
    return absl::InvalidArgumentError(
        "XRT's host info (xrt::info::device::host) is not a JSON object");
  }
  XrtHostVersions out;
  out.xrt = VersionAndHash(host);
  if (const nlohmann::json* d = AmdxdnaDriver(host)) {
    out.driver = VersionAndHash(*d);
    if (out.driver.empty() && !kernel_release.empty()) {
      out.driver = absl::StrCat("in-tree (Linux ", kernel_release, ")");
    }
  }
  return out;
}

absl::StatusOr<std::string> ParseFirmwareVersion(absl::string_view text) {
  const absl::string_view v = absl::StripAsciiWhitespace(text);
  const std::vector<absl::string_view> parts = absl::StrSplit(v, '.');
  bool numbers = parts.size() == 4;
  bool zero = true;
  for (absl::string_view p : parts) {
    uint32_t n = 0;
    numbers = numbers && !p.empty() && absl::ascii_isdigit(p[0]) &&
              absl::SimpleAtoi(p, &n);
    zero = zero && n == 0;
  }
  if (!numbers) {
    return absl::InvalidArgumentError(
        absl::StrCat("fw_version \"", absl::CHexEscape(v),
                     "\" is not MAJOR.MINOR.PATCH.BUILD"));
  }
  return zero ? "" : std::string(v);
}

absl::StatusOr<std::string> ReadFirmwareVersion(absl::string_view sys_root,
                                                absl::string_view bdf) {
  if (bdf.empty()) return absl::NotFoundError("no PCI BDF for the NPU");
  const std::string path =
      absl::StrCat(sys_root, "/bus/pci/devices/", bdf, "/fw_version");
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no ", path));
  std::string text(kMaxFirmwareText, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  absl::StatusOr<std::string> v = ParseFirmwareVersion(text);
  if (!v.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", v.status().message()));
  }
  return v;
}

std::string KernelRelease() {
  struct utsname u;
  return ::uname(&u) == 0 ? std::string(u.release) : std::string();
}

}  // namespace irontune
