// Interleaved timing of loaded images, as IRON's run_interleaved does it:
// each image is warmed once, then round by round every live image is called
// `calls` times back to back, and a round's figure for an image is the
// median of its calls.
//
// Rounds are discarded and repeated while another process holds the NPU;
// calls that waited for a CPU longer than the limit are refused and their
// round repeated. After `settle` rounds a group slower than `cutoff` times
// the fastest is timed no further; group 0 (the default) never stops.
//
// Threads: runs on the thread that owns the Device.
#ifndef IRONTUNE_DAEMON_TUNE_INTERLEAVE_H_
#define IRONTUNE_DAEMON_TUNE_INTERLEAVE_H_

#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "daemon/npu/device.h"
#include "daemon/tune/tune_context.h"
#include "irontune/v1/measurement.pb.h"

namespace irontune {

// A call whose completion waited longer than this for a CPU is refused
// (IRON's CPU_WAIT_US).
inline constexpr double kCpuWaitUs = 50.0;

// When a round does not count: how long to wait for the NPU to be free
// before giving up and how often to look (docs/npu-facts.md, "Idle NPU":
// IRON polls every 5 s for up to 1800 s), and the CPU wait over which a
// call is refused.
struct IdleRules {
  absl::Duration idle_timeout = absl::Seconds(1800);
  absl::Duration idle_poll = absl::Seconds(5);
  double cpu_wait_us = kCpuWaitUs;
};

struct RunSeries {
  std::vector<double> rounds_us;  // one median per round this run was timed
};

struct InterleaveResult {
  std::vector<RunSeries> runs;  // by the index of the image passed in
  int discarded_rounds = 0;
  int refused_calls = 0;
};

// Times `images` interleaved. `groups[i]` names the setting image i belongs
// to; group 0 is never cut. `fastest_us` is the fastest group's figure from
// an earlier batch (infinity if none). Images of a cut group keep the rounds
// they have. `context` gives the device asked for other holders, the waits,
// cancellation and progress lines.
// REQUIRES: groups.size() == images.size(); every image non-null.
// Errors: a run's error (as the device returned it), DeadlineExceeded when
// the NPU stayed held past idle_timeout, Aborted when calls kept waiting for
// a CPU, Cancelled when the context said so.
absl::StatusOr<InterleaveResult> TimeInterleaved(
    const std::vector<Image*>& images, const std::vector<int>& groups,
    const ResolvedTiming& timing, double fastest_us, const IdleRules& rules,
    TuneContext& context);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_INTERLEAVE_H_
