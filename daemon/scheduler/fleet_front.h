// FleetFront: what a front (`irontuned --role front`, docs/fleet.md) does
// with the Tuner service's calls, without gRPC: a submit becomes a fleet
// job and its shards in the store, and a job's events and result are read
// back from the store, whichever front submitted it. A front holds no job
// of its own, so any front can answer for any job and fronts come and go.
//
// The rules:
//   - target: a submit names its platform (or a generation the fleet's
//     config maps to one, FleetPlatforms) and power mode (default:
//     "default"); a front has no NPU of its own to fall back on;
//   - stored answers: an identical submit (FleetRequestDigest) whose job is
//     done is answered with that job at once, unless it asks to remeasure;
//     one whose job is live attaches to it (FleetQueue::SubmitJob);
//   - a client that goes away holds nothing and cancels nothing: the job is
//     shared by every submit attached to it, so it goes on; `irontune-client
//     cancel` ends it;
//   - a job's events: Queued, Started at its first claim, a ShapeProgress
//     and a log line as each shard is done, a log line for each failed
//     attempt, then its result (AssembleResult): the whole profile when
//     every shard is done; when one failed on kMaxShardAttempts boxes, or
//     the job was cancelled, the profile so far with the shards not done
//     untuned and the error named, and the call fails with that error.
//
// Job ids on the wire are "f-" and the store's job number.
// Threads: every method from any thread, concurrently (a FleetPool
// connection each). Failure: the store's errors; an Unavailable marks the
// pool down for its retry time (FleetPool::MarkDown).
#ifndef IRONTUNE_DAEMON_SCHEDULER_FLEET_FRONT_H_
#define IRONTUNE_DAEMON_SCHEDULER_FLEET_FRONT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/fleet/fleet_pool.h"
#include "daemon/fleet/fleet_queue.h"
#include "daemon/fleet/job_notices.h"
#include "daemon/npu/platform.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// "f-12" for fleet job 12, and back (nullopt for any other text).
std::string FleetJobName(int64_t id);
std::optional<int64_t> ParseFleetJobName(std::string_view name);

// Where a submit runs: a platform's slug and a power mode.
struct FleetTarget {
  std::string platform;  // "npu-strix"
  PowerMode power_mode = PowerMode::kDefault;
};

// The fleet's platforms as a front resolves a submit's: a known platform
// by any name PlatformAnswersTo accepts ("strix", "NPU Strix",
// "npu-strix"), or a generation ("npu2") through the fleet's map, since
// Strix and Krackan both load npu2.json but time differently.
class FleetPlatforms {
 public:
  // Parses `GEN=PLATFORM` entries (--fleet-platform npu2=strix).
  // InvalidArgument naming the entry: not GEN=PLATFORM, an unknown
  // generation or platform, a platform of another generation, or a
  // generation mapped twice.
  static absl::StatusOr<FleetPlatforms> Parse(
      const std::vector<std::string>& entries);

  // The target of a submit naming `platform` and `power_mode` (empty:
  // "default"). InvalidArgument naming what is wrong: no platform, an
  // unknown one (listing the known), a generation the map does not name,
  // an unknown power mode.
  absl::StatusOr<FleetTarget> Resolve(std::string_view platform,
                                      std::string_view power_mode) const;

 private:
  std::map<std::string, std::string> by_generation_;  // "npu2" -> slug
};

struct FrontSubmit {
  int64_t id = 0;
  bool attached = false;  // joined an identical live job
  bool stored = false;    // answered by an identical job already done
};

class FleetFront {
 public:
  // Borrows `pool` and `notices`, which must outlive it.
  FleetFront(FleetPool& pool, JobNotices& notices, FleetPlatforms platforms);

  // The target of `request` (FleetPlatforms::Resolve).
  absl::StatusOr<FleetTarget> TargetOf(
      const v1::AutotuneRequest& request) const;
  // Makes `request` (REQUIRES: validated) a job of `owner` on `target`, or
  // finds the identical one (the rules above).
  absl::StatusOr<FrontSubmit> Submit(const v1::AutotuneRequest& request,
                                     const std::string& owner,
                                     const FleetTarget& target);

  // Emits job `id`'s events through `emit` (false: stop) until it ends,
  // polling `stop` (true: stop, the caller gone) about every 100 ms. Its
  // end: OK when the job is done; its error when it failed or was
  // cancelled (after the result event); Cancelled when `emit` or `stop`
  // ended it first. While the store is unreachable it waits, saying so
  // once in a log event.
  absl::Status Follow(int64_t id,
                      const std::function<bool(const v1::AutotuneEvent&)>& emit,
                      const std::function<bool()>& stop);

  // The job without its shards' results (NotFound for an unknown id).
  absl::StatusOr<JobView> Get(int64_t id);
  // The job's summary, and its result (AssembleResult) once it ended.
  absl::StatusOr<v1::JobResult> Result(int64_t id);
  // FleetQueue::CancelJob.
  absl::StatusOr<bool> Cancel(int64_t id);
  // The newest `limit` jobs (of `owner` unless empty), as summaries.
  absl::StatusOr<std::vector<v1::JobSummary>> List(std::string_view owner,
                                                   int limit);

 private:
  // Runs `fn` on a pooled connection's queue; marks the pool down on
  // Unavailable.
  template <typename T>
  absl::StatusOr<T> WithQueue(
      const std::function<absl::StatusOr<T>(FleetQueue&)>& fn);
  // Sends the result of ended job `view` through `send`; its end status
  // (Follow's).
  absl::Status Finish(const JobView& view,
                      const std::function<bool(v1::AutotuneEvent)>& send);

  FleetPool& pool_;
  JobNotices& notices_;
  const FleetPlatforms platforms_;
};

// A fleet job's state as the Tuner service reports it.
v1::JobState WireStateOf(FleetJobState state);
// The summary of `view` (REQUIRES: its shards read).
v1::JobSummary SummaryOf(const JobView& view);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_FLEET_FRONT_H_
