#include "daemon/scheduler/fleet_front.h"

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "daemon/scheduler/fleet_jobs.h"

namespace irontune {
namespace {

// How long a follower waits for a notice before it reads its job anyway,
// and how often it looks whether its caller is still there meanwhile.
constexpr absl::Duration kReread = absl::Seconds(1);
constexpr absl::Duration kStopPoll = absl::Milliseconds(100);
// Submits retried when the identical live job they would join ended
// between the two statements (FleetQueue::SubmitJob's Aborted).
constexpr int kSubmitTries = 3;

std::string KnownNames() {
  std::vector<std::string> names;
  for (const KnownPlatform& k : KnownPlatforms()) {
    const std::string name(k.name);
    names.push_back(std::string(absl::StripPrefix(name, "NPU ")));
  }
  return absl::StrJoin(names, ", ");
}

bool IsGeneration(const std::string& slug) {
  for (const KnownPlatform& k : KnownPlatforms()) {
    if (k.generation == slug) return true;
  }
  return false;
}

// The known platform `asked` names (not by generation), if any.
const KnownPlatform* FindPlatform(std::string_view asked) {
  for (const KnownPlatform& k : KnownPlatforms()) {
    Platform p;
    p.name = std::string(k.name);
    if (PlatformAnswersTo(p, asked)) return &k;
  }
  return nullptr;
}

bool Ended(FleetJobState state) {
  return state == FleetJobState::kDone || state == FleetJobState::kFailed ||
         state == FleetJobState::kCancelled;
}

// What a follower has already told its caller of a job.
struct Told {
  bool queued = false;
  bool started = false;
  std::vector<std::string> states;
  std::vector<int> attempts;
};

v1::AutotuneEvent LogEvent(std::string text) {
  v1::AutotuneEvent e;
  e.mutable_log()->set_text(std::move(text));
  return e;
}

std::string ShardName(const JobView& view, size_t i) {
  return absl::StrCat("shard ", i + 1, "/", view.shape_keys.size(), " (",
                      view.shape_keys[i], ")");
}

// The events `view` adds to what `told` says was sent; updates `told`.
std::vector<v1::AutotuneEvent> NewEvents(const JobView& view, Told& told) {
  std::vector<v1::AutotuneEvent> out;
  const size_t n = view.shape_keys.size();
  if (!told.queued) {
    told.queued = true;
    told.states.assign(n, "queued");
    told.attempts.assign(n, 0);
    out.emplace_back().mutable_queued()->set_position(0);
  }
  if (!told.started && view.state != FleetJobState::kQueued) {
    told.started = true;
    out.emplace_back().mutable_started();
  }
  for (size_t i = 0; i < n && i < told.states.size(); ++i) {
    // One line per attempt after the first, also for those begun and
    // ended between two reads; only the last one's error is kept.
    for (int a = std::max(told.attempts[i] + 1, 2); a <= view.attempts[i];
         ++a) {
      const bool last = a == view.attempts[i] && !view.errors[i].empty();
      out.push_back(
          LogEvent(absl::StrCat(ShardName(view, i), ": attempt ", a,
                                "; the one before ended without a result",
                                last ? ": " : "", last ? view.errors[i] : "")));
    }
    if (told.states[i] != "done" && view.shard_states[i] == "done") {
      v1::AutotuneEvent& e = out.emplace_back();
      v1::ShapeProgress* p = e.mutable_progress();
      p->set_index(static_cast<uint32_t>(i));
      p->set_total(static_cast<uint32_t>(n));
      p->set_shape(view.shape_keys[i]);
      p->set_done(static_cast<uint32_t>(view.done));
      out.push_back(LogEvent(
          absl::StrCat(ShardName(view, i), " done by ", view.completed_by[i])));
    }
    told.states[i] = view.shard_states[i];
    told.attempts[i] = view.attempts[i];
  }
  return out;
}

// The job's result from its shards' (AssembleResult).
absl::StatusOr<v1::AutotuneResult> Assemble(const JobView& view,
                                            const std::string& request_bytes) {
  v1::AutotuneRequest request;
  if (!request.ParseFromString(request_bytes)) {
    return absl::DataLossError(
        absl::StrCat("fleet job ", view.id, ": its request does not parse"));
  }
  std::vector<ShardOutcomeView> shards(view.shape_keys.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    shards[i].shape_key = view.shape_keys[i];
    if (view.shard_states[i] != "done") continue;
    v1::JobResult result;
    if (!result.ParseFromString(view.results[i])) {
      return absl::DataLossError(absl::StrCat("fleet job ", view.id, ": ",
                                              ShardName(view, i),
                                              "'s result does not parse"));
    }
    shards[i].result = std::move(result);
  }
  const std::string why = view.error.empty()
                              ? std::string(FleetJobStateName(view.state))
                              : view.error;
  return AssembleResult(request, shards, why);
}

absl::Status EndStatus(const JobView& view) {
  switch (view.state) {
    case FleetJobState::kDone:
      return absl::OkStatus();
    case FleetJobState::kCancelled:
      return absl::CancelledError(
          absl::StrCat("fleet job ", FleetJobName(view.id), " was cancelled"));
    default:
      return absl::AbortedError(absl::StrCat(
          "fleet job ", FleetJobName(view.id), " failed: ", view.error));
  }
}

}  // namespace

std::string FleetJobName(int64_t id) { return absl::StrCat("f-", id); }

std::optional<int64_t> ParseFleetJobName(std::string_view name) {
  absl::string_view rest(name.data(), name.size());
  if (!absl::ConsumePrefix(&rest, "f-") || rest.empty() || rest.size() > 18) {
    return std::nullopt;
  }
  int64_t id = 0;
  for (char c : rest) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  if (!absl::SimpleAtoi(rest, &id) || id <= 0) return std::nullopt;
  return id;
}

v1::JobState WireStateOf(FleetJobState state) {
  switch (state) {
    case FleetJobState::kQueued:
      return v1::JOB_STATE_QUEUED;
    case FleetJobState::kRunning:
      return v1::JOB_STATE_RUNNING;
    case FleetJobState::kDone:
      return v1::JOB_STATE_SUCCEEDED;
    case FleetJobState::kCancelled:
      return v1::JOB_STATE_CANCELLED;
    case FleetJobState::kFailed:
      break;
  }
  return v1::JOB_STATE_FAILED;
}

v1::JobSummary SummaryOf(const JobView& view) {
  v1::JobSummary s;
  s.set_job_id(FleetJobName(view.id));
  s.set_kind(v1::JOB_KIND_AUTOTUNE);
  s.set_client(view.owner);
  s.set_priority(view.interactive ? v1::PRIORITY_INTERACTIVE
                                  : v1::PRIORITY_BATCH);
  s.set_state(WireStateOf(view.state));
  s.set_submitted_unix_ms(view.created_unix_ms);
  s.set_shapes_done(static_cast<uint32_t>(view.done));
  s.set_shapes_total(static_cast<uint32_t>(view.shape_keys.size()));
  s.set_detached(true);  // no client holds a fleet job (see the header)
  if (view.state != FleetJobState::kDone) s.set_error(view.error);
  return s;
}

absl::StatusOr<FleetPlatforms> FleetPlatforms::Parse(
    const std::vector<std::string>& entries) {
  FleetPlatforms out;
  for (const std::string& entry : entries) {
    const size_t eq = entry.find('=');
    const auto bad = [&entry](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat("--fleet-platform ", entry, ": ", why,
                       " (GEN=PLATFORM, e.g. npu2=strix)"));
    };
    if (eq == std::string::npos) return bad("no '='");
    const std::string generation = PlatformSlug(entry.substr(0, eq));
    if (!IsGeneration(generation)) return bad("not a generation (npu1, npu2)");
    const KnownPlatform* platform = FindPlatform(entry.substr(eq + 1));
    if (platform == nullptr) {
      return bad(absl::StrCat("an unknown platform; known: ", KnownNames()));
    }
    if (platform->generation != generation) {
      return bad(absl::StrCat(std::string(platform->name), " is ",
                              std::string(platform->generation)));
    }
    if (!out.by_generation_.emplace(generation, PlatformSlug(platform->name))
             .second) {
      return bad("that generation is mapped twice");
    }
  }
  return out;
}

