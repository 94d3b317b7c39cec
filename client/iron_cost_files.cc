#include "client/iron_cost_files.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/replace_file.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// IRON's files are small; a CostTable of a large model is a few MiB.
constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{64} << 20;

absl::StatusOr<std::string> ReadWhole(const fs::path& path) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path.string(), ": ", ec.message()));
  }
  if (size > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": ", size,
                     " bytes, more than an IRON cost file's 64 MiB"));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  return text.str();
}

std::string Line(const fs::path& path, const std::string& text) {
  json line = {{"kind", "iron_file"}, {"path", path.string()}, {"text", text}};
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Why a figure is not written (IronExportCounts::skipped's keys).
constexpr char kSkipOwn[] =
    "irontune's own measurements: kept under irontune's digest, not IRON's "
    "key (which hashes IRON's recipe hash, unknown to irontune)";
constexpr char kSkipTable[] =
    "CostTable steps: keyed by IRON's cost_key, not a cost cache key";
constexpr char kSkipVerdict[] =
    "builder verdicts: IRON's cost cache keeps none";
constexpr char kSkipNotFinite[] = "figures whose time is not a finite number";
constexpr char kSkipOtherMode[] = "figures of another power mode than --pmode";

bool IsKey(const std::string& s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// A platform slug as IRON spells its directories: [a-z0-9-], no '-' at
// either end. Anything else could leave DIR.
bool IsSlug(const std::string& s) {
  return !s.empty() && s.front() != '-' && s.back() != '-' &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
         });
}

// The next code point of UTF-8 `s` at `i` (advanced past it); U+FFFD for a
// byte that does not start a well-formed sequence.
uint32_t NextCodePoint(const std::string& s, size_t& i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
  if (c >= 0x80 && extra == 0) {
    ++i;
    return 0xFFFD;
  }
  uint32_t cp = extra == 0 ? c : c & (0x3F >> extra);
  if (i + extra >= s.size()) {
    ++i;
    return 0xFFFD;
  }
  for (int k = 1; k <= extra; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  i += extra + 1;
  return cp;
}

// A string as Python's json.dumps writes it (ensure_ascii).
std::string PythonString(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const char* named = c == '"'    ? "\\\""
                        : c == '\\' ? "\\\\"
                        : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r"
                        : c == '\t' ? "\\t"
                        : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f"
                                    : nullptr;
    if (named != nullptr) {
      out += named;
      ++i;
    } else if (c >= 0x20 && c < 0x7F) {
      out += c;
      ++i;
    } else {
      uint32_t cp = NextCodePoint(s, i);
      if (cp > 0xFFFF) {
        cp -= 0x10000;
        absl::StrAppendFormat(&out, "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                              0xDC00 + (cp & 0x3FF));
      } else {
        absl::StrAppendFormat(&out, "\\u%04x", cp);
      }
    }
  }
  return out + "\"";
}

// A proto3 JSON double: a number, or "NaN"/"Infinity"/"-Infinity".
double JsonDouble(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "Infinity") return HUGE_VAL;
    if (s == "-Infinity") return -HUGE_VAL;
    return std::nan("");
  }
  return std::nan("");
}

std::string Field(const json& m, const char* name) {
  auto it = m.find(name);
  return it != m.end() && it->is_string() ? it->get<std::string>() : "";
}

// The list `name` of `m` as Python writes a list of floats; nullopt when an
// element is not finite.
std::optional<std::string> FloatList(const json& m, const char* name) {
  std::string out = "[";
  auto it = m.find(name);
  if (it != m.end() && it->is_array()) {
    for (const json& v : *it) {
      const double d = JsonDouble(v);
      if (!std::isfinite(d)) return std::nullopt;
      if (out.size() > 1) out += ", ";
      out += PythonFloat(d);
    }
  }
  return out + "]";
}

// IRON's Measurement file for export measurement `m` at `pmode`; nullopt
// when a time is not finite.
std::optional<std::string> MeasurementFile(const json& m,
                                           const std::string& pmode) {
  auto t = m.find("t_step_us");
  const double t_step = t == m.end() ? std::nan("") : JsonDouble(*t);
  std::optional<std::string> rounds = FloatList(m, "round_us");
  std::optional<std::string> defaults = FloatList(m, "default_round_us");
  if (!std::isfinite(t_step) || !rounds || !defaults) return std::nullopt;
  auto c = m.find("calls");
  const uint64_t calls =
      c != m.end() && c->is_number_unsigned() ? c->get<uint64_t>() : 0;
  return absl::StrCat(
      "{\"t_step_us\": ", PythonFloat(t_step), ", \"round_us\": ", *rounds,
      ", \"output\": ", PythonString(Field(m, "output")),
      ", \"run\": ", PythonString(Field(m, "run")),
      ", \"pmode\": ", PythonString(pmode), ", \"calls\": ", calls,
      ", \"default_round_us\": ", *defaults,
      ", \"measured\": ", PythonString(Field(m, "measured")), "}\n");
}

