#include "client/progress.h"

#include "absl/strings/str_cat.h"

namespace irontune {

namespace {
constexpr char kEraseLine[] = "\r\x1b[K";
}  // namespace

AutotuneProgress::AutotuneProgress(std::ostream& err, ProgressStyle style,
                                   int width)
    : err_(err), style_(style), width_(width) {}

void AutotuneProgress::Show(const std::string& line, bool transient) {
  // One write for the whole update: std::cerr flushes at every <<.
  std::string out;
  if (style_ == ProgressStyle::kBar && bar_shown_) out = kEraseLine;
  absl::StrAppend(&out, line);
  if (style_ == ProgressStyle::kBar && transient) {
    bar_shown_ = true;
  } else {
    out.push_back('\n');
    bar_shown_ = false;
  }
  err_ << out;
  err_.flush();
}

void AutotuneProgress::OnEvent(const v1::AutotuneEvent& event) {
  if (!event.job_id().empty()) job_id_ = event.job_id();
  switch (event.event_case()) {
    case v1::AutotuneEvent::kQueued:
      Show(absl::StrCat(
               "job ", job_id_, " queued",
               event.queued().position() == 0
                   ? std::string(", next to run")
                   : absl::StrCat(", ", event.queued().position(), " ahead")),
           /*transient=*/false);
      break;
    case v1::AutotuneEvent::kStarted:
      Show(absl::StrCat("job ", job_id_, " started"), /*transient=*/false);
      break;
    case v1::AutotuneEvent::kProgress:
      Show(RenderProgress(event.progress(), style_, width_),
           /*transient=*/true);
      break;
    case v1::AutotuneEvent::kLog:
      Show(event.log().text(), /*transient=*/false);
      break;
    case v1::AutotuneEvent::kTrial:
      break;
    case v1::AutotuneEvent::kResult:
      Finish();
      result_ = event.result();
      break;
    case v1::AutotuneEvent::EVENT_NOT_SET:
      break;
  }
}

void AutotuneProgress::Finish() {
  if (bar_shown_) {
    err_ << kEraseLine;
    err_.flush();
    bar_shown_ = false;
  }
}

}  // namespace irontune
