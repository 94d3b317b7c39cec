// FleetBox: irontuned as one box of a fleet (docs/fleet.md). A second
// source of jobs beside the gRPC service: it claims shards of its own
// platform and power mode from the fleet store's queue, runs each as a job
// on the same device worker, and commits what it timed.
//
// A shard's task is an irontune.v1.AutotuneRequest for one shape (the
// calls of that shape, the profile, the Timing). The box validates it as
// the service would, queues it as a detached job and follows it: every
// third of the lease it renews the lease and publishes the outbox, so the
// figures timed so far reach the store and a box that takes the shard over
// after this one dies re-times only what was in flight. When the job ends
// it commits the outbox's rest, the job's result (an irontune.v1.JobResult)
// and the shape's profile entry in one transaction (FleetQueue::
// CompleteShard), or gives the attempt up with the job's error
// (FailShard). A lease lost meanwhile cancels the job.
//
// Once it holds a shard, before running it, the box pulls the figures
// other boxes of its partition committed since its last pull into its cache
// (Cache::MergeFromFleet, on the worker), so a setting timed on one box is not
// timed again on the next, and a box resuming a shard re-times only what was in
// flight. Each pull starts a minute before the last figure it read, since a
// late commit may carry an earlier time.
//
// The box claims only while its own queue is empty, nothing runs and the
// worker's heartbeat is alive: local submits go first, and a box whose NPU
// hangs stops claiming and gives up the attempt under way (GiveUpHung), so
// another box resumes at once. Idle, it waits for the store's job notice
// (LISTEN on its connection), else idle_poll, so a shard queued for an
// idle box is claimed at once.
// While the store cannot be reached it retries every idle_poll; what the
// worker times meanwhile waits in the cache's outbox (cache_outbox.h).
//
// Lifetime: construct, Start(), Stop() (also from the destructor; a shard
// under way is handed back, its attempt not counted). Threads: its own;
// Start, Stop and stats from any thread.
#ifndef IRONTUNE_DAEMON_SCHEDULER_FLEET_BOX_H_
#define IRONTUNE_DAEMON_SCHEDULER_FLEET_BOX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/fleet/fleet_queue.h"
#include "daemon/fleet/fleet_store.h"
#include "daemon/fleet/fleet_url.h"
#include "daemon/scheduler/admission.h"
#include "daemon/scheduler/job_queue.h"
#include "daemon/scheduler/jobs.h"
#include "daemon/scheduler/worker.h"
#include "daemon/store/cache_outbox.h"

namespace irontune {

struct FleetBoxOptions {
  FleetConnection connection;  // to reconnect after the store comes back
  std::string name;            // as leases name the box
  // What the box's figures also follow (FleetPartition::toolchain;
  // FleetToolchain).
  std::string toolchain;
  absl::Duration lease = absl::Seconds(30);
  // Between claims while there is nothing to do or the store is down.
  absl::Duration idle_poll = absl::Seconds(1);
  // The worker counts as hung past this in one call (DaemonOptions).
  absl::Duration stall_limit = absl::Seconds(120);
  AdmissionLimits limits;
  int shapes_at_once = 1;
  size_t publish_batch = 5000;  // outbox rows per transaction
};

struct FleetBoxStats {
  int64_t claimed = 0;
  int64_t completed = 0;
  int64_t failed = 0;  // attempts given up with an error
  int64_t lost = 0;    // leases lost (expired and taken, or the job ended)
  int64_t published_figures = 0;
  int64_t published_verdicts = 0;
  int64_t pulled_rows = 0;       // other boxes' figures and verdicts cached
  bool store_reachable = false;  // as of the last call to the store
};

class FleetBox {
 public:
  // `store` and `outbox` are owned; `worker` and `queue` must outlive the
  // box.
  FleetBox(FleetBoxOptions options, std::unique_ptr<FleetStore> store,
           std::unique_ptr<CacheOutbox> outbox, DeviceWorker* worker,
           JobQueue* queue);
  ~FleetBox();
  FleetBox(const FleetBox&) = delete;
  FleetBox& operator=(const FleetBox&) = delete;

  void Start();
  void Stop();
  FleetBoxStats stats() const;

 private:
  // A pulled figure's key in recent_: its cache key and its Timing, since
  // the store keeps a key's figures at each Timing apart.
  static std::string RecentKey(const CacheEntry& entry);
  void Loop();
  // Whether to claim now: the queue empty, nothing running, the worker
  // alive.
  bool ReadyToClaim() const;
  FleetPartition Partition() const;
  // Reopens the store's connection when it was lost.
  absl::Status Reconnect();
  // Sends the outbox to the store in batches until it is empty.
  absl::Status Publish();
  // Merges the other boxes' figures, then verdicts, committed since the
  // last pull into the cache, in batches.
  absl::Status Pull();
  absl::Status PullVerdicts();
  // Adds `figures` and `verdicts` to the cache on the worker's thread.
  absl::Status MergePulled(const std::vector<CacheEntry>& figures,
                           const std::vector<VerdictRow>& verdicts);
  // Claims one shard and runs it; false when there was none to claim or the
  // store failed.
  bool ClaimAndRun();
  void RunShard(const Lease& lease);
  // The shard's job, queued; or the reason it cannot run here.
  absl::StatusOr<JobPtr> StartJob(const Lease& lease);
  // Waits for `job` to end, renewing the lease and publishing meanwhile.
  // False when the lease was lost or the box is stopping (the job is
  // cancelled and the lease handled).
  bool Follow(const JobPtr& job, const Lease& lease);
  // Commits the ended job's outcome, or gives the attempt up.
  // Waits up to `d` for the store to announce a job change (a shard
  // queued anywhere), or Stop; false once stopping. Without a LISTEN on
  // the connection it just waits.
  bool AwaitWork(absl::Duration d);
  // The worker hung under `job` (no heartbeat for the stall limit): the
  // attempt is given up with why, so another box may claim the shard now
  // rather than once the lease expires.
  void GiveUpHung(const JobPtr& job, const Lease& lease);
  void Finish(const JobPtr& job, const Lease& lease);
  // Sleeps up to `d`; false once stopping.
  bool Pause(absl::Duration d);
  bool stopping() const;
  // Counts a call to the store's outcome.
  void Noted(const absl::Status& status);

  const FleetBoxOptions options_;
  std::unique_ptr<FleetStore> store_;
  std::unique_ptr<FleetQueue> queue_db_;  // over store_
  // Whether store_'s connection LISTENs to kJobsChannel (AwaitWork).
  bool listening_ = false;
  std::unique_ptr<CacheOutbox> outbox_;
  DeviceWorker* const worker_;
  JobQueue* const queue_;
  std::thread thread_;
  // Where the next pull starts, and the figures read in the minute before
  // it, by key and Timing (RecentKey), so a pull merges only what it has
  // not (the loop's thread only).
  FigureCursor pulled_;
  absl::flat_hash_map<std::string, absl::Time> recent_;
  VerdictCursor pulled_verdicts_;
  absl::flat_hash_map<std::string, absl::Time> recent_verdicts_;

  mutable absl::Mutex mu_;
  absl::CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  FleetBoxStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_FLEET_BOX_H_
