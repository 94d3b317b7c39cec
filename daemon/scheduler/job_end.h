// How a job that ran is ended, the same whether the device worker ran it
// or it was answered from the cache (cached_answers.h), so the two give the
// same record, result statistics and log line.
//
// Threads: any; the job is thread-safe and the store too.
#ifndef IRONTUNE_DAEMON_SCHEDULER_JOB_END_H_
#define IRONTUNE_DAEMON_SCHEDULER_JOB_END_H_

#include <optional>
#include <string_view>
#include <variant>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "daemon/scheduler/job_context.h"
#include "daemon/scheduler/jobs.h"
#include "daemon/store/jobs_store.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

using JobResultVariant =
    std::variant<std::monostate, v1::AutotuneResult, v1::MeasureResult>;

// "autotune" or "measure".
const char* KindName(v1::JobKind kind);

// Saves `job`'s record in `store` (null: nothing is saved); the store's
// error, which is also logged.
absl::Status SaveJob(JobStore* store, const Job& job);

// Ends `job`, run through `context` since `wall_start`, with `status` (a
// cancelled job's own status where it failed) and `result`: an Autotune
// result's stats get `builds`; a Measure that succeeded gets stats of its
// own (one shape, its settings timed and from the cache, its device and
// wall time, `builds`). Then saves the job in `store` and logs its end
// line, with `how` after the outcome ("" or " (from the cache)").
void EndJob(const JobPtr& job, absl::Status status, JobResultVariant result,
            const JobContext& context,
            const std::optional<v1::BuildStats>& builds, absl::Time wall_start,
            JobStore* store, std::string_view how);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_JOB_END_H_
