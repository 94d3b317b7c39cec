// The clock the timed span of a call is read from (XrtDevice's Run: start +
// wait of every step). Against a real XRT it is std::chrono::steady_clock
// (span_clock.cc, in irontune::xrt). The test double of XRT defines it
// itself (tests/fakes/xrt/fake_xrt.cc, in irontune_fake_xrt), so that a
// run's scripted device time passes on the double's clock without the
// double sleeping through it.
//
// Threads: any. Never fails.
#ifndef IRONTUNE_DAEMON_XRT_SPAN_CLOCK_H_
#define IRONTUNE_DAEMON_XRT_SPAN_CLOCK_H_

#include <chrono>

namespace irontune {

// Now, on the clock of the XRT irontune is linked with. Monotonic.
std::chrono::steady_clock::time_point SpanClockNow();

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_SPAN_CLOCK_H_
