// RefusalLog: failed authentications' log lines, rate-limited. A flood of
// wrong tokens makes one warning a second, each saying how many refusals it
// stands for, instead of one line each (docs/security.md).
//
// No gRPC types. Threads: Note may be called from any thread.
#ifndef IRONTUNE_DAEMON_EDGE_REFUSAL_LOG_H_
#define IRONTUNE_DAEMON_EDGE_REFUSAL_LOG_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace irontune {

class RefusalLog {
 public:
  // At most one line per `interval`.
  explicit RefusalLog(absl::Duration interval = absl::Seconds(1))
      : interval_(interval) {}

  // Counts one refusal described by `line` at `now`. Returns the line to
  // log: `line` itself when the last one logged is at least `interval`
  // old, followed by " (and N more refused since the last such line)" when
  // refusals were held back meanwhile; nullopt (held back, counted)
  // otherwise.
  std::optional<std::string> Note(absl::string_view line, absl::Time now);

  // Refusals counted so far, logged or not.
  uint64_t total() const;

 private:
  const absl::Duration interval_;
  mutable absl::Mutex mu_;
  absl::Time last_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t held_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t total_ ABSL_GUARDED_BY(mu_) = 0;
};

// Logs `line` through `log` at warn level (or every line when `log` is
// null).
void WarnRefusal(RefusalLog* log, absl::string_view line);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_REFUSAL_LOG_H_
