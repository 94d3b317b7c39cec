#include "daemon/fleet/fleet_queue.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

constexpr std::string_view kJobStates[] = {"queued", "running", "done",
                                           "failed", "cancelled"};

pg::Param Millis(absl::Duration d) {
  return pg::Param::Int(absl::ToInt64Milliseconds(d));
}

FleetJobState StateOf(std::string_view text) {
  for (size_t i = 0; i < std::size(kJobStates); ++i) {
    if (text == kJobStates[i]) return static_cast<FleetJobState>(i);
  }
  return FleetJobState::kFailed;  // the table's CHECK allows no other
}

std::string LeaseName(const Lease& lease) {
  return absl::StrCat("shard ", lease.job_id, "/", lease.shard, " attempt ",
                      lease.attempt);
}

}  // namespace

std::string_view FleetJobStateName(FleetJobState state) {
  return kJobStates[static_cast<int>(state)];
}

absl::Status FleetQueue::LockJob(int64_t id) {
  return conn()
      .Exec("SELECT 1 FROM irontune.jobs WHERE id = $1 FOR UPDATE",
            {pg::Param::Int(id)})
      .status();
}

absl::Status FleetQueue::Notify(int64_t id) {
  return conn()
      .Exec("SELECT pg_notify($1, $2)",
            {pg::Param::Text(std::string(kJobsChannel)),
             pg::Param::Text(absl::StrCat(id))})
      .status();
}

absl::Status FleetQueue::InsertShards(int64_t id, const NewJob& job) {
  for (size_t i = 0; i < job.shards.size(); ++i) {
    RETURN_IF_ERROR(
        conn()
            .Exec("INSERT INTO irontune.shards(job_id, shard, shape_key, "
                  "platform, power_mode, priority, task, state) VALUES ($1, "
                  "$2, $3, $4, $5, $6, $7, 'queued')",
                  {pg::Param::Int(id), pg::Param::Int(static_cast<int64_t>(i)),
                   pg::Param::Text(job.shards[i].shape_key),
                   pg::Param::Text(job.platform),
                   pg::Param::Text(std::string(PowerModeName(job.power_mode))),
                   pg::Param::Int(job.priority),
                   pg::Param::Bytes(job.shards[i].task)})
            .status());
  }
  return absl::OkStatus();
}

absl::StatusOr<JobTicket> FleetQueue::SubmitJob(const NewJob& job) {
  if (job.shards.empty()) {
    return absl::InvalidArgumentError("a fleet job needs at least one shard");
  }
  ASSIGN_OR_RETURN(pg::Transaction txn, pg::Transaction::Begin(conn()));
  ASSIGN_OR_RETURN(
      pg::Result inserted,
      conn().Exec(
          "INSERT INTO irontune.jobs(kind, owner, request_digest, platform, "
          "power_mode, priority, interactive, state, request) VALUES ($1, $2, "
          "$3, $4, $5, $6, $7, 'queued', $8) ON CONFLICT (request_digest) "
          "WHERE state IN ('queued', 'running') DO NOTHING RETURNING id",
          {pg::Param::Text(job.kind), pg::Param::Text(job.owner),
           pg::Param::Text(job.request_digest), pg::Param::Text(job.platform),
           pg::Param::Text(std::string(PowerModeName(job.power_mode))),
           pg::Param::Int(job.priority),
           pg::Param::Text(job.interactive ? "true" : "false"),
           pg::Param::Bytes(job.request)}));
  JobTicket ticket;
  if (inserted.rows() == 1) {
    ASSIGN_OR_RETURN(ticket.id, inserted.Int(0, 0));
    RETURN_IF_ERROR(InsertShards(ticket.id, job));
    RETURN_IF_ERROR(Notify(ticket.id));
  } else {
    // The live job this submit collided with. It cannot end before this
    // transaction's next statement sees it unless it committed its end
    // meanwhile: then the caller submits again.
    ASSIGN_OR_RETURN(
        pg::Result live,
        conn().Exec("SELECT id FROM irontune.jobs WHERE request_digest = $1 "
                    "AND state IN ('queued', 'running')",
                    {pg::Param::Text(job.request_digest)}));
    if (live.rows() != 1) {
      return absl::AbortedError(
          "the identical job this submit would join ended meanwhile; submit "
          "again");
    }
    ASSIGN_OR_RETURN(ticket.id, live.Int(0, 0));
    ticket.attached = true;
  }
  RETURN_IF_ERROR(txn.Commit());
  return ticket;
}

