#include "client/autotune_commands.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/job_flags.h"
#include "client/progress.h"
#include "client/remote.h"
#include "client/render.h"
#include "client/rpc.h"
#include "common/profile.h"
#include "common/profile_diff.h"
#include "common/recording.h"

namespace irontune {
namespace {

bool DiffIsEmpty(const v1::ProfileDiff& diff) {
  return diff.added().empty() && diff.changed().empty() &&
         diff.removed().empty();
}

// Prints a finished autotune's result (the diff table and summary, or
// JSON, with `check_json`, CheckJson's text, where given) and writes the
// profile to `write_path` if given. Returns the exit
// code (OK: kExitOk; a failed write: kExitError).
int ShowResult(const CommandContext& ctx, const std::string& job_id,
               const v1::AutotuneResult& result, bool changed, bool json,
               const std::string& write_path,
               const std::string& check_json = "") {
  if (json) {
    ctx.io.out << AutotuneResultJson(job_id, result, changed, check_json);
  } else {
    ctx.io.out << RenderDiffTable(result.diff())
               << RenderDiffSummary(result.diff(), result.has_stats()
                                                       ? &result.stats()
                                                       : nullptr);
  }
  if (!write_path.empty()) {
    if (absl::Status s = Profile(result.profile()).Save(write_path); !s.ok()) {
      return Fail(ctx.io.err, s);
    }
    ctx.io.err << "wrote " << write_path << "\n";
  }
  return kExitOk;
}

// An autotune job as its event stream ended.
struct Finished {
  std::string job_id;
  v1::AutotuneResult result;
};

// Autotune or Watch.
template <typename Request>
using AutotuneStream = absl::Status (TunerConnection::*)(
    const Request& request, double timeout_s,
    const EventCallback<v1::AutotuneEvent>& on_event);

// Follows an autotune job through `stream` with `request`, showing its
// events on stderr as progress. Returns the job's id and result; nullopt,
// after printing why, when the call fails or the stream ends without a
// result (`no_result(job_id)` is then the message).
template <typename Request>
std::optional<Finished> Follow(
    const CommandContext& ctx, AutotuneStream<Request> stream,
    const Request& request,
    const std::function<std::string(const std::string&)>& no_result) {
  const Daemon daemon(ctx, kAutotuneTimeoutS);
  AutotuneProgress progress(
      ctx.io.err,
      ctx.env.err_is_terminal ? ProgressStyle::kBar : ProgressStyle::kLines,
      ctx.env.terminal_width);
  absl::Status s = (daemon.tuner().*stream)(request, daemon.timeout_s(),
                                            [&](const v1::AutotuneEvent& e) {
                                              progress.OnEvent(e);
                                              return true;
                                            });
  progress.Finish();
  if (!s.ok()) {
    daemon.FailJob(s, progress.job_id());
    return std::nullopt;
  }
  if (!progress.result().has_value()) {
    Fail(ctx.io.err, absl::InternalError(no_result(progress.job_id())));
    return std::nullopt;
  }
  return Finished{progress.job_id(), *progress.result()};
}

struct SubmitCommand {
  static constexpr char kName[] = "submit";
  std::string model;
  std::string profile;
  bool write = false;
  bool check = false;
  bool detach = false;
  bool json = false;
  std::string check_min_gain;  // as given; "" for the default
  JobFlags job;

  void Bind(CLI::App& cmd) {
    AddModelArg(cmd, &model);
    cmd.add_option("--profile", profile,
                   "the IRON profile the model was recorded under (default: "
                   "none, an empty profile)");
    const struct {
      const char* name;
      bool* value;
      const char* help;
    } switches[] = {
        {"--write", &write,
         "rewrite the --profile file with the tuned profile (created if "
         "missing)"},
        {"--check", &check,
         "exit 3 if the tuned profile differs from --profile in an entry "
         "whose gain over the model's calls clears --check-min-gain"},
        {"--detach", &detach,
         "print the job id and return; the job keeps running"},
    };
    for (const auto& f : switches) cmd.add_flag(f.name, *f.value, f.help);
    cmd.add_option(
        "--check-min-gain", check_min_gain,
        absl::StrCat("with --check, the least gain of a changed entry, "
                     "weighted over the model's calls and less 2 of its "
                     "noises, that fails the check: a share of the model's "
                     "time per pass (0.1% or 0.001) or microseconds per pass "
                     "(25us); every entry that moved is listed either way "
                     "(default: ",
                     CheckMinGainText(kDefaultCheckMinGain), ")"));
    AddJsonFlag(cmd, &json, "print the result as JSON");
    AddJobFlags(cmd, &job);
  }

