#include "client/job_commands.h"

#include <CLI/CLI.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/remote.h"
#include "client/render.h"
#include "client/rpc.h"

namespace irontune {
namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

struct StatusCommand {
  static constexpr char kName[] = "status";
  bool json = false;

  void Bind(CLI::App& cmd) {
    AddJsonFlag(cmd, &json, "print the StatusResponse as JSON");
  }

  int Run(const CommandContext& ctx) const {
    return CallAndPrint(ctx, &TunerConnection::GetStatus,
                        v1::GetStatusRequest(),
                        JsonOr(json, [](const v1::StatusResponse& status) {
                          return RenderStatus(status, NowMs());
                        }));
  }
};

struct JobsCommand {
  static constexpr char kName[] = "jobs";
  uint32_t limit = 0;
  bool json = false;

  void Bind(CLI::App& cmd) {
    cmd.add_option("--limit", limit, "at most this many (default: 50)");
    AddJsonFlag(cmd, &json, "print the ListJobsResponse as JSON");
  }

  int Run(const CommandContext& ctx) const {
    v1::ListJobsRequest request;
    request.set_limit(limit);
    return CallAndPrint(ctx, &TunerConnection::ListJobs, request,
                        JsonOr(json, [](const v1::ListJobsResponse& response) {
                          return RenderJobs(response.jobs(), NowMs());
                        }));
  }
};

struct CancelCommand {
  static constexpr char kName[] = "cancel";
  std::string job;

  void Bind(CLI::App& cmd) { AddJobArg(cmd, &job); }

  int Run(const CommandContext& ctx) const {
    v1::CancelRequest request;
    request.set_job_id(job);
    return CallAndPrint(
        ctx, &TunerConnection::Cancel, request,
        [&](const v1::CancelResponse& response) {
          return absl::StrCat(
              job, " ", std::string(JobStateName(response.state())), "\n");
        });
  }
};

struct HealthCommand {
  static constexpr char kName[] = "health";
  std::string service = "irontune.v1.Tuner";

  void Bind(CLI::App& cmd) {
    cmd.add_option("--service", service,
                   "the service to ask about, \"\" for the whole server "
                   "(default irontune.v1.Tuner)");
  }

  int Run(const CommandContext& ctx) const {
    static constexpr const char* kNames[] = {"UNKNOWN", "SERVING",
                                             "NOT_SERVING", "SERVICE_UNKNOWN"};
    const Daemon daemon(ctx, kUnaryTimeoutS);
    absl::StatusOr<int> status =
        daemon.tuner().Health(service, daemon.timeout_s());
    if (!status.ok()) return daemon.Fail(status.status());
    ctx.io.out << (*status >= 0 && *status <= 3 ? kNames[*status] : "?")
               << "\n";
    return *status == 1 ? kExitOk : kExitError;
  }
};

}  // namespace

void AddJobCommands(CLI::App& app, const CommandContext& ctx) {
  AddCommands<StatusCommand, JobsCommand, CancelCommand, HealthCommand>(app,
                                                                        ctx);
}

}  // namespace irontune
