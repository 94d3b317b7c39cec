// The fleet's work queue in PostgreSQL (docs/fleet.md), over a FleetStore's
// connection.
//
// A job is a submit; its shards (one per shape) are what boxes claim.
// ClaimShard takes the queued shard of the box's platform and power mode
// with the highest priority, then the oldest, under SELECT ... FOR UPDATE
// SKIP LOCKED, so boxes claiming together get different shards and never
// wait on each other. A shard whose shape another box is timing now (a
// shard of the same shape key in another job, its lease alive) is passed
// over until that one ends, so overlapping jobs time each setting once:
// the box that claims it later pulls the figures first. Two boxes claiming
// at once are kept from taking one shape by a transaction-scoped advisory
// lock on the shape. A claim is a lease: it holds until its expiry (the
// database's clock, so boxes' clocks do not matter) unless renewed; a shard
// whose lease expired is claimed again by another box, and once
// kMaxShardAttempts claims have ended without completing it, the shard
// fails and with it the job. Each claim has an attempt number: a box may
// renew, complete or fail only the attempt it holds, so one whose lease was
// taken cannot write a result.
//
// Changes to a job (queued, first claimed, a shard done, ended) are
// announced with NOTIFY on kJobsChannel, the payload the job's id.
//
// Ownership: borrows the FleetStore, which must outlive it.
// Threads: as the FleetStore's connection (one thread at a time).
#ifndef IRONTUNE_DAEMON_FLEET_FLEET_QUEUE_H_
#define IRONTUNE_DAEMON_FLEET_FLEET_QUEUE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/fleet/fleet_rows.h"
#include "daemon/fleet/fleet_store.h"

namespace irontune {

// Claims of one shard that may end without completing it (a box killed, an
// NPU that hangs) before the shard, and its job, fail.
inline constexpr int kMaxShardAttempts = 3;
// The channel job changes are announced on.
inline constexpr std::string_view kJobsChannel = "irontune_jobs";

struct NewShard {
  std::string shape_key;  // the shape's identity, for decisions and logs
  std::string task;       // what a box needs to time it (opaque bytes)
};

struct NewJob {
  std::string kind;   // "autotune" or "measure"
  std::string owner;  // the token's name
  // Identical submits share one digest; while a job of that digest is live
  // (queued or running), another submit attaches to it.
  std::string request_digest;
  std::string platform;  // slug
  PowerMode power_mode = PowerMode::kDefault;
  int priority = 0;  // higher first
  bool interactive = false;
  std::string request;  // the request as submitted (opaque bytes)
  std::vector<NewShard> shards;
};

struct JobTicket {
  int64_t id = 0;
  bool attached = false;  // true: an identical live job already existed
};

// A claimed shard.
struct Lease {
  int64_t job_id = 0;
  int shard = 0;
  int attempt = 0;  // 1 for the first claim
  std::string shape_key;
  std::string task;
  int priority = 0;
};

// What a box commits with a shard, in one transaction.
struct ShardOutcome {
  std::vector<CacheEntry> figures;
  std::vector<VerdictRow> verdicts;
  std::string result;                   // the shard's result (opaque bytes)
  std::optional<std::string> decision;  // the shape's profile entry
};

enum class FleetJobState { kQueued, kRunning, kDone, kFailed, kCancelled };
std::string_view FleetJobStateName(FleetJobState state);

struct JobView {
  int64_t id = 0;
  FleetJobState state = FleetJobState::kQueued;
  std::string kind;
  std::string owner;
  std::string error;
  std::string platform;  // slug
  std::string power_mode;
  bool interactive = false;
  int64_t created_unix_ms = 0;
  int done = 0;    // shards done
  int failed = 0;  // shards failed
  int leased = 0;  // shards a box holds now
  // By shard index: its shape, state ("queued", "leased", "done", "failed",
  // "cancelled"), claims so far, the last attempt's error, its result and
  // the box that committed it ("" where not done).
  std::vector<std::string> shape_keys;
  std::vector<std::string> shard_states;
  std::vector<int> attempts;
  std::vector<std::string> errors;
  std::vector<std::string> results;
  std::vector<std::string> completed_by;
};

// A job as a listing shows it.
struct JobLine {
  int64_t id = 0;
  FleetJobState state = FleetJobState::kQueued;
  std::string kind;
  std::string owner;
  int64_t created_unix_ms = 0;
  int shards = 0;
  int done = 0;
};

class FleetQueue {
 public:
  explicit FleetQueue(FleetStore& store) : store_(store) {}