  int Run(const CommandContext& ctx) const {
    if (std::string conflict = FlagConflict(); !conflict.empty()) {
      return UsageError(ctx.io.err, conflict);
    }
    absl::StatusOr<CheckMinGain> min_gain = MinGain();
    if (!min_gain.ok()) {
      return UsageError(ctx.io.err, std::string(min_gain.status().message()));
    }
    absl::StatusOr<v1::Calls> calls = LoadRecording(model);
    if (!calls.ok()) return Fail(ctx.io.err, calls.status());
    absl::StatusOr<Profile> given = LoadProfile(ctx.io.err);
    if (!given.ok()) return Fail(ctx.io.err, given.status());
    v1::AutotuneRequest request;
    *request.mutable_calls() = *std::move(calls);
    *request.mutable_profile() = given->proto();
    ApplyJobFlags(job, ctx.env, &request);
    request.set_detach(detach);
    return detach ? RunDetached(ctx, request)
                  : RunAttached(ctx, request, *given, *min_gain);
  }

  // --check-min-gain as given, else the default.
  absl::StatusOr<CheckMinGain> MinGain() const {
    if (check_min_gain.empty()) return kDefaultCheckMinGain;
    return ParseCheckMinGain(check_min_gain);
  }

  // Why the flags cannot go together; empty if they can.
  std::string FlagConflict() const {
    if ((write || check) && profile.empty()) {
      return "--write and --check need --profile";
    }
    if (!check_min_gain.empty() && !check) {
      return "--check-min-gain needs --check";
    }
    if (detach && (write || check)) {
      return "--detach returns at once: it cannot --write or --check; use "
             "`result JOB --write P` later";
    }
    return "";
  }

  // The --profile to tune from: empty if none is given, or if it does not
  // exist yet and --write will create it (said on `err`).
  absl::StatusOr<Profile> LoadProfile(std::ostream& err) const {
    if (profile.empty()) return Profile();
    absl::StatusOr<Profile> loaded = Profile::Load(profile);
    if (loaded.ok() || !absl::IsNotFound(loaded.status()) || !write) {
      return loaded;
    }
    err << "irontune-client: " << profile
        << " does not exist yet; starting from an empty profile\n";
    return Profile();
  }

  // Submits the job and prints its id as soon as the daemon names it.
  int RunDetached(const CommandContext& ctx,
                  const v1::AutotuneRequest& request) const {
    const Daemon daemon(ctx, kDetachTimeoutS);
    std::string job_id;
    absl::Status s = daemon.tuner().Autotune(
        request, daemon.timeout_s(), [&](const v1::AutotuneEvent& e) {
          job_id = e.job_id();
          return job_id.empty();  // stop at the first event naming the job
        });
    if (!s.ok()) return daemon.Fail(s);
    if (job_id.empty()) {
      return Fail(ctx.io.err, absl::InternalError("irontuned sent no job id"));
    }
    if (json) {
      ctx.io.out << "{\"job_id\": \"" << job_id << "\"}\n";
    } else {
      ctx.io.out << job_id << "\n";
      ctx.io.err << "detached; follow it with `irontune-client watch " << job_id
                 << "`, fetch it with `irontune-client result " << job_id
                 << "`\n";
    }
    return kExitOk;
  }

  // Submits the job, follows it to its result, and shows (and with --write
  // saves) the result; with --check, a change that clears `min_gain`
  // (WeighCheck) is kExitProfileChanged.
  int RunAttached(const CommandContext& ctx, const v1::AutotuneRequest& request,
                  const Profile& given, const CheckMinGain& min_gain) const {
    std::optional<Finished> done = Follow(
        ctx, &TunerConnection::Autotune, request, [](const std::string& id) {
          return absl::StrCat("irontuned ended job ", id, " without a result");
        });
    if (!done.has_value()) return kExitError;
    const bool changed =
        Profile(done->result.profile()).ToJson() != given.ToJson();
    const v1::ProfileDiff& diff = done->result.diff();
    const CheckVerdict verdict = WeighCheck(diff, min_gain);
    const std::string check_json =
        check && json ? CheckJson(diff, verdict, min_gain) : "";
    if (int code = ShowResult(ctx, done->job_id, done->result, changed, json,
                              write ? profile : "", check_json);
        code != kExitOk) {
      return code;
    }
    if (!check || !changed) return kExitOk;
    return Checked(ctx, diff, verdict, min_gain);
  }

