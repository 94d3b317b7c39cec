#include "common/value.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace irontune {
namespace {

// The shortest text that reads back as the same double, always with a '.'
// or an exponent so that it reads back as a double, not an int. JSON has no
// non-finite numbers; they are written as Python's json module writes them.
void AppendDouble(double d, std::string* out) {
  if (std::isnan(d)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(d)) {
    out->append(d > 0 ? "Infinity" : "-Infinity");
    return;
  }
  char buffer[64];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), d);
  const std::string_view text(buffer, result.ptr - buffer);
  out->append(text);
  if (text.find_first_of(".eE") == std::string_view::npos) out->append(".0");
}

}  // namespace

bool ValuesEqual(const v1::Value& a, const v1::Value& b) {
  return CompareValues(a, b) == 0;
}

std::strong_ordering CompareValues(const v1::Value& a, const v1::Value& b) {
  if (a.kind_case() != b.kind_case()) {
    return static_cast<int>(a.kind_case()) <=> static_cast<int>(b.kind_case());
  }
  switch (a.kind_case()) {
    case v1::Value::kIntValue:
      return a.int_value() <=> b.int_value();
    case v1::Value::kBoolValue:
      return a.bool_value() <=> b.bool_value();
    case v1::Value::kStringValue:
      return a.string_value() <=> b.string_value();
    case v1::Value::kDoubleValue:
      return std::strong_order(a.double_value(), b.double_value());
    case v1::Value::KIND_NOT_SET:
      break;
  }
  return std::strong_ordering::equal;
}

void AppendJsonString(std::string_view s, std::string* out) {
  // The control characters JSON writes with a letter, and their letters.
  constexpr std::string_view kControls = "\b\f\n\r\t";
  constexpr std::string_view kLetters = "bfnrt";
  out->push_back('"');
  for (char c : s) {
    const size_t control = kControls.find(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (control != std::string_view::npos) {
      out->push_back('\\');
      out->push_back(kLetters[control]);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void AppendValueText(const v1::Value& v, std::string* out) {
  switch (v.kind_case()) {
    case v1::Value::kIntValue:
      absl::StrAppend(out, v.int_value());
      return;
    case v1::Value::kBoolValue:
      out->append(v.bool_value() ? "true" : "false");
      return;
    case v1::Value::kStringValue:
      AppendJsonString(v.string_value(), out);
      return;
    case v1::Value::kDoubleValue:
      AppendDouble(v.double_value(), out);
      return;
    case v1::Value::KIND_NOT_SET:
      break;
  }
  out->append("null");
}

std::string ValueToString(const v1::Value& v) {
  std::string out;
  AppendValueText(v, &out);
  return out;
}

std::string ValueKey(const v1::Value& v) {
  switch (v.kind_case()) {
    case v1::Value::kIntValue:
      return absl::StrCat("i:", v.int_value());
    case v1::Value::kBoolValue:
      return absl::StrCat("b:", v.bool_value() ? 1 : 0);
    case v1::Value::kStringValue:
      return absl::StrCat("s:", v.string_value().size(), ":", v.string_value());
    case v1::Value::kDoubleValue:
      return absl::StrFormat("d:%016x",
                             std::bit_cast<uint64_t>(v.double_value()));
    case v1::Value::KIND_NOT_SET:
      break;
  }
  return "unset";
}

}  // namespace irontune
