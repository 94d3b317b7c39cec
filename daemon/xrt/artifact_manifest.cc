#include "daemon/xrt/artifact_manifest.h"

#include <set>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

using nlohmann::json;

absl::Status Bad(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("artifact manifest: ", field, ": ", what));
}

// The string field `key`, which must be an absolute path when `path`.
absl::StatusOr<std::string> StringField(const json& j, const char* key,
                                        bool path) {
  const auto it = j.find(key);
  if (it == j.end()) return Bad(key, "missing");
  if (!it->is_string()) return Bad(key, "not a string");
  std::string s = it->get<std::string>();
  if (s.empty()) return Bad(key, "empty");
  if (path && s.front() != '/') {
    return Bad(key, absl::StrCat("\"", s, "\" is not an absolute path"));
  }
  return s;
}

absl::StatusOr<int> IndexField(const json& s, const char* key,
                               const std::string& where) {
  const json& v = s.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
      v.get<int64_t>() > (1 << 30)) {
    return Bad(absl::StrCat(where, ".", key), "not an index >= 0");
  }
  return static_cast<int>(v.get<int64_t>());
}

// The places a symbol may name in a packaging.
std::vector<const char*> PlacesOf(bool chain) {
  if (chain) return {"insts_word"};
  return {"arg", "scratchpad_word"};
}

absl::StatusOr<XrtManifestSymbol> ParseSymbol(const json& s, bool chain,
                                              const std::string& where) {
  if (!s.is_object()) return Bad(where, "not an object");
  XrtManifestSymbol sym;
  ASSIGN_OR_RETURN(sym.name, StringField(s, "name", false));
  const std::vector<const char*> places = PlacesOf(chain);
  for (const char* other : PlacesOf(!chain)) {
    if (s.contains(other)) {
      return Bad(
          absl::StrCat(where, ".", other),
          absl::StrCat("not taken by ", chain ? "xclbin_chain" : "full_elf",
                       " packaging (use ", absl::StrJoin(places, " or "), ")"));
    }
  }
  const char* place = nullptr;
  for (const char* p : places) {
    if (!s.contains(p)) continue;
    if (place != nullptr) {
      return Bad(where, absl::StrCat("both ", place, " and ", p,
                                     "; a symbol has one place"));
    }
    place = p;
  }
  if (place == nullptr) {
    return Bad(absl::StrCat(where, ".", absl::StrJoin(places, "|")), "missing");
  }
  ASSIGN_OR_RETURN(const int index, IndexField(s, place, where));
  const std::string_view name = place;
  (name == "insts_word" ? sym.insts_word
   : name == "arg"      ? sym.arg
                        : sym.scratchpad_word) = index;
  return sym;
}

absl::Status ParseFiles(const json& j, XrtManifest& m) {
  ASSIGN_OR_RETURN(const std::string packaging,
                   StringField(j, "packaging", false));
  if (packaging == "xclbin_chain") {
    m.packaging = v1::PACKAGING_XCLBIN_CHAIN;
    ASSIGN_OR_RETURN(m.xclbin, StringField(j, "xclbin", true));
    ASSIGN_OR_RETURN(m.kernel, StringField(j, "kernel", false));
    ASSIGN_OR_RETURN(m.insts, StringField(j, "insts", true));
  } else if (packaging == "full_elf") {
    m.packaging = v1::PACKAGING_FULL_ELF;
    ASSIGN_OR_RETURN(m.elf, StringField(j, "elf", true));
  } else {
    return Bad("packaging", absl::StrCat("\"", packaging,
                                         "\" is not xclbin_chain or full_elf"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<XrtManifest> ParseXrtManifest(absl::string_view payload) {
  const json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("payload", "not JSON");
  if (!j.is_object()) return Bad("payload", "not a JSON object");
  ASSIGN_OR_RETURN(const std::string format, StringField(j, "format", false));
  if (format != kXrtManifestFormat) {
    return Bad("format", absl::StrCat("\"", format, "\", expected \"",
                                      kXrtManifestFormat, "\""));
  }
  XrtManifest m;
  RETURN_IF_ERROR(ParseFiles(j, m));
  const auto symbols = j.find("symbols");
  if (symbols == j.end()) return m;
  if (!symbols->is_array()) return Bad("symbols", "not an array");
  std::set<std::string> seen;
  const bool chain = m.packaging == v1::PACKAGING_XCLBIN_CHAIN;
  for (size_t i = 0; i < symbols->size(); ++i) {
    const std::string where = absl::StrCat("symbols[", i, "]");
    ASSIGN_OR_RETURN(XrtManifestSymbol sym,
                     ParseSymbol((*symbols)[i], chain, where));
    if (!seen.insert(sym.name).second) {
      return Bad(where, absl::StrCat("symbol \"", sym.name, "\" named twice"));
    }
    m.symbols.push_back(std::move(sym));
  }
  return m;
}

std::string XrtManifestJson(const XrtManifest& m) {
  json j;
  j["format"] = kXrtManifestFormat;
  json symbols = json::array();
  if (m.packaging == v1::PACKAGING_FULL_ELF) {
    j["packaging"] = "full_elf";
    j["elf"] = m.elf;
    for (const XrtManifestSymbol& s : m.symbols) {
      if (s.scratchpad_word >= 0) {
        symbols.push_back(
            {{"name", s.name}, {"scratchpad_word", s.scratchpad_word}});
      } else {
        symbols.push_back({{"name", s.name}, {"arg", s.arg}});
      }
    }
  } else {
    j["packaging"] = "xclbin_chain";
    j["xclbin"] = m.xclbin;
    j["kernel"] = m.kernel;
    j["insts"] = m.insts;
    for (const XrtManifestSymbol& s : m.symbols)
      symbols.push_back({{"name", s.name}, {"insts_word", s.insts_word}});
  }
  j["symbols"] = std::move(symbols);
  return j.dump();
}

}  // namespace irontune