  // The end of --check where the tuned profile differs from --profile:
  // the verdict on standard error; kExitProfileChanged where it fails.
  int Checked(const CommandContext& ctx, const v1::ProfileDiff& diff,
              const CheckVerdict& verdict, const CheckMinGain& min_gain) const {
    ctx.io.err << RenderCheck(diff, verdict, min_gain);
    ctx.io.err << "irontune-client: the tuned profile differs from " << profile
               << (write ? " (rewritten)" : "");
    if (verdict.fails) {
      ctx.io.err << "\n";
      return kExitProfileChanged;
    }
    ctx.io.err << ", but no entry's gain clears --check-min-gain "
               << CheckMinGainText(min_gain) << ": the check passes\n";
    return kExitOk;
  }
};

// JOB, --write and --json: the flags of the commands that show a job's
// result.
struct JobResultFlags {
  std::string job;
  std::string write;
  bool json = false;

  // `write_help` says what --write writes.
  void Bind(CLI::App& cmd, const std::string& write_help) {
    AddJobArg(cmd, &job);
    cmd.add_option("--write", write, write_help);
    AddJsonFlag(cmd, &json, "print the result as JSON");
  }
};

struct WatchCommand : JobResultFlags {
  static constexpr char kName[] = "watch";

  void Bind(CLI::App& cmd) {
    JobResultFlags::Bind(cmd, "write the tuned profile to this file");
  }

  int Run(const CommandContext& ctx) const {
    v1::WatchRequest request;
    request.set_job_id(job);
    std::optional<Finished> done =
        Follow(ctx, &TunerConnection::Watch, request, [&](const std::string&) {
          return absl::StrCat("job ", job,
                              " ended without a result; see "
                              "`irontune-client result ",
                              job, "`");
        });
    if (!done.has_value()) return kExitError;
    return ShowResult(ctx, job, done->result, !DiffIsEmpty(done->result.diff()),
                      json, write);
  }
};

struct ResultCommand : JobResultFlags {
  static constexpr char kName[] = "result";

  void Bind(CLI::App& cmd) {
    JobResultFlags::Bind(cmd,
                         "write an autotune job's tuned profile to this file");
  }

  int Run(const CommandContext& ctx) const {
    v1::GetResultRequest request;
    request.set_job_id(job);
    const Daemon daemon(ctx, kUnaryTimeoutS);
    absl::StatusOr<v1::JobResult> r =
        daemon.tuner().GetResult(request, daemon.timeout_s());
    if (!r.ok()) return daemon.Fail(r.status());
    const int64_t now = absl::ToUnixMillis(absl::Now());
    if (r->has_autotune()) {
      if (!json) ctx.io.out << RenderJob(r->summary(), now) << "\n";
      return ShowResult(ctx, job, r->autotune(),
                        !DiffIsEmpty(r->autotune().diff()), json, write);
    }
    return ShowOther(ctx, *r, now);
  }

  // A measurement's or a failed job's result; kExitError for a job that
  // failed or was cancelled.
  int ShowOther(const CommandContext& ctx, const v1::JobResult& r,
                int64_t now) const {
    if (!write.empty()) {
      return Fail(ctx.io.err,
                  absl::FailedPreconditionError(absl::StrCat(
                      "job ", job, " has no tuned profile to write (",
                      std::string(JobStateName(r.summary().state())), ")")));
    }
    if (json) {
      ctx.io.out << MessageJson(r) << "\n";
    } else {
      ctx.io.out << RenderJob(r.summary(), now);
      if (r.has_measure()) {
        ctx.io.out << "\n" << RenderMeasureResult(r.measure());
      }
    }
    const v1::JobState state = r.summary().state();
    return state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED ||
                   state == v1::JOB_STATE_INTERRUPTED
               ? kExitError
               : kExitOk;
  }
};

}  // namespace

void AddAutotuneCommands(CLI::App& app, const CommandContext& ctx) {
  AddCommands<SubmitCommand, WatchCommand, ResultCommand>(app, ctx);
}

}  // namespace irontune