  // Queues a job and its shards, or attaches to the live job of the same
  // request digest. InvalidArgument for a job without shards.
  absl::StatusOr<JobTicket> SubmitJob(const NewJob& job);
  // Claims a shard of `partition`'s platform and power mode for this
  // process (the store's name), first failing the shards whose lease
  // expired on their last attempt; nullopt when none is waiting.
  absl::StatusOr<std::optional<Lease>> ClaimShard(
      const FleetPartition& partition, absl::Duration ttl);
  // Moves the lease's expiry to now + ttl. FailedPrecondition when this
  // process no longer holds that attempt (it expired and was claimed, or
  // the job ended): stop working on it.
  absl::Status RenewLease(const Lease& lease, absl::Duration ttl);
  // Commits the outcome (figures, verdicts, the decision, the shard's
  // result) in one transaction; the job is done when its last shard is.
  // FailedPrecondition, nothing written and the refusal logged, when this
  // process does not hold the attempt or `partition` is not the shard's.
  absl::Status CompleteShard(const Lease& lease,
                             const FleetPartition& partition,
                             const ShardOutcome& outcome);
  // Gives the attempt up with `error`. The shard is queued again, unless it
  // has had kMaxShardAttempts: then it fails, and its job with the error.
  // Returns whether the job failed. FailedPrecondition as RenewLease.
  absl::StatusOr<bool> FailShard(const Lease& lease, std::string_view error);
  // Hands the attempt back unfinished (this process is shutting down): the
  // shard is queued again, its attempt not counted. FailedPrecondition as
  // RenewLease.
  absl::Status ReleaseShard(const Lease& lease);
  // Cancels a live job and its shards not yet done. NotFound for an unknown
  // id; false when the job had already ended.
  absl::StatusOr<bool> CancelJob(int64_t id);

  // NotFound for an unknown id. Without `with_results` the shards' results
  // are left empty, not read: what a follower polling the job's state needs.
  absl::StatusOr<JobView> GetJob(int64_t id, bool with_results = true);
  // The request job `id` was submitted with (NewJob::request). NotFound for
  // an unknown id.
  absl::StatusOr<std::string> GetJobRequest(int64_t id);
  // The newest job of `request_digest` that is done, if any: what the store
  // already answers for an identical submit.
  absl::StatusOr<std::optional<int64_t>> FindDoneJob(
      std::string_view request_digest);
  // The newest `limit` jobs, of `owner` only unless it is empty.
  absl::StatusOr<std::vector<JobLine>> ListJobs(std::string_view owner,
                                                int limit);

 private:
  pg::Connection& conn() { return store_.connection(); }
  // Fails the shards of the platform and mode whose lease expired on their
  // last attempt, and their jobs. REQUIRES: inside a transaction.
  absl::Status FailExpired(const FleetPartition& partition);
  // Ends live job `id` in `state` ("failed", "cancelled") with `error`,
  // cancels its shards not yet done and announces it. REQUIRES: inside a
  // transaction.
  absl::Status EndJob(int64_t id, std::string_view state,
                      std::string_view error);
  // Locks the shard's row if this process holds the lease's attempt and
  // returns its (platform, power mode); FailedPrecondition (logged)
  // otherwise. REQUIRES: inside a transaction.
  absl::StatusOr<std::pair<std::string, std::string>> LockHeld(
      const Lease& lease, std::string_view doing);
  // Queues the shards of a new job. REQUIRES: inside SubmitJob's
  // transaction.
  absl::Status InsertShards(int64_t id, const NewJob& job);
  // Locks job `id`'s row until the transaction ends, so that its shards'
  // ends are taken one after another and the last one sees every other
  // done (two boxes completing the last two shards at once would each see
  // the other's not done, and leave the job running); taken before a
  // shard's row, as CancelJob takes them. REQUIRES: inside a transaction.
  absl::Status LockJob(int64_t id);
  // Adds job `id`'s shards to `view`, their results if `with_results`.
  absl::Status ReadShards(int64_t id, bool with_results, JobView& view);
  // Announces a change to job `id` (delivered at commit).
  absl::Status Notify(int64_t id);

  FleetStore& store_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_FLEET_FLEET_QUEUE_H_
