#include "daemon/xrt/artifact_manifest.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/npu/arena_view.h"
#include "daemon/npu/platform.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxBytes = uint64_t{1} << 40;

// Each kind of per-call value and its word in the manifest.
constexpr std::pair<ValueKind, const char*> kValueKinds[] = {
    {ValueKind::kCore, "core"},
    {ValueKind::kAddr, "addr"},
};

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

// The unsigned integer field `key` of `j` (at `where`), at most `max`.
absl::StatusOr<uint64_t> SizeField(const json& j, const char* key,
                                   const std::string& where, uint64_t max) {
  const std::string field = absl::StrCat(where, ".", key);
  const auto it = j.find(key);
  if (it == j.end()) return Bad(field, "missing");
  if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
      it->get<uint64_t>() > max) {
    return Bad(field, absl::StrCat("not an integer in [0, ", max, "]"));
  }
  return it->get<uint64_t>();
}

absl::StatusOr<ValueKind> KindField(const json& s, const std::string& where) {
  const auto it = s.find("kind");
  if (it == s.end()) return Bad(absl::StrCat(where, ".kind"), "missing");
  const std::string kind = it->is_string() ? it->get<std::string>() : "";
  for (const auto& [k, name] : kValueKinds) {
    if (kind == name) return k;
  }
  return Bad(absl::StrCat(where, ".kind"),
             absl::StrCat(it->dump(), " is not \"core\" or \"addr\""));
}

absl::StatusOr<XrtManifestSymbol> ParseSymbol(const json& s, bool chain,
                                              const std::string& where) {
  if (!s.is_object()) return Bad(where, "not an object");
  XrtManifestSymbol sym;
  ASSIGN_OR_RETURN(sym.name, StringField(s, "name", false));
  if (!chain && s.contains("arg")) {
    return Bad(absl::StrCat(where, ".arg"),
               "XRT takes no scalar arguments on a full ELF's kernel; a "
               "per-call value is a ctrl scratchpad word");
  }
  const char* place = chain ? "insts_word" : "scratchpad_word";
  const char* other = chain ? "scratchpad_word" : "insts_word";
  if (s.contains(other) ||
      (chain && (s.contains("arg") || s.contains("kind")))) {
    return Bad(where,
               absl::StrCat("not a symbol of ",
                            PackagingWord(chain ? v1::PACKAGING_XCLBIN_CHAIN
                                                : v1::PACKAGING_FULL_ELF),
                            " packaging (it takes ", place, ")"));
  }
  ASSIGN_OR_RETURN(const uint64_t index, SizeField(s, place, where, 1 << 30));
  (chain ? sym.insts_word : sym.scratchpad_word) = static_cast<int>(index);
  if (!chain) {
    ASSIGN_OR_RETURN(sym.kind, KindField(s, where));
  }
  return sym;
}

absl::Status ParseSymbols(const json& j, XrtManifest& m) {
  const auto symbols = j.find("symbols");
  if (symbols == j.end()) return absl::OkStatus();
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
  return absl::OkStatus();
}

absl::Status ParseArenas(const json& j, XrtManifest& m) {
  const auto arenas = j.find("arenas");
  if (arenas == j.end()) return Bad("arenas", "missing");
  const std::vector<std::string>& names = ArenaNames();
  if (!arenas->is_array() || arenas->size() < 3 ||
      arenas->size() > names.size()) {
    return Bad("arenas",
               "not an array of 3 or 4 arenas (input, output, "
               "scratch[, feedback])");
  }
  for (size_t i = 0; i < arenas->size(); ++i) {
    const std::string where = absl::StrCat("arenas[", i, "]");
    const json& a = (*arenas)[i];
    if (!a.is_object()) return Bad(where, "not an object");
    XrtArena arena;
    arena.name = a.value("name", "");
    if (arena.name != names[i]) {
      return Bad(absl::StrCat(where, ".name"),
                 absl::StrCat("\"", arena.name, "\", expected \"", names[i],
                              "\" (arena ", i, " is kernel argument ", i, ")"));
    }
    ASSIGN_OR_RETURN(arena.nbytes, SizeField(a, "nbytes", where, kMaxBytes));
    m.arenas.push_back(std::move(arena));
  }
  return absl::OkStatus();
}

