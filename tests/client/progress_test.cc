#include "client/progress.h"

#include <catch2/catch.hpp>
#include <sstream>

namespace irontune {
namespace {

v1::AutotuneEvent Progress(uint32_t index) {
  v1::AutotuneEvent e;
  e.set_job_id("job-1");
  e.mutable_progress()->set_index(index);
  e.mutable_progress()->set_total(2);
  e.mutable_progress()->set_shape("GEMV M=2048 K=8192");
  return e;
}

v1::AutotuneEvent Log(const std::string& text) {
  v1::AutotuneEvent e;
  e.set_job_id("job-1");
  e.mutable_log()->set_text(text);
  return e;
}

v1::AutotuneEvent Result() {
  v1::AutotuneEvent e;
  e.set_job_id("job-1");
  e.mutable_result()->mutable_stats()->set_shapes(2);
  return e;
}

TEST_CASE("plain progress is a line per event, the result is kept") {
  std::ostringstream err;
  AutotuneProgress p(err, ProgressStyle::kLines);
  v1::AutotuneEvent queued;
  queued.set_job_id("job-1");
  queued.mutable_queued()->set_position(0);
  p.OnEvent(queued);
  p.OnEvent(Progress(0));
  p.OnEvent(Log("hello"));
  CHECK_FALSE(p.result().has_value());
  p.OnEvent(Result());
  p.Finish();
  CHECK(err.str() ==
        "job job-1 queued, next to run\n"
        "shape 1/2 GEMV M=2048 K=8192: 0 settings timed, 0 from the cache\n"
        "hello\n");
  CHECK(p.job_id() == "job-1");
  REQUIRE(p.result().has_value());
  CHECK(p.result()->stats().shapes() == 2);
}

TEST_CASE("a bar is redrawn in place, logs go above it, and it is erased") {
  std::ostringstream err;
  AutotuneProgress p(err, ProgressStyle::kBar, 60);
  p.OnEvent(Progress(0));
  p.OnEvent(Progress(1));
  p.OnEvent(Log("hello"));
  p.OnEvent(Progress(1));
  p.OnEvent(Result());
  const std::string s = err.str();
  CHECK(s.find('\n') == s.find("hello") + 5);  // only the log ends a line
  CHECK(s.rfind("\r\x1b[K") == s.size() - 4);  // the bar erased at the end
  CHECK(s.find("[..........") == 0);
  CHECK_THAT(s, Catch::Contains("\r\x1b[K[##########.........."));
  p.Finish();
  CHECK(err.str() == s);  // idempotent
}

}  // namespace
}  // namespace irontune
