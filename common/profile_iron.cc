// IRON's profile rules (iron/common/declare/profile.py at kIronCommit): what
// an entry may name, the JSON text Profile.save writes (Python's json.dumps
// of each entry), and the selection of a tunable's value.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/families.h"
#include "common/profile.h"
#include "common/profile_order.h"
#include "common/shape.h"
#include "common/value.h"

namespace irontune {
namespace {

absl::string_view Absl(std::string_view s) { return {s.data(), s.size()}; }

// Python's repr of a float, as json.dumps writes it: the shortest digits
// that round-trip, fixed between 1e-4 and 1e16, else d.ddde[+-]XX.
void AppendPythonFloat(double d, std::string* out) {
  if (std::isnan(d)) return out->append("NaN"), void();
  if (std::isinf(d))
    return out->append(d > 0 ? "Infinity" : "-Infinity"), void();
  char buf[64];
  auto r =
      std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e + 1));
  out->append(sign);
  if (exp10 < -4 || exp10 >= 16) {
    out->push_back(digits[0]);
    if (digits.size() > 1) absl::StrAppend(out, ".", digits.substr(1));
    absl::StrAppendFormat(out, "e%c%02d", exp10 < 0 ? '-' : '+',
                          std::abs(exp10));
  } else if (exp10 >= 0) {
    const size_t whole = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= whole) {
      absl::StrAppend(out, digits, std::string(whole - digits.size(), '0'),
                      ".0");
    } else {
      absl::StrAppend(out, digits.substr(0, whole), ".", digits.substr(whole));
    }
  } else {
    absl::StrAppend(out, "0.", std::string(-exp10 - 1, '0'), digits);
  }
}

// json.dumps's string: ensure_ascii, so every non-ASCII code point as
// \uXXXX (a surrogate pair past the BMP); invalid UTF-8 bytes as U+FFFD.
void AppendPythonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      std::string one;
      AppendJsonString(std::string_view(&s[i], 1), &one);
      out->append(one.substr(1, one.size() - 2));
      ++i;
      continue;
    }
    const int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    uint32_t cp = len == 1 ? 0xFFFD : (c & (0x7F >> len));
    bool ok = len > 1 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) cp = 0xFFFD;
    i += ok ? len : 1;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      absl::StrAppendFormat(out, "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                            0xDC00 + (cp & 0x3FF));
    } else {
      absl::StrAppendFormat(out, "\\u%04x", cp);
    }
  }
  out->push_back('"');
}

void AppendPythonValue(const v1::Value& v, std::string* out) {
  switch (v.kind_case()) {
    case v1::Value::kDoubleValue:
      return AppendPythonFloat(v.double_value(), out);
    case v1::Value::kStringValue:
      return AppendPythonString(v.string_value(), out);
    default:
      return AppendValueText(v, out);
  }
}

}  // namespace

std::string IronEntryJson(const v1::ProfileEntry& entry) {
  std::string out = "{\"operator\": ";
  AppendPythonString(entry.operator_class(), &out);
  for (const auto* fields : {&entry.dims(), &entry.tunables()}) {
    for (const v1::Field& f : *fields) {
      out.append(", ");
      AppendPythonString(f.name(), &out);
      out.append(": ");
      AppendPythonValue(f.value(), &out);
    }
  }
  out.push_back('}');
  return out;
}

std::string IronEntryCheck(const v1::ProfileEntry& entry) {
  const Family* family = FindFamily(entry.operator_class());
  if (family == nullptr) return "";
  const std::string& cls = entry.operator_class();
  for (const auto* fields : {&entry.dims(), &entry.tunables()}) {
    for (const v1::Field& f : *fields) {
      if (IsDim(*family, f.name()) || IsTunable(*family, f.name())) continue;
      if (IsDerived(*family, f.name())) {
        return absl::StrCat(f.name(), ": ", cls, " derives or fixes ", f.name(),
                            "; a profile may not give it");
      }
      return absl::StrCat(f.name(), ": ", cls, " declares no field ", f.name(),
                          " (docs/operators.md)");
    }
  }
  if (entry.tunables_size() == 0) {
    return family->tunables.empty()
               ? absl::StrCat(cls,
                              " has no tunables: IRON refuses any entry "
                              "for it")
               : absl::StrCat("an entry for ", cls, " must give a tunable");
  }
  return "";
}