absl::StatusOr<XrtView> ParseView(const json& v, const XrtManifest& m,
                                  const std::string& where) {
  if (!v.is_object()) return Bad(where, "not an object");
  const std::string arena = v.value("arena", "");
  XrtView view;
  const auto it =
      std::find_if(m.arenas.begin(), m.arenas.end(),
                   [&](const XrtArena& a) { return a.name == arena; });
  if (it == m.arenas.end()) {
    return Bad(absl::StrCat(where, ".arena"),
               absl::StrCat("\"", arena, "\" is none of the arenas"));
  }
  view.arena = static_cast<int>(it - m.arenas.begin());
  ASSIGN_OR_RETURN(view.offset, SizeField(v, "offset", where, kMaxBytes));
  ASSIGN_OR_RETURN(view.nbytes, SizeField(v, "nbytes", where, kMaxBytes));
  if (view.offset % kArenaViewAlignment != 0) {
    return Bad(absl::StrCat(where, ".offset"),
               absl::StrCat(view.offset, " is not a multiple of ",
                            kArenaViewAlignment));
  }
  if (view.nbytes == 0 || view.offset + view.nbytes > it->nbytes) {
    return Bad(where, absl::StrCat("bytes [", view.offset, ", ",
                                   view.offset + view.nbytes,
                                   ") are not a non-empty range of arena ",
                                   arena, " (", it->nbytes, " bytes)"));
  }
  return view;
}

// Views may not overlap within an arena unless they are the same (a
// buffer steps share).
absl::Status CheckOverlaps(const XrtManifest& m) {
  std::vector<ArenaView> views;
  std::vector<const std::string*> names;
  for (const auto& [name, v] : m.views) {
    views.push_back({static_cast<size_t>(v.arena), v.offset, v.nbytes});
    names.push_back(&name);
  }
  if (const auto pair = OverlappingViews(views)) {
    const auto [at, other] = *pair;
    return Bad(absl::StrCat("buffers.", *names[at]),
               absl::StrCat("overlaps buffer ", *names[other], " in arena ",
                            m.arenas[views[at].arena].name));
  }
  return absl::OkStatus();
}

absl::Status ParseViews(const json& j, XrtManifest& m) {
  const auto views = j.find("buffers");
  if (views == j.end()) return Bad("buffers", "missing");
  if (!views->is_object()) return Bad("buffers", "not an object");
  for (const auto& [name, v] : views->items()) {
    ASSIGN_OR_RETURN(m.views[name],
                     ParseView(v, m, absl::StrCat("buffers.", name)));
  }
  return CheckOverlaps(m);
}

absl::Status ParseFiles(const json& j, XrtManifest& m) {
  ASSIGN_OR_RETURN(const std::string packaging,
                   StringField(j, "packaging", false));
  const std::optional<v1::Packaging> known = ParsePackaging(packaging);
  if (!known.has_value()) {
    return Bad("packaging", absl::StrCat("\"", packaging,
                                         "\" is not xclbin_chain or full_elf"));
  }
  m.packaging = *known;
  if (m.packaging == v1::PACKAGING_XCLBIN_CHAIN) {
    ASSIGN_OR_RETURN(m.xclbin, StringField(j, "xclbin", true));
    if (j.contains("kernel")) {
      if (!j["kernel"].is_string()) return Bad("kernel", "not a string");
      m.kernel = j["kernel"].get<std::string>();
    }
    ASSIGN_OR_RETURN(m.insts, StringField(j, "insts", true));
  } else {
    ASSIGN_OR_RETURN(m.elf, StringField(j, "elf", true));
    RETURN_IF_ERROR(ParseArenas(j, m));
    RETURN_IF_ERROR(ParseViews(j, m));
  }
  return absl::OkStatus();
}

}  // namespace