absl::StatusOr<FleetTarget> FleetPlatforms::Resolve(
    std::string_view platform, std::string_view power_mode) const {
  FleetTarget target;
  const std::string slug = PlatformSlug(platform);
  if (slug.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "platform: a fleet's front has no NPU of its own; name the one the "
        "job must run on (irontune-client --platform), one of ",
        KnownNames()));
  }
  if (IsGeneration(slug)) {
    auto it = by_generation_.find(slug);
    if (it == by_generation_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("platform: ", slug,
                       " is a generation several platforms share and "
                       "this fleet maps to none (--fleet-platform ",
                       slug, "=PLATFORM); name a platform instead"));
    }
    target.platform = it->second;
  } else if (const KnownPlatform* known = FindPlatform(platform)) {
    target.platform = PlatformSlug(known->name);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("platform: unknown NPU \"", slug,
                     "\"; known: ", KnownNames(), ", or a generation"));
  }
  if (!power_mode.empty()) {
    absl::StatusOr<PowerMode> mode = ParsePowerMode(power_mode);
    if (!mode.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("power_mode: ", mode.status().message()));
    }
    target.power_mode = *mode;
  }
  return target;
}

FleetFront::FleetFront(FleetPool& pool, JobNotices& notices,
                       FleetPlatforms platforms)
    : pool_(pool), notices_(notices), platforms_(std::move(platforms)) {}

template <typename T>
absl::StatusOr<T> FleetFront::WithQueue(
    const std::function<absl::StatusOr<T>(FleetQueue&)>& fn) {
  ASSIGN_OR_RETURN(FleetPool::Handle store, pool_.Acquire());
  FleetQueue queue(*store);
  absl::StatusOr<T> out = fn(queue);
  if (absl::IsUnavailable(out.status())) pool_.MarkDown(out.status());
  return out;
}

