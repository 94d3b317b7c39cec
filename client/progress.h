// Shows an Autotune or Watch event stream on stderr as it arrives and keeps
// what the caller needs afterwards (the job id and the result).
// Thread-compatible: one stream's events, on one thread.
#ifndef IRONTUNE_CLIENT_PROGRESS_H_
#define IRONTUNE_CLIENT_PROGRESS_H_

#include <optional>
#include <ostream>
#include <string>

#include "client/render.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

class AutotuneProgress {
 public:
  // Writes to `err`, which must outlive this. kBar redraws one line in place
  // (carriage return, erase to the end of the line) at most `width` columns
  // wide; kLines writes a line per update.
  AutotuneProgress(std::ostream& err, ProgressStyle style, int width = 100);

  // Shows `event` (queue position, start, shape progress, log lines; trials
  // are not shown) and keeps its job id and result.
  void OnEvent(const v1::AutotuneEvent& event);

  // Erases a bar left on the line. Call before printing anything else and
  // when the stream ends; idempotent.
  void Finish();

  const std::string& job_id() const { return job_id_; }
  const std::optional<v1::AutotuneResult>& result() const { return result_; }

 private:
  void Show(const std::string& line, bool transient);

  std::ostream& err_;
  const ProgressStyle style_;
  const int width_;
  bool bar_shown_ = false;
  std::string job_id_;
  std::optional<v1::AutotuneResult> result_;
};

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_PROGRESS_H_
