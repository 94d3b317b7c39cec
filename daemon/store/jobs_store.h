// JobStore: jobs in SQLite (jobs.db in the state dir), so a job's result
// can be read after its client has gone and after a restart. A job is saved
// when it starts, as it progresses and when it ends; one that was still
// running when the daemon died is marked INTERRUPTED at the next start.
// Ended jobs are pruned by age and by the table's size (JobStoreLimits).
//
// Ownership: a JobStore owns its connection to the file.
// Threads: thread-safe; one connection behind a mutex (the file is small and
// written once per job, by whichever thread ends it).
// Failure: SQLite errors come back as a Status; a row that does not decode
// reads as absent.
#ifndef IRONTUNE_DAEMON_STORE_JOBS_STORE_H_
#define IRONTUNE_DAEMON_STORE_JOBS_STORE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/store/sqlite.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// What is kept of one finished job.
struct JobRecord {
  std::string id;
  std::string client;
  v1::JobResult result;  // its summary and result
  std::string events;    // a one-line count of its events, for people
};

// How much of the past jobs.db keeps: ended jobs older than `max_age`, and
// the oldest ended jobs past `max_bytes` of stored records, are deleted.
struct JobStoreLimits {
  absl::Duration max_age = absl::Hours(24 * 30);
  int64_t max_bytes = int64_t{64} << 20;
};

class JobStore {
 public:
  // Opens or creates `path` and its table, and prunes it. REQUIRES: its
  // directory exists.
  static absl::StatusOr<std::unique_ptr<JobStore>> Open(
      const std::string& path, JobStoreLimits limits = JobStoreLimits());
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // Stores a job, replacing an earlier row of its id; after a job that
  // ended, prunes (a failed prune is not the save's error).
  absl::Status Save(const JobRecord& job);
  // Marks every job stored as queued or running INTERRUPTED, keeping its
  // progress, with an error saying what to do; returns their ids. Call at
  // start, before any job of this run is saved.
  absl::StatusOr<std::vector<std::string>> MarkInterrupted();
  // Deletes ended jobs past the limits; returns how many.
  absl::StatusOr<int64_t> Prune();
  // The job's stored result; nullopt when unknown.
  absl::StatusOr<std::optional<v1::JobResult>> Load(const std::string& id);
  // Summaries of the newest `limit` stored jobs, newest first.
  absl::StatusOr<std::vector<v1::JobSummary>> List(int limit);

 private:
  JobStore(std::unique_ptr<sqlite::Db> db, JobStoreLimits limits)
      : limits_(limits), db_(std::move(db)) {}
  absl::StatusOr<int64_t> PruneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobStoreLimits limits_;
  absl::Mutex mu_;
  std::unique_ptr<sqlite::Db> db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_STORE_JOBS_STORE_H_
