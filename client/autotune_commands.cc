#include "client/autotune_commands.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/job_flags.h"
#include "client/progress.h"
#include "client/remote.h"
#include "client/render.h"
#include "client/rpc.h"
#include "common/profile.h"
#include "common/recording.h"

namespace irontune {
namespace {

struct SubmitFlags {
  std::string model;
  std::string profile;
  bool write = false;
  bool check = false;
  bool detach = false;
  bool json = false;
  JobFlags job;
};

bool DiffIsEmpty(const v1::ProfileDiff& diff) {
  return diff.added().empty() && diff.changed().empty() &&
         diff.removed().empty();
}

// Prints a finished autotune's result (the diff table and summary, or
// JSON) and writes the profile to `write_path` if given. Returns the exit
// code (OK: kExitOk; a failed write: kExitError).
int ShowResult(const CommandContext& ctx, const std::string& job_id,
               const v1::AutotuneResult& result, bool changed, bool json,
               const std::string& write_path) {
  if (json) {
    ctx.io.out << AutotuneResultJson(job_id, result, changed);
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

ProgressStyle StyleFor(const CommandContext& ctx) {
  return ctx.env.err_is_terminal ? ProgressStyle::kBar : ProgressStyle::kLines;
}

int RunSubmit(const CommandContext& ctx, const SubmitFlags& f) {
  if ((f.write || f.check) && f.profile.empty()) {
    return UsageError(ctx.io.err, "--write and --check need --profile");
  }
  if (f.detach && (f.write || f.check)) {
    return UsageError(ctx.io.err,
                      "--detach returns at once: it cannot --write or "
                      "--check; use `result JOB --write P` later");
  }
  absl::StatusOr<v1::Calls> calls = LoadRecording(f.model);
  if (!calls.ok()) return Fail(ctx.io.err, calls.status());
  Profile given;
  if (!f.profile.empty()) {
    absl::StatusOr<Profile> loaded = Profile::Load(f.profile);
    if (loaded.ok()) {
      given = *std::move(loaded);
    } else if (absl::IsNotFound(loaded.status()) && f.write) {
      ctx.io.err << "irontune-client: " << f.profile
                 << " does not exist yet; starting from an empty profile\n";
    } else {
      return Fail(ctx.io.err, loaded.status());
    }
  }

  v1::AutotuneRequest request;
  *request.mutable_calls() = *std::move(calls);
  *request.mutable_profile() = given.proto();
  ApplyJobFlags(f.job, ctx.env, &request);
  request.set_detach(f.detach);

  const std::string server = ResolveServer(ctx.remote.server, ctx.env.server);
  std::unique_ptr<TunerConnection> tuner = ConnectTuner(server);

  if (f.detach) {
    std::string job_id;
    absl::Status s = tuner->Autotune(
        request, ResolveTimeout(ctx.remote.timeout_s, kDetachTimeoutS),
        [&](const v1::AutotuneEvent& e) {
          job_id = e.job_id();
          return job_id.empty();  // stop at the first event naming the job
        });
    if (!s.ok()) return FailRpc(ctx.io.err, s, server);
    if (job_id.empty()) {
      return Fail(ctx.io.err, absl::InternalError("irontuned sent no job id"));
    }
    if (f.json) {
      ctx.io.out << "{\"job_id\": \"" << job_id << "\"}\n";
    } else {
      ctx.io.out << job_id << "\n";
      ctx.io.err << "detached; follow it with `irontune-client watch " << job_id
                 << "`, fetch it with `irontune-client result " << job_id
                 << "`\n";
    }
    return kExitOk;
  }

  AutotuneProgress progress(ctx.io.err, StyleFor(ctx), ctx.env.terminal_width);
  absl::Status s = tuner->Autotune(
      request, ResolveTimeout(ctx.remote.timeout_s, kAutotuneTimeoutS),
      [&](const v1::AutotuneEvent& e) {
        progress.OnEvent(e);
        return true;
      });
  progress.Finish();
  if (!s.ok()) return FailRpc(ctx.io.err, s, server);
  if (!progress.result().has_value()) {
    return Fail(ctx.io.err, absl::InternalError(absl::StrCat(
                                "irontuned ended job ", progress.job_id(),
                                " without a result")));
  }
  const v1::AutotuneResult& result = *progress.result();
  const bool changed = Profile(result.profile()).ToJson() != given.ToJson();
  int code = ShowResult(ctx, progress.job_id(), result, changed, f.json,
                        f.write ? f.profile : "");
  if (code != kExitOk) return code;
  if (f.check && changed) {
    ctx.io.err << "irontune-client: the tuned profile differs from "
               << f.profile << (f.write ? " (rewritten)" : "") << "\n";
    return kExitProfileChanged;
  }
  return kExitOk;
}

void AddSubmit(CLI::App& app, const CommandContext& ctx) {
  auto* cmd = app.add_subcommand(
      "submit",
      "Tune a model's recorded calls on irontuned: the recording (and "
      "profile) are validated here first, progress streams to stderr, then "
      "the diff against the profile is printed.");
  auto f = std::make_shared<SubmitFlags>();
  cmd->add_option("MODEL", f->model, "the recording: .rec, .txtpb or .json")
      ->required();
  cmd->add_option("--profile", f->profile,
                  "the IRON profile the model was recorded under (default: "
                  "none, an empty profile)");
  cmd->add_flag("--write", f->write,
                "rewrite the --profile file with the tuned profile (created "
                "if missing)");
  cmd->add_flag("--check", f->check,
                "exit 3 if the tuned profile differs from --profile");
  cmd->add_flag("--detach", f->detach,
                "print the job id and return; the job keeps running");
  cmd->add_flag("--json", f->json, "print the result as JSON");
  AddJobFlags(cmd, &f->job);
  cmd->callback(
      [ctx, f] { *ctx.run = [ctx, f] { return RunSubmit(ctx, *f); }; });
}

void AddWatch(CLI::App& app, const CommandContext& ctx) {
  auto* cmd = app.add_subcommand(
      "watch",
      "Follow a job's events (those so far, then the rest) and print its "
      "result.");
  auto job = std::make_shared<std::string>();
  auto write = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("JOB", *job, "the job id")->required();
  cmd->add_option("--write", *write, "write the tuned profile to this file");
  cmd->add_flag("--json", *json, "print the result as JSON");
  cmd->callback([=] {
    *ctx.run = [=]() -> int {
      const std::string server =
          ResolveServer(ctx.remote.server, ctx.env.server);
      std::unique_ptr<TunerConnection> tuner = ConnectTuner(server);
      AutotuneProgress progress(ctx.io.err, StyleFor(ctx),
                                ctx.env.terminal_width);
      v1::WatchRequest request;
      request.set_job_id(*job);
      absl::Status s = tuner->Watch(
          request, ResolveTimeout(ctx.remote.timeout_s, kAutotuneTimeoutS),
          [&](const v1::AutotuneEvent& e) {
            progress.OnEvent(e);
            return true;
          });
      progress.Finish();
      if (!s.ok()) return FailRpc(ctx.io.err, s, server);
      if (!progress.result().has_value()) {
        return Fail(ctx.io.err, absl::InternalError(
                                    absl::StrCat("job ", *job,
                                                 " ended without a result; see "
                                                 "`irontune-client result ",
                                                 *job, "`")));
      }
      return ShowResult(ctx, *job, *progress.result(),
                        !DiffIsEmpty(progress.result()->diff()), *json, *write);
    };
  });
}

void AddResult(CLI::App& app, const CommandContext& ctx) {
  auto* cmd = app.add_subcommand(
      "result",
      "Print a finished job's result: an autotune's diff (and, with "
      "--write, its profile), a measurement's table.");
  auto job = std::make_shared<std::string>();
  auto write = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("JOB", *job, "the job id")->required();
  cmd->add_option("--write", *write,
                  "write an autotune job's tuned profile to this file");
  cmd->add_flag("--json", *json, "print the result as JSON");
  cmd->callback([=] {
    *ctx.run = [=]() -> int {
      const std::string server =
          ResolveServer(ctx.remote.server, ctx.env.server);
      std::unique_ptr<TunerConnection> tuner = ConnectTuner(server);
      v1::GetResultRequest request;
      request.set_job_id(*job);
      absl::StatusOr<v1::JobResult> r = tuner->GetResult(
          request, ResolveTimeout(ctx.remote.timeout_s, kUnaryTimeoutS));
      if (!r.ok()) return FailRpc(ctx.io.err, r.status(), server);
      const int64_t now = absl::ToUnixMillis(absl::Now());
      if (r->has_autotune()) {
        if (!*json) ctx.io.out << RenderJob(r->summary(), now) << "\n";
        return ShowResult(ctx, *job, r->autotune(),
                          !DiffIsEmpty(r->autotune().diff()), *json, *write);
      }
      if (!write->empty()) {
        return Fail(ctx.io.err,
                    absl::FailedPreconditionError(absl::StrCat(
                        "job ", *job, " has no tuned profile to write (",
                        std::string(JobStateName(r->summary().state())), ")")));
      }
      if (*json) {
        ctx.io.out << MessageJson(*r) << "\n";
      } else {
        ctx.io.out << RenderJob(r->summary(), now);
        if (r->has_measure()) {
          ctx.io.out << "\n" << RenderMeasureResult(r->measure());
        }
      }
      const v1::JobState state = r->summary().state();
      return state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED
                 ? kExitError
                 : kExitOk;
    };
  });
}

}  // namespace

void AddAutotuneCommands(CLI::App& app, const CommandContext& ctx) {
  AddSubmit(app, ctx);
  AddWatch(app, ctx);
  AddResult(app, ctx);
}

}  // namespace irontune
