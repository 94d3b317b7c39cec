// JobStore: finished jobs in SQLite (jobs.db in the state dir), so a job's
// result can be read after its client has gone and after a restart.
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

class JobStore {
 public:
  // Opens or creates `path` and its table. REQUIRES: its directory exists.
  static absl::StatusOr<std::unique_ptr<JobStore>> Open(
      const std::string& path);
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // Stores a finished job, replacing an earlier row of its id.
  absl::Status Save(const JobRecord& job);
  // The job's stored result; nullopt when unknown.
  absl::StatusOr<std::optional<v1::JobResult>> Load(const std::string& id);
  // Summaries of the newest `limit` stored jobs, newest first.
  absl::StatusOr<std::vector<v1::JobSummary>> List(int limit);

 private:
  explicit JobStore(std::unique_ptr<sqlite::Db> db) : db_(std::move(db)) {}
  absl::Mutex mu_;
  std::unique_ptr<sqlite::Db> db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_STORE_JOBS_STORE_H_