const char* ValueKindName(ValueKind kind) {
  for (const auto& [k, name] : kValueKinds) {
    if (k == kind) return name;
  }
  return "";
}

absl::StatusOr<int32_t> EncodeValue(absl::string_view name, int64_t value,
                                    ValueKind kind) {
  // A core's word holds the value shifted left by 2 (mlir-aie
  // runtime_lib/test_lib/parameter_scratchpad.h; IRON artifacts.py,
  // Parameter): checked after the shift, so no bit is lost.
  const int64_t word = kind == ValueKind::kCore ? value * 4 : value;
  if (word < INT32_MIN || word > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "per-call value ", name, " = ", value,
        kind == ValueKind::kCore ? " does not fit 32 bits shifted left by 2 "
                                   "(a core reads it as value << 2)"
                                 : " does not fit 32 bits"));
  }
  return static_cast<int32_t>(word);
}

const std::vector<std::string>& ArenaNames() {
  static const auto* names =
      new std::vector<std::string>{"input", "output", "scratch", "feedback"};
  return *names;
}

absl::StatusOr<XrtManifest> ParseXrtManifest(absl::string_view payload) {
  const json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("payload", "not JSON");
  if (!j.is_object()) return Bad("payload", "not a JSON object");
  ASSIGN_OR_RETURN(const std::string format, StringField(j, "format", false));
  if (format == "irontune-xrt-artifact/1") {
    return Bad("format",
               "\"irontune-xrt-artifact/1\" predates full-ELF arenas and "
               "value kinds; the artifact must be rebuilt");
  }
  if (format != kXrtManifestFormat) {
    return Bad("format", absl::StrCat("\"", format, "\", expected \"",
                                      kXrtManifestFormat, "\""));
  }
  XrtManifest m;
  RETURN_IF_ERROR(ParseFiles(j, m));
  RETURN_IF_ERROR(ParseSymbols(j, m));
  return m;
}

std::string XrtManifestJson(const XrtManifest& m) {
  json j;
  j["format"] = kXrtManifestFormat;
  json symbols = json::array();
  if (m.packaging == v1::PACKAGING_FULL_ELF) {
    j["packaging"] = PackagingWord(v1::PACKAGING_FULL_ELF);
    j["elf"] = m.elf;
    json arenas = json::array(), views = json::object();
    for (const XrtArena& a : m.arenas)
      arenas.push_back({{"name", a.name}, {"nbytes", a.nbytes}});
    for (const auto& [name, v] : m.views) {
      const std::string arena =
          v.arena >= 0 && v.arena < static_cast<int>(m.arenas.size())
              ? m.arenas[v.arena].name
              : "";
      views[name] = {
          {"arena", arena}, {"offset", v.offset}, {"nbytes", v.nbytes}};
    }
    j["arenas"] = std::move(arenas);
    j["buffers"] = std::move(views);
    for (const XrtManifestSymbol& s : m.symbols) {
      symbols.push_back({{"name", s.name},
                         {"scratchpad_word", s.scratchpad_word},
                         {"kind", ValueKindName(s.kind)}});
    }
  } else {
    j["packaging"] = PackagingWord(v1::PACKAGING_XCLBIN_CHAIN);
    j["xclbin"] = m.xclbin;
    if (!m.kernel.empty()) j["kernel"] = m.kernel;
    j["insts"] = m.insts;
    for (const XrtManifestSymbol& s : m.symbols)
      symbols.push_back({{"name", s.name}, {"insts_word", s.insts_word}});
  }
  j["symbols"] = std::move(symbols);
  return j.dump();
}

}  // namespace irontune