absl::StatusOr<FleetTarget> FleetFront::TargetOf(
    const v1::AutotuneRequest& request) const {
  return platforms_.Resolve(request.platform(), request.power_mode());
}

absl::StatusOr<FrontSubmit> FleetFront::Submit(
    const v1::AutotuneRequest& request, const std::string& owner,
    const FleetTarget& target) {
  ASSIGN_OR_RETURN(const NewJob job, FleetJobOf(request, owner, target.platform,
                                                target.power_mode));
  return WithQueue<FrontSubmit>(
      [&](FleetQueue& queue) -> absl::StatusOr<FrontSubmit> {
        absl::Status last;
        for (int i = 0; i < kSubmitTries; ++i) {
          if (!request.remeasure()) {
            ASSIGN_OR_RETURN(const std::optional<int64_t> done,
                             queue.FindDoneJob(job.request_digest));
            if (done.has_value()) return FrontSubmit{*done, false, true};
          }
          absl::StatusOr<JobTicket> ticket = queue.SubmitJob(job);
          if (ticket.ok()) return FrontSubmit{ticket->id, ticket->attached};
          last = ticket.status();
          if (!absl::IsAborted(last)) break;
        }
        return last;
      });
}

absl::StatusOr<JobView> FleetFront::Get(int64_t id) {
  return WithQueue<JobView>(
      [id](FleetQueue& q) { return q.GetJob(id, /*with_results=*/false); });
}

absl::StatusOr<bool> FleetFront::Cancel(int64_t id) {
  return WithQueue<bool>([id](FleetQueue& q) { return q.CancelJob(id); });
}

absl::StatusOr<v1::JobResult> FleetFront::Result(int64_t id) {
  return WithQueue<v1::JobResult>(
      [id](FleetQueue& q) -> absl::StatusOr<v1::JobResult> {
        ASSIGN_OR_RETURN(const JobView view, q.GetJob(id));
        v1::JobResult out;
        *out.mutable_summary() = SummaryOf(view);
        if (!Ended(view.state)) return out;
        ASSIGN_OR_RETURN(const std::string request, q.GetJobRequest(id));
        ASSIGN_OR_RETURN(*out.mutable_autotune(), Assemble(view, request));
        *out.mutable_summary()->mutable_stats() = out.autotune().stats();
        return out;
      });
}

absl::StatusOr<std::vector<v1::JobSummary>> FleetFront::List(
    std::string_view owner, int limit) {
  ASSIGN_OR_RETURN(const std::vector<JobLine> lines,
                   WithQueue<std::vector<JobLine>>([&](FleetQueue& q) {
                     return q.ListJobs(owner, limit);
                   }));
  std::vector<v1::JobSummary> out;
  for (const JobLine& line : lines) {
    v1::JobSummary& s = out.emplace_back();
    s.set_job_id(FleetJobName(line.id));
    s.set_kind(v1::JOB_KIND_AUTOTUNE);
    s.set_client(line.owner);
    s.set_state(WireStateOf(line.state));
    s.set_submitted_unix_ms(line.created_unix_ms);
    s.set_shapes_done(static_cast<uint32_t>(line.done));
    s.set_shapes_total(static_cast<uint32_t>(line.shards));
    s.set_detached(true);
  }
  return out;
}

absl::Status FleetFront::Follow(
    int64_t id, const std::function<bool(const v1::AutotuneEvent&)>& emit,
    const std::function<bool()>& stop) {
  uint64_t seen = notices_.Subscribe(id);
  absl::Cleanup unsubscribe = [this, id] { notices_.Unsubscribe(id); };
  const std::string name = FleetJobName(id);
  const auto send = [&](v1::AutotuneEvent e) {
    e.set_job_id(name);
    return emit(e);
  };
  Told told;
  bool told_down = false;
  while (true) {
    absl::StatusOr<JobView> view = Get(id);
    if (!view.ok() && !absl::IsUnavailable(view.status())) {
      return view.status();
    }
    if (!view.ok() && !told_down &&
        !send(LogEvent(absl::StrCat("the fleet store is unreachable (",
                                    view.status().message(),
                                    "); the job goes on, waiting for it")))) {
      return absl::CancelledError("the client went away");
    }
    told_down = !view.ok();
    if (view.ok()) {
      for (v1::AutotuneEvent& e : NewEvents(*view, told)) {
        if (!send(std::move(e))) {
          return absl::CancelledError("the client went away");
        }
      }
      if (Ended(view->state)) return Finish(*view, send);
    }
    for (absl::Time until = absl::Now() + kReread; absl::Now() < until;) {
      if (stop()) return absl::CancelledError("the client went away");
      if (notices_.WaitForChange(id, &seen, kStopPoll)) break;
    }
  }
}

absl::Status FleetFront::Finish(
    const JobView& view, const std::function<bool(v1::AutotuneEvent)>& send) {
  ASSIGN_OR_RETURN(const v1::JobResult result, Result(view.id));
  v1::AutotuneEvent e;
  *e.mutable_result() = result.autotune();
  if (!send(std::move(e))) return absl::CancelledError("the client went away");
  return EndStatus(view);
}

}  // namespace irontune
