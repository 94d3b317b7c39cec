#include "daemon/base/log_safe.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"

namespace irontune {
namespace {

constexpr std::string_view kCut = "...";

bool Continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length (2 to 4) of the valid UTF-8 sequence starting at text[i], a
// byte of 0x80 or more, and its code point; 0 when it is not valid.
size_t Utf8Length(std::string_view text, size_t i, uint32_t* code_point) {
  const auto byte = [&](size_t k) {
    return static_cast<unsigned char>(text[i + k]);
  };
  const unsigned char lead = byte(0);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) lo = 0xA0;  // overlong
    if (lead == 0xED) hi = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) lo = 0x90;  // overlong
    if (lead == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size() || byte(1) < lo || byte(1) > hi) return 0;
  uint32_t cp = lead & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    if (!Continuation(byte(k))) return 0;
    cp = (cp << 6) | (byte(k) & 0x3F);
  }
  *code_point = cp;
  return n;
}

// Code points that are valid but may not reach a log line as they are.
bool Unsafe(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string Hex(std::string_view bytes) {
  std::string out;
  for (char c : bytes)
    absl::StrAppendFormat(&out, "\\x%02X", static_cast<unsigned char>(c));
  return out;
}

// The escaped form of the character at text[i]; sets *used to its bytes.
std::string Piece(std::string_view text, size_t i, size_t* used) {
  const auto c = static_cast<unsigned char>(text[i]);
  *used = 1;
  switch (c) {
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  if (c < 0x20 || c == 0x7F) return Hex(text.substr(i, 1));
  if (c < 0x80) return std::string(1, static_cast<char>(c));
  uint32_t cp = 0;
  const size_t n = Utf8Length(text, i, &cp);
  if (n == 0) return Hex(text.substr(i, 1));
  *used = n;
  return Unsafe(cp) ? Hex(text.substr(i, n)) : std::string(text.substr(i, n));
}

}  // namespace

std::string LogSafe(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  for (size_t i = 0; i < text.size();) {
    size_t used = 0;
    const std::string piece = Piece(text, i, &used);
    if (out.size() + piece.size() > max_bytes) {
      out.append(kCut);
      break;
    }
    out.append(piece);
    i += used;
  }
  return out;
}

}  // namespace irontune
