// LogSafe: text a caller sent (a request's `client` field, an import's
// source, a job id, a file name, a peer address, an error that quotes any
// of them, a build command's stderr) made fit for one log line, so that no
// caller can forge or hide log lines, or drive the terminal that shows
// them. Every place a caller-supplied string reaches spdlog passes it
// through here; the lines themselves are the daemon's.
//
// Thread-safe (a pure function).
#ifndef IRONTUNE_DAEMON_BASE_LOG_SAFE_H_
#define IRONTUNE_DAEMON_BASE_LOG_SAFE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace irontune {

// A caller's name, field or file name: at most this many bytes once escaped.
inline constexpr size_t kLogSafeBytes = 256;
// A whole message that quotes caller text (an error, a build's stderr).
inline constexpr size_t kLogSafeLongBytes = 4096;

// `text` with a backslash written `\\`; newline, CR and tab as `\n`, `\r`,
// `\t`; every other C0 control, DEL, and each byte that is not part of
// valid UTF-8 (a stray continuation, a truncated or overlong sequence, a
// surrogate, past U+10FFFF) as `\xNN`; the C1 controls (U+0080-U+009F),
// the line and paragraph separators (U+2028, U+2029) and the bidirectional
// overrides and isolates (U+202A-U+202E, U+2066-U+2069) as the `\xNN` of
// each of their bytes. Other UTF-8 is kept. Past `max_bytes` of output the
// text is cut (never inside an escape or a character) and ends "...".
std::string LogSafe(std::string_view text, size_t max_bytes = kLogSafeBytes);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_LOG_SAFE_H_
