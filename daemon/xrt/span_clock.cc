// SpanClockNow against a real XRT: the host's steady clock, as IRON times
// a call.
#include "daemon/xrt/span_clock.h"

namespace irontune {

std::chrono::steady_clock::time_point SpanClockNow() {
  return std::chrono::steady_clock::now();
}

}  // namespace irontune
