#include "daemon/builder/builder_env.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace irontune {
namespace {

bool Denied(std::string_view name) {
  return std::find(std::begin(kBuilderDeniedEnv), std::end(kBuilderDeniedEnv),
                   name) != std::end(kBuilderDeniedEnv);
}

bool ValidName(std::string_view name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Whether variable `name` is one of `patterns` (a name, or a prefix and *).
bool Matches(std::string_view name, const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    if (!p.empty() && p.back() == '*') {
      const std::string_view prefix(p.data(), p.size() - 1);
      if (name.substr(0, prefix.size()) == prefix && !Denied(name)) return true;
    } else if (name == p) {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::Status CheckBuilderEnvNames(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    const bool prefix = !n.empty() && n.back() == '*';
    const std::string_view name(n.data(), n.size() - (prefix ? 1 : 0));
    std::string why;
    if (prefix && name.empty()) {
      why = "a prefix needs at least one character before the *";
    } else if (!ValidName(name)) {
      why =
          "not a variable's name ([A-Za-z_][A-Za-z0-9_]*, or a prefix of "
          "one followed by *)";
    } else if (!prefix && Denied(name)) {
      why = absl::StrCat(
          "irontuned never passes ", n,
          " to the builder (systemd's service protocol and irontune's token "
          "stay irontuned's)");
    }
    if (!why.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--builder-env \"", n, "\": ", why));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> BuilderEnvironment(
    const std::vector<std::string>& names, const char* const* environ) {
  std::vector<std::string> base(std::begin(kBuilderBaseEnv),
                                std::end(kBuilderBaseEnv));
  std::vector<std::string> out;
  bool has_path = false;
  for (const char* const* e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    const std::string_view name = entry.substr(0, eq);
    if (!Matches(name, base) && !Matches(name, names)) continue;
    if (Denied(name)) continue;
    const std::string key = std::string(name) + "=";
    if (std::any_of(out.begin(), out.end(), [&key](const std::string& o) {
          return absl::StartsWith(o, key);
        })) {
      continue;  // environ may hold a name twice: the first counts
    }
    has_path = has_path || name == "PATH";
    out.emplace_back(entry);
  }
  if (!has_path) out.push_back(absl::StrCat("PATH=", kBuilderDefaultPath));
  return out;
}

}  // namespace irontune
