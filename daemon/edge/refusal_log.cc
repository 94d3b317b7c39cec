#include "daemon/edge/refusal_log.h"

#include "absl/strings/str_cat.h"
#include "daemon/base/log_safe.h"
#include "spdlog/spdlog.h"

namespace irontune {

std::optional<std::string> RefusalLog::Note(absl::string_view line,
                                            absl::Time now) {
  absl::MutexLock lock(&mu_);
  ++total_;
  if (now - last_ < interval_) {
    ++held_;
    return std::nullopt;
  }
  std::string text(line);
  if (held_ > 0) {
    absl::StrAppend(&text, " (and ", held_,
                    " more refused since the last such line)");
  }
  last_ = now;
  held_ = 0;
  return text;
}

uint64_t RefusalLog::total() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

void WarnRefusal(RefusalLog* log, absl::string_view line) {
  if (log == nullptr) {
    spdlog::warn("{}", LogSafe(std::string(line), kLogSafeLongBytes));
    return;
  }
  if (std::optional<std::string> text = log->Note(line, absl::Now())) {
    spdlog::warn("{}", LogSafe(*text, kLogSafeLongBytes));
  }
}

}  // namespace irontune