absl::Status FleetQueue::EndJob(int64_t id, std::string_view state,
                                std::string_view error) {
  RETURN_IF_ERROR(
      conn()
          .Exec("UPDATE irontune.jobs SET state = $2, error = $3, updated = "
                "now() WHERE id = $1 AND state IN ('queued', 'running')",
                {pg::Param::Int(id), pg::Param::Text(std::string(state)),
                 pg::Param::Text(std::string(error))})
          .status());
  RETURN_IF_ERROR(
      conn()
          .Exec("UPDATE irontune.shards SET state = 'cancelled', lease_owner "
                "= NULL, lease_expires = NULL WHERE job_id = $1 AND state IN "
                "('queued', 'leased')",
                {pg::Param::Int(id)})
          .status());
  return Notify(id);
}

absl::Status FleetQueue::FailExpired(const FleetPartition& partition) {
  ASSIGN_OR_RETURN(
      pg::Result dead,
      conn().Exec(
          "UPDATE irontune.shards SET state = 'failed', last_error = 'the "
          "lease of attempt ' || attempts || ' (' || lease_owner || ') "
          "expired' || CASE WHEN last_error = '' THEN '' ELSE '; before: ' || "
          "last_error END, lease_owner = NULL, lease_expires = NULL WHERE "
          "platform = $1 AND power_mode = $2 AND state = 'leased' AND "
          "lease_expires < clock_timestamp() AND attempts >= $3 RETURNING "
          "job_id, shard, shape_key, last_error",
          {pg::Param::Text(partition.platform),
           pg::Param::Text(std::string(PowerModeName(partition.power_mode))),
           pg::Param::Int(kMaxShardAttempts)}));
  for (int i = 0; i < dead.rows(); ++i) {
    ASSIGN_OR_RETURN(int64_t job, dead.Int(i, 0));
    const std::string error = absl::StrCat(
        "shard ", std::string(dead.Text(i, 1)), " (",
        std::string(dead.Text(i, 2)), ") failed on ", kMaxShardAttempts,
        " attempts: ", std::string(dead.Text(i, 3)));
    spdlog::warn("fleet: job {} fails: {}", job, error);
    RETURN_IF_ERROR(EndJob(job, "failed", error));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Lease>> FleetQueue::ClaimShard(
    const FleetPartition& partition, absl::Duration ttl) {
  ASSIGN_OR_RETURN(pg::Transaction txn, pg::Transaction::Begin(conn()));
  RETURN_IF_ERROR(FailExpired(partition));
  ASSIGN_OR_RETURN(
      pg::Result claimed,
      conn().Exec(
          "WITH c AS (SELECT job_id, shard FROM irontune.shards q WHERE "
          "platform = $1 AND power_mode = $2 AND (state = 'queued' OR (state "
          "= 'leased' AND lease_expires < clock_timestamp())) AND NOT EXISTS "
          "(SELECT 1 FROM irontune.shards o WHERE o.platform = $1 AND "
          "o.power_mode = $2 AND o.shape_key = q.shape_key AND o.state = "
          "'leased' AND o.lease_expires >= clock_timestamp()) AND "
          "pg_try_advisory_xact_lock(hashtextextended($1 || ' ' || $2 || ' ' "
          "|| q.shape_key, 0)) ORDER BY priority DESC, created, job_id, shard "
          "LIMIT 1 FOR UPDATE SKIP LOCKED) UPDATE irontune.shards s SET state "
          "= 'leased', lease_owner "
          "= $3, lease_expires = clock_timestamp() + $4 * interval '1 "
          "millisecond', attempts = s.attempts + 1 FROM c WHERE s.job_id = "
          "c.job_id AND s.shard = c.shard RETURNING s.job_id, s.shard, "
          "s.attempts, s.shape_key, s.task, s.priority",
          {pg::Param::Text(partition.platform),
           pg::Param::Text(std::string(PowerModeName(partition.power_mode))),
           pg::Param::Text(store_.name()), Millis(ttl)}));
  if (claimed.rows() == 0) {
    RETURN_IF_ERROR(txn.Commit());  // keeps what FailExpired did
    return std::nullopt;
  }
  Lease lease;
  ASSIGN_OR_RETURN(lease.job_id, claimed.Int(0, 0));
  ASSIGN_OR_RETURN(int64_t shard, claimed.Int(0, 1));
  ASSIGN_OR_RETURN(int64_t attempt, claimed.Int(0, 2));
  ASSIGN_OR_RETURN(int64_t priority, claimed.Int(0, 5));
  lease.shard = static_cast<int>(shard);
  lease.attempt = static_cast<int>(attempt);
  lease.priority = static_cast<int>(priority);
  lease.shape_key = std::string(claimed.Text(0, 3));
  ASSIGN_OR_RETURN(lease.task, claimed.Bytes(0, 4));
  RETURN_IF_ERROR(conn()
                      .Exec("UPDATE irontune.jobs SET state = 'running', "
                            "updated = now() WHERE id = $1 AND state = "
                            "'queued'",
                            {pg::Param::Int(lease.job_id)})
                      .status());
  RETURN_IF_ERROR(Notify(lease.job_id));
  RETURN_IF_ERROR(txn.Commit());
  return lease;
}

absl::StatusOr<std::pair<std::string, std::string>> FleetQueue::LockHeld(
    const Lease& lease, std::string_view doing) {
  ASSIGN_OR_RETURN(
      pg::Result row,
      conn().Exec(
          "SELECT platform, power_mode FROM irontune.shards WHERE "
          "job_id = $1 AND shard = $2 AND state = 'leased' AND "
          "lease_owner = $3 AND attempts = $4 FOR UPDATE",
          {pg::Param::Int(lease.job_id), pg::Param::Int(lease.shard),
           pg::Param::Text(store_.name()), pg::Param::Int(lease.attempt)}));
  if (row.rows() == 0) {
    const std::string why = absl::StrCat(
        LeaseName(lease), " is not held by ", store_.name(),
        " (its lease expired and another box claimed it, or the job ended); "
        "its ",
        std::string(doing), " is refused");
    spdlog::warn("fleet: {}", why);
    return absl::FailedPreconditionError(why);
  }
  return std::make_pair(std::string(row.Text(0, 0)),
                        std::string(row.Text(0, 1)));
}

absl::Status FleetQueue::RenewLease(const Lease& lease, absl::Duration ttl) {
  ASSIGN_OR_RETURN(
      pg::Result renewed,
      conn().Exec("UPDATE irontune.shards SET lease_expires = "
                  "clock_timestamp() + $5 * interval '1 millisecond' WHERE "
                  "job_id = $1 AND shard = $2 AND state = 'leased' AND "
                  "lease_owner = $3 AND attempts = $4",
                  {pg::Param::Int(lease.job_id), pg::Param::Int(lease.shard),
                   pg::Param::Text(store_.name()),
                   pg::Param::Int(lease.attempt), Millis(ttl)}));
  if (renewed.affected() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(LeaseName(lease), " is no longer held by ", store_.name(),
                     "; stop working on it"));
  }
  return absl::OkStatus();
}

absl::Status FleetQueue::CompleteShard(const Lease& lease,
                                       const FleetPartition& partition,
                                       const ShardOutcome& outcome) {
  ASSIGN_OR_RETURN(pg::Transaction txn, pg::Transaction::Begin(conn()));
  RETURN_IF_ERROR(LockJob(lease.job_id));
  ASSIGN_OR_RETURN(auto held, LockHeld(lease, "result"));
  const std::string mode(PowerModeName(partition.power_mode));
  if (held.first != partition.platform || held.second != mode) {
    const std::string why = absl::StrCat(
        LeaseName(lease), " runs on ", held.first, " at ", held.second,
        "; a result from ", partition.platform, " at ", mode, " is refused");
    spdlog::warn("fleet: {}", why);
    return absl::FailedPreconditionError(why);
  }
  const std::string& box = store_.name();
  RETURN_IF_ERROR(
      InsertFigures(conn(), partition, box, outcome.figures).status());
  RETURN_IF_ERROR(
      InsertVerdicts(conn(), partition.platform, box, outcome.verdicts)
          .status());
  if (outcome.decision) {
    RETURN_IF_ERROR(InsertDecision(conn(), partition, box, lease.shape_key,
                                   *outcome.decision, lease.job_id)
                        .status());
  }
  const pg::Param id = pg::Param::Int(lease.job_id);
  RETURN_IF_ERROR(
      conn()
          .Exec("UPDATE irontune.shards SET state = 'done', result = $3, "
                "completed_by = $4, lease_owner = NULL, lease_expires = NULL "
                "WHERE job_id = $1 AND shard = $2",
                {id, pg::Param::Int(lease.shard),
                 pg::Param::Bytes(outcome.result), pg::Param::Text(box)})
          .status());
  RETURN_IF_ERROR(
      conn()
          .Exec("UPDATE irontune.jobs SET state = 'done', updated = now() "
                "WHERE id = $1 AND state IN ('queued', 'running') AND NOT "
                "EXISTS (SELECT 1 FROM irontune.shards WHERE job_id = $1 AND "
                "state <> 'done')",
                {id})
          .status());
  RETURN_IF_ERROR(Notify(lease.job_id));
  return txn.Commit();
}

absl::StatusOr<bool> FleetQueue::FailShard(const Lease& lease,
                                           std::string_view error) {
  ASSIGN_OR_RETURN(pg::Transaction txn, pg::Transaction::Begin(conn()));
  RETURN_IF_ERROR(LockJob(lease.job_id));
  RETURN_IF_ERROR(LockHeld(lease, "failure").status());
  ASSIGN_OR_RETURN(
      pg::Result row,
      conn().Exec("UPDATE irontune.shards SET state = CASE WHEN attempts >= "
                  "$3 THEN 'failed' ELSE 'queued' END, last_error = $4, "
                  "lease_owner = NULL, lease_expires = NULL WHERE job_id = $1 "
                  "AND shard = $2 RETURNING state",
                  {pg::Param::Int(lease.job_id), pg::Param::Int(lease.shard),
                   pg::Param::Int(kMaxShardAttempts),
                   pg::Param::Text(absl::StrCat(store_.name(), ": ",
                                                std::string(error)))}));
  const bool job_failed = row.rows() == 1 && row.Text(0, 0) == "failed";
  if (job_failed) {
    const std::string why =
        absl::StrCat("shard ", lease.shard, " (", lease.shape_key,
                     ") failed on ", lease.attempt, " attempts; the last on ",
                     store_.name(), ": ", std::string(error));
    spdlog::warn("fleet: job {} fails: {}", lease.job_id, why);
    RETURN_IF_ERROR(EndJob(lease.job_id, "failed", why));
  } else {
    RETURN_IF_ERROR(Notify(lease.job_id));
  }
  RETURN_IF_ERROR(txn.Commit());
  return job_failed;
}

absl::Status FleetQueue::ReleaseShard(const Lease& lease) {
  ASSIGN_OR_RETURN(pg::Transaction txn, pg::Transaction::Begin(conn()));
  RETURN_IF_ERROR(LockHeld(lease, "release").status());
  RETURN_IF_ERROR(
      conn()
          .Exec("UPDATE irontune.shards SET state = 'queued', attempts = "
                "attempts - 1, lease_owner = NULL, lease_expires = NULL WHERE "
                "job_id = $1 AND shard = $2",
                {pg::Param::Int(lease.job_id), pg::Param::Int(lease.shard)})
          .status());
  RETURN_IF_ERROR(Notify(lease.job_id));
  return txn.Commit();
}

absl::StatusOr<bool> FleetQueue::CancelJob(int64_t id) {
  ASSIGN_OR_RETURN(pg::Transaction txn, pg::Transaction::Begin(conn()));
  ASSIGN_OR_RETURN(pg::Result job,
                   conn().Exec("SELECT state FROM irontune.jobs WHERE id = $1 "
                               "FOR UPDATE",
                               {pg::Param::Int(id)}));
  if (job.rows() == 0) {
    return absl::NotFoundError(absl::StrCat("no fleet job ", id));
  }
  if (job.Text(0, 0) != "queued" && job.Text(0, 0) != "running") return false;
  RETURN_IF_ERROR(EndJob(id, "cancelled", "cancelled"));
  RETURN_IF_ERROR(txn.Commit());
  return true;
}

absl::StatusOr<JobView> FleetQueue::GetJob(int64_t id, bool with_results) {
  ASSIGN_OR_RETURN(
      pg::Result job,
      conn().Exec("SELECT state, kind, owner, error, platform, power_mode, "
                  "interactive, (extract(epoch FROM created) * 1000)::bigint "
                  "FROM irontune.jobs WHERE id = $1",
                  {pg::Param::Int(id)}));
  if (job.rows() == 0) {
    return absl::NotFoundError(absl::StrCat("no fleet job ", id));
  }
  JobView view;
  view.id = id;
  view.state = StateOf(job.Text(0, 0));
  view.kind = std::string(job.Text(0, 1));
  view.owner = std::string(job.Text(0, 2));
  view.error = std::string(job.Text(0, 3));
  view.platform = std::string(job.Text(0, 4));
  view.power_mode = std::string(job.Text(0, 5));
  view.interactive = job.Text(0, 6) == "t";
  ASSIGN_OR_RETURN(view.created_unix_ms, job.Int(0, 7));
  RETURN_IF_ERROR(ReadShards(id, with_results, view));
  return view;
}

absl::Status FleetQueue::ReadShards(int64_t id, bool with_results,
                                    JobView& view) {
  ASSIGN_OR_RETURN(
      pg::Result shards,
      conn().Exec("SELECT state, CASE WHEN $2 THEN result END, "
                  "completed_by, shape_key, attempts, last_error FROM "
                  "irontune.shards WHERE job_id = $1 ORDER BY shard",
                  {pg::Param::Int(id),
                   pg::Param::Text(with_results ? "true" : "false")}));
  for (int i = 0; i < shards.rows(); ++i) {
    const std::string_view state = shards.Text(i, 0);
    view.done += state == "done";
    view.failed += state == "failed";
    view.leased += state == "leased";
    std::string result;
    if (!shards.IsNull(i, 1)) {
      ASSIGN_OR_RETURN(result, shards.Bytes(i, 1));
    }
    view.results.push_back(std::move(result));
    view.completed_by.emplace_back(shards.Text(i, 2));
    view.shape_keys.emplace_back(shards.Text(i, 3));
    view.shard_states.emplace_back(state);
    ASSIGN_OR_RETURN(const int64_t attempts, shards.Int(i, 4));
    view.attempts.push_back(static_cast<int>(attempts));
    view.errors.emplace_back(shards.Text(i, 5));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FleetQueue::GetJobRequest(int64_t id) {
  ASSIGN_OR_RETURN(
      pg::Result job,
      conn().Exec("SELECT request FROM irontune.jobs WHERE id = $1",
                  {pg::Param::Int(id)}));
  if (job.rows() == 0) {
    return absl::NotFoundError(absl::StrCat("no fleet job ", id));
  }
  return job.Bytes(0, 0);
}

absl::StatusOr<std::optional<int64_t>> FleetQueue::FindDoneJob(
    std::string_view request_digest) {
  ASSIGN_OR_RETURN(
      pg::Result found,
      conn().Exec("SELECT max(id) FROM irontune.jobs WHERE request_digest = "
                  "$1 AND state = 'done'",
                  {pg::Param::Text(std::string(request_digest))}));
  if (found.IsNull(0, 0)) return std::nullopt;
  ASSIGN_OR_RETURN(const int64_t id, found.Int(0, 0));
  return id;
}

absl::StatusOr<std::vector<JobLine>> FleetQueue::ListJobs(
    std::string_view owner, int limit) {
  ASSIGN_OR_RETURN(
      pg::Result rows,
      conn().Exec(
          "SELECT j.id, j.state, j.kind, j.owner, (extract(epoch FROM "
          "j.created) * 1000)::bigint, count(s.shard), count(s.shard) FILTER "
          "(WHERE s.state = 'done') FROM irontune.jobs j LEFT JOIN "
          "irontune.shards s ON s.job_id = j.id WHERE $1 = '' OR j.owner = $1 "
          "GROUP BY j.id ORDER BY j.id DESC LIMIT $2",
          {pg::Param::Text(std::string(owner)), pg::Param::Int(limit)}));
  std::vector<JobLine> lines(rows.rows());
  for (int i = 0; i < rows.rows(); ++i) {
    JobLine& line = lines[i];
    ASSIGN_OR_RETURN(line.id, rows.Int(i, 0));
    line.state = StateOf(rows.Text(i, 1));
    line.kind = std::string(rows.Text(i, 2));
    line.owner = std::string(rows.Text(i, 3));
    ASSIGN_OR_RETURN(line.created_unix_ms, rows.Int(i, 4));
    ASSIGN_OR_RETURN(const int64_t shards, rows.Int(i, 5));
    ASSIGN_OR_RETURN(const int64_t done, rows.Int(i, 6));
    line.shards = static_cast<int>(shards);
    line.done = static_cast<int>(done);
  }
  return lines;
}

}  // namespace irontune
