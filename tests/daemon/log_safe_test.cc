#include "daemon/base/log_safe.h"

#include <catch2/catch.hpp>
#include <string>

namespace irontune {
namespace {

TEST_CASE("LogSafe keeps plain text and UTF-8 as it is") {
  CHECK(LogSafe("ci-main@unix:/run/irontune/irontuned.sock") ==
        "ci-main@unix:/run/irontune/irontuned.sock");
  CHECK(LogSafe("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80") ==
        "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80");
  CHECK(LogSafe("") == "");
}

TEST_CASE("LogSafe escapes control characters and the backslash") {
  CHECK(LogSafe("alice\n[info] job 7 queued: client=root") ==
        "alice\\n[info] job 7 queued: client=root");
  CHECK(LogSafe("a\rb\tc") == "a\\rb\\tc");
  CHECK(LogSafe("\x1B[2J\x1B]0;pwned\x07") == "\\x1B[2J\\x1B]0;pwned\\x07");
  CHECK(LogSafe(std::string("nul\0end", 7)) == "nul\\x00end");
  CHECK(LogSafe("del\x7F") == "del\\x7F");
  // An escape written by the caller stays distinguishable from one of ours.
  CHECK(LogSafe("a\\nb") == "a\\\\nb");
}

TEST_CASE("LogSafe escapes C1 controls, separators and bidi overrides") {
  CHECK(LogSafe("next\xC2\x85line") == "next\\xC2\\x85line");   // U+0085
  CHECK(LogSafe("csi\xC2\x9B") == "csi\\xC2\\x9B");             // U+009B
  CHECK(LogSafe("ls\xE2\x80\xA8x") == "ls\\xE2\\x80\\xA8x");    // U+2028
  CHECK(LogSafe("rlo\xE2\x80\xAEx") == "rlo\\xE2\\x80\\xAEx");  // U+202E
  CHECK(LogSafe("iso\xE2\x81\xA6x") == "iso\\xE2\\x81\\xA6x");  // U+2066
  CHECK(LogSafe("\xC2\xA0nbsp") == "\xC2\xA0nbsp");             // U+00A0 kept
}

TEST_CASE("LogSafe escapes each byte that is not valid UTF-8") {
  CHECK(LogSafe("\xFF") == "\\xFF");
  CHECK(LogSafe("a\x80z") == "a\\x80z");                // a stray continuation
  CHECK(LogSafe("\xE2\x82") == "\\xE2\\x82");           // truncated
  CHECK(LogSafe("\xC0\xAF") == "\\xC0\\xAF");           // overlong '/'
  CHECK(LogSafe("\xE0\x80\xAF") == "\\xE0\\x80\\xAF");  // overlong
  CHECK(LogSafe("\xED\xA0\x80") == "\\xED\\xA0\\x80");  // a surrogate
  CHECK(LogSafe("\xF4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80");  // > U+10FFFF
  CHECK(LogSafe("\xC3") == "\\xC3");  // cut at the end
}

TEST_CASE("LogSafe bounds its output and never cuts an escape") {
  const std::string long_name(1000, 'a');
  const std::string safe = LogSafe(long_name);
  CHECK(safe == std::string(kLogSafeBytes, 'a') + "...");
  CHECK(LogSafe("abc", 3) == "abc");
  CHECK(LogSafe("abcd", 3) == "abc...");
  CHECK(LogSafe("ab\n", 3) == "ab...");  // "\n" would need 2 bytes
  CHECK(LogSafe("a\xE6\x97\xA5", 3) == "a...");
  CHECK(LogSafe(std::string(10000, '\n'), kLogSafeLongBytes).size() ==
        kLogSafeLongBytes + 3);
}

}  // namespace
}  // namespace irontune