// Writes `text` to `path` whole (client/replace_file.h), creating its
// directories first.
absl::Status WriteWhole(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return absl::DataLossError(absl::StrCat(
        "cannot create ", path.parent_path().string(), ": ", ec.message()));
  }
  return ReplaceFile(path.string(), text);
}

}  // namespace

std::string PythonFloat(double v) {
  char buf[64];
  const std::to_chars_result r =
      std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);  // "-1.2345e+02", shortest round trip
  const size_t e_at = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e_at; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exp = std::stoi(sci.substr(e_at + 1));
  std::string out = negative ? "-" : "";
  if (exp < -4 || exp > 15) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    absl::StrAppendFormat(&out, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out;
  }
  if (exp < 0) {
    return absl::StrCat(out, "0.", std::string(-exp - 1, '0'), digits);
  }
  const size_t whole = static_cast<size_t>(exp) + 1;
  if (digits.size() <= whole) {
    return absl::StrCat(out, digits, std::string(whole - digits.size(), '0'),
                        ".0");
  }
  return absl::StrCat(out, digits.substr(0, whole), ".", digits.substr(whole));
}

size_t IronExportCounts::skipped_total() const {
  size_t n = 0;
  for (const auto& [why, count] : skipped) n += count;
  return n;
}

absl::Status IronCostWriter::Add(const std::string& text) {
  ++lines_;
  const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("export line ", lines_, ": ", why));
  };
  if (line.is_discarded() || !line.is_object()) {
    return bad("not a JSON object");
  }
  const std::string kind = Field(line, "kind");
  if (kind == "verdict") {
    ++counts_.skipped[kSkipVerdict];
    return absl::OkStatus();
  }
  if (kind == "measurement") {
    ++counts_.skipped[kSkipOwn];
    return absl::OkStatus();
  }
  if (kind != "iron_cost")
    return bad(absl::StrCat("unknown kind \"", kind, "\""));
  const std::string key = Field(line, "key");
  if (!IsKey(key)) {
    ++counts_.skipped[kSkipTable];
    return absl::OkStatus();
  }
  const std::string platform = Field(line, "platform");
  if (!IsSlug(platform)) return bad("platform is not a platform slug");
  std::string mode = Field(line, "power_mode");
  auto m = line.find("measurement");
  if (mode.empty() || m == line.end() || !m->is_object()) {
    return bad("no power_mode or measurement");
  }
  std::string pmode = pmode_;
  if (pmode.empty()) {
    pmode = mode;
    pmode[0] = absl::ascii_toupper(pmode[0]);
  } else if (absl::AsciiStrToLower(absl::StripAsciiWhitespace(pmode_)) !=
             absl::AsciiStrToLower(mode)) {
    ++counts_.skipped[kSkipOtherMode];
    return absl::OkStatus();
  }
  std::optional<std::string> file = MeasurementFile(*m, pmode);
  if (!file) {
    ++counts_.skipped[kSkipNotFinite];
    return absl::OkStatus();
  }
  const fs::path path =
      fs::path(root_) / platform / pmode / absl::StrCat(key, ".json");
  absl::Status written = WriteWhole(path, *file);
  if (written.ok()) ++counts_.written;
  return written;
}

absl::StatusOr<std::optional<std::vector<std::string>>> IronImportLines(
    const std::string& path) {
  std::error_code ec;
  std::vector<std::string> lines;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    if (ec) {
      return absl::NotFoundError(
          absl::StrCat("listing ", path, ": ", ec.message()));
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      absl::StatusOr<std::string> text = ReadWhole(file);
      if (!text.ok()) return text.status();
      lines.push_back(Line(file, *text));
    }
    return lines;
  }
  absl::StatusOr<std::string> text = ReadWhole(path);
  if (!text.ok()) return text.status();
  const json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.contains("kind")) {
    return std::nullopt;
  }
  lines.push_back(Line(path, *text));
  return lines;
}

}  // namespace irontune
