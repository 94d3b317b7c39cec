// Admission: what a job will cost, estimated before it is queued, and the
// limits it must keep to. A request that passed validation (requests.h) is
// admitted only when its estimated peak memory and device time, and its
// sizes, are within AdmissionLimits; otherwise it is refused naming the
// figure and the limit (and the flag that sets it), and nothing is
// allocated for it.
//
// The estimates (docs/operations.md, "Admission and limits"):
//   - peak memory: per timed operator, its inputs once per distinct step
//     (each distinct step reads them from buffers of its own, each a copy
//     on an NPU; the one seeded copy is shared by the sim's images and the
//     judge); a batch of settings loaded at once, each as a
//     1-step and a `repeats`-step image holding its outputs per distinct
//     step (every step when the buffers are at most kDistinctBytes, else
//     one), so
//       batch × output bytes × (1 + distinct steps);
//     plus the outputs read back: each setting's (kept for judging where
//     it differs from the default's) and the default's of two batches (one
//     digested while the next is timed), (settings + 1) × output bytes;
//     plus the request and kJobOverheadBytes. An Autotune's figure is its
//     largest shape's, its inputs counted at least at the input cache's cap
//     (InputCache::kDefaultBytes: what the job may keep of earlier shapes'
//     beside a shape's own), plus what judging adds (a point's outputs once
//     more, judged while the next point is measured, and the shape's CPU
//     references, one per point of each member, each as large as the
//     outputs), plus kAutotuneSlackBytes. With shapes searched at once,
//     at least the sum of that many of the largest shapes' own inputs
//     (counted at least at the cache's cap) and of their other figures,
//     each sum taken over its own largest (so an upper bound), plus the
//     same slack.
//   - device time, a lower bound: every setting runs its two images
//     `calls` times a round for `rounds` rounds, each run costing at least
//     a dispatch and a step floor per step (docs/npu-facts.md, "Call costs").
//     An Autotune counts every setting of every shape (its settings, as
//     tune/settings.h enumerates them), at most its budget_seconds where
//     it has one.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_SCHEDULER_ADMISSION_H_
#define IRONTUNE_DAEMON_SCHEDULER_ADMISSION_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/npu/device.h"
#include "daemon/tune/plan.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// Limits a request and the jobs it makes must keep to. The defaults suit a
// box with 32 GB of memory serving one NPU (docs/operations.md). Each is a
// flag and config key of irontuned (daemon/process/cli.cc).
struct AdmissionLimits {
  // One gRPC message (--max-message-bytes): what gRPC itself refuses. The
  // big RPCs (Autotune, Measure, ImportCache's lines) may send up to this.
  uint64_t message_bytes = uint64_t{544} << 20;
  // The request of any other RPC (--max-small-message-bytes). gRPC 1.51's
  // server has one receive limit for all methods, so this one is checked
  // once the request is read, right after its caller is authenticated.
  uint64_t small_message_bytes = uint64_t{1} << 20;
  // An Autotune's profile, encoded (--max-profile-bytes).
  uint64_t profile_bytes = uint64_t{16} << 20;
  // An Autotune's recording: operators, steps over every call, and its
  // encoded bytes (--max-recording-operators, -steps, -bytes).
  uint64_t recording_operators = 16384;
  uint64_t recording_steps = uint64_t{1} << 20;
  uint64_t recording_bytes = uint64_t{512} << 20;
  // One job's estimated peak memory (--job-memory) and device time
  // (--job-device-seconds); a running job is also stopped when its device
  // time passes the latter.
  uint64_t job_memory_bytes = uint64_t{8} << 30;
  double job_device_seconds = 6 * 3600;
  // Jobs one client may have waiting (--client-queue-quota).
  size_t client_queue_quota = 16;
  // What the requests held by jobs not yet planned may add up to
  // (--queue-memory), and one client's (--client-queue-bytes): each
  // request's encoded size as received, held from its submit until its
  // job drops it (queue_budget.h).
  uint64_t queue_memory_bytes = uint64_t{2} << 30;
  uint64_t client_queue_bytes = uint64_t{1} << 30;
  // Autotune, Measure and Watch streams open at once (--max-streams); one
  // caller's at most (--max-streams-per-caller; 0: a quarter of
  // concurrent_streams, at least 1); the last of them kept for admin
  // callers (--admin-streams; -1: kDefaultAdminStreams, at most a quarter
  // of concurrent_streams). stream_quota.h.
  size_t concurrent_streams = 256;
  size_t streams_per_caller = 0;
  int64_t admin_streams = -1;
  // What every running job's estimates may add up to (--memory-limit);
  // a job whose estimate exceeds it is refused.
  uint64_t memory_limit_bytes = uint64_t{16} << 30;
};

// What any job allocates besides its buffers and request: helper threads'
// stacks, events, the cache's pages (about 3 MiB by service_bench
// --big-job; bench/README.md).
inline constexpr uint64_t kJobOverheadBytes = uint64_t{8} << 20;

// What an Autotune's earlier shapes may leave mapped besides: buffers freed
// that the allocator keeps rather than returning them at once (glibc keeps
// up to twice its mmap threshold, at most 64 MiB, free at a heap's top; the
// worker returns the rest when idle). The example's Autotune peaks about
// 20 MiB above its largest shape's own figure (bench/README.md).
inline constexpr uint64_t kAutotuneSlackBytes = uint64_t{64} << 20;

// The streams kept for admin callers when --admin-streams is not given.
inline constexpr size_t kDefaultAdminStreams = 4;

// A job's estimates.
struct JobCost {
  uint64_t memory_bytes = 0;
  double device_seconds = 0;
};

// The floor a run of N steps costs, kDispatchFloorUs plus N kStepFloorUs,
// is daemon/tune/plan.h's, which plans an Autotune's device time.

// The estimates of a Measure on `platform`, or ResourceExhausted naming the
// figure and the limit it exceeds. REQUIRES: ValidateMeasureRequest passed.
absl::StatusOr<JobCost> AdmitMeasure(const v1::MeasureRequest& request,
                                     const Platform& platform,
                                     const AdmissionLimits& limits);

// The estimates of an Autotune on `platform`; ResourceExhausted as above,
// also for a profile or recording over its limits. REQUIRES:
// ValidateAutotuneRequest passed.
// `shapes_at_once`: how many shapes the job searches at once
// (AutotuneOptions.shapes_at_once, irontuned --shapes-at-once).
absl::StatusOr<JobCost> AdmitAutotune(const v1::AutotuneRequest& request,
                                      const Platform& platform,
                                      const AdmissionLimits& limits,
                                      int shapes_at_once = 1);

// "1.5 GiB", "512 B": a byte count for messages.
std::string FormatBytes(uint64_t bytes);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_ADMISSION_H_