namespace {

// The call's dims: its params, else the class's defaults.
std::vector<v1::Field> CallDims(std::string_view class_name,
                                const ProfileFields& params) {
  std::vector<v1::Field> dims(params.begin(), params.end());
  const Family* family = FindFamily(class_name);
  if (family == nullptr) return dims;
  for (const Dim& d : family->dims) {
    if (d.default_value.kind_case() == v1::Value::KIND_NOT_SET) continue;
    auto it = std::find_if(dims.begin(), dims.end(), [&](const v1::Field& f) {
      return f.name() == d.name;
    });
    if (it != dims.end()) continue;
    v1::Field& f = dims.emplace_back();
    f.set_name(d.name);
    *f.mutable_value() = d.default_value;
  }
  return dims;
}

bool EntryMatches(const v1::ProfileEntry& entry,
                  const std::vector<v1::Field>& dims) {
  for (const v1::Field& dim : entry.dims()) {
    auto it = std::find_if(dims.begin(), dims.end(), [&](const v1::Field& p) {
      return p.name() == dim.name();
    });
    if (it == dims.end() || !ValuesEqual(it->value(), dim.value())) {
      return false;
    }
  }
  return true;
}

// IRON's Profile.tunables_for over `profile`'s entries: each tunable from the
// most specific matching entry naming it; a tie that disagrees is refused,
// naming both entries by index.
absl::StatusOr<std::vector<v1::Field>> TunablesOf(const v1::Profile& profile,
                                                  std::string_view class_name,
                                                  const ProfileFields& params) {
  const std::vector<v1::Field> dims = CallDims(class_name, params);
  struct Chosen {
    int rank;
    const v1::Field* field;
    int entry;
  };
  std::vector<std::pair<std::string, Chosen>> chosen;  // in first-named order
  for (int i = 0; i < profile.entries_size(); ++i) {
    const v1::ProfileEntry& entry = profile.entries(i);
    if (entry.operator_class() != class_name || !EntryMatches(entry, dims)) {
      continue;
    }
    for (const v1::Field& t : entry.tunables()) {
      auto it = std::find_if(chosen.begin(), chosen.end(), [&](const auto& c) {
        return c.first == t.name();
      });
      const Chosen here{entry.dims_size(), &t, i};
      if (it == chosen.end()) {
        chosen.emplace_back(t.name(), here);
      } else if (here.rank > it->second.rank) {
        it->second = here;
      } else if (here.rank == it->second.rank &&
                 !ValuesEqual(it->second.field->value(), t.value())) {
        const int first = it->second.entry;
        return absl::InvalidArgumentError(absl::StrCat(
            Absl(class_name), ": equally specific profile entries disagree on ",
            t.name(), ": entries[", first, "] ",
            EntryToString(profile.entries(first)), " and entries[", i, "] ",
            EntryToString(entry)));
      }
    }
  }
  std::vector<v1::Field> out;
  for (const auto& [name, c] : chosen) out.push_back(*c.field);
  return out;
}

}  // namespace

absl::StatusOr<std::vector<v1::Field>> Profile::TunablesFor(
    std::string_view class_name, const ProfileFields& params) const {
  return TunablesOf(proto_, class_name, params);
}

absl::Status CheckProfileFor(const v1::Profile& profile,
                             const v1::Calls& calls) {
  std::set<std::string> seen;  // shape keys already looked up
  for (int i = 0; i < calls.operators_size(); ++i) {
    const v1::Operator& op = calls.operators(i);
    if (!seen.insert(ShapeKey(op)).second) continue;
    const std::vector<v1::Field> dims = ShapeDims(op);
    const ProfileFields params(dims.begin(), dims.end());
    absl::StatusOr<std::vector<v1::Field>> chosen =
        TunablesOf(profile, op.class_name(), params);
    if (!chosen.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("profile: ", chosen.status().message(),
                       "; IRON refuses to construct operators[", i, "] (",
                       ShapeKey(op), ") under it"));
    }
  }
  return absl::OkStatus();
}

void Profile::Put(v1::ProfileEntry entry) {
  const std::string identity = EntryIdentity(entry);
  for (v1::ProfileEntry& e : *proto_.mutable_entries()) {
    if (EntryIdentity(e) == identity) {
      e = std::move(entry);
      return;
    }
  }
  Add(std::move(entry));
}

}  // namespace irontune
