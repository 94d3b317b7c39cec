#include "client/job_commands.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "client/remote.h"
#include "client/render.h"
#include "client/rpc.h"

namespace irontune {
namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

void AddStatus(CLI::App& app, const CommandContext& ctx) {
  auto* cmd = app.add_subcommand(
      "status",
      "Show the daemon: its device and power mode, the running job, the "
      "queue and the cache.");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print the StatusResponse as JSON");
  cmd->callback([=] {
    *ctx.run = [=]() -> int {
      const std::string server =
          ResolveServer(ctx.remote.server, ctx.env.server);
      absl::StatusOr<v1::StatusResponse> s = ConnectTuner(server)->GetStatus(
          ResolveTimeout(ctx.remote.timeout_s, kUnaryTimeoutS));
      if (!s.ok()) return FailRpc(ctx.io.err, s.status(), server);
      ctx.io.out << (*json ? MessageJson(*s) + "\n"
                           : RenderStatus(*s, NowMs()));
      return kExitOk;
    };
  });
}

void AddJobs(CLI::App& app, const CommandContext& ctx) {
  auto* cmd = app.add_subcommand("jobs",
                                 "List jobs, newest first: queued, running "
                                 "and finished.");
  auto limit = std::make_shared<uint32_t>(0);
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--limit", *limit, "at most this many (default: 50)");
  cmd->add_flag("--json", *json, "print the ListJobsResponse as JSON");
  cmd->callback([=] {
    *ctx.run = [=]() -> int {
      const std::string server =
          ResolveServer(ctx.remote.server, ctx.env.server);
      v1::ListJobsRequest request;
      request.set_limit(*limit);
      absl::StatusOr<v1::ListJobsResponse> r = ConnectTuner(server)->ListJobs(
          request, ResolveTimeout(ctx.remote.timeout_s, kUnaryTimeoutS));
      if (!r.ok()) return FailRpc(ctx.io.err, r.status(), server);
      ctx.io.out << (*json ? MessageJson(*r) + "\n"
                           : RenderJobs(r->jobs(), NowMs()));
      return kExitOk;
    };
  });
}

void AddCancel(CLI::App& app, const CommandContext& ctx) {
  auto* cmd = app.add_subcommand(
      "cancel",
      "Cancel a queued or running job; it stops within a round. Prints the "
      "job's state afterwards.");
  auto job = std::make_shared<std::string>();
  cmd->add_option("JOB", *job, "the job id")->required();
  cmd->callback([=] {
    *ctx.run = [=]() -> int {
      const std::string server =
          ResolveServer(ctx.remote.server, ctx.env.server);
      v1::CancelRequest request;
      request.set_job_id(*job);
      absl::StatusOr<v1::CancelResponse> r = ConnectTuner(server)->Cancel(
          request, ResolveTimeout(ctx.remote.timeout_s, kUnaryTimeoutS));
      if (!r.ok()) return FailRpc(ctx.io.err, r.status(), server);
      ctx.io.out << *job << " " << JobStateName(r->state()) << "\n";
      return kExitOk;
    };
  });
}

}  // namespace

void AddJobCommands(CLI::App& app, const CommandContext& ctx) {
  AddStatus(app, ctx);
  AddJobs(app, ctx);
  AddCancel(app, ctx);
}

}  // namespace irontune
