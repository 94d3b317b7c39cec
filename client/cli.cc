#include "client/cli.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/autotune_commands.h"
#include "client/cache_commands.h"
#include "client/command.h"
#include "client/inspect.h"
#include "client/job_commands.h"
#include "client/measure_command.h"
#include "client/remote.h"
#include "common/contexts.h"
#include "common/recording.h"

namespace irontune {
namespace {

constexpr char kFooter[] =
    "Environment: IRONTUNE_SERVER is the daemon's address where --server is "
    "not given (default unix:/run/irontune/irontuned.sock); IRONTUNE_TOKEN "
    "the bearer token where --token-file is not given (docs/security.md).\n"
    "A token is sent only over TLS, to a unix socket, or to localhost, "
    "127.0.0.0/8 or [::1]: for any other address give --tls-ca FILE or "
    "--tls, else the command is refused.\n"
    "Exit codes: 0 success, 1 error, 2 usage, 3 profile changed by a gain "
    "that clears --check-min-gain (submit --check).";

struct InspectCommand {
  static constexpr char kName[] = "inspect";
  std::string path;
  bool json = false;

  void Bind(CLI::App& cmd) {
    cmd.add_option("FILE", path, "a recording: .rec, .txtpb or .json")
        ->required();
    AddJsonFlag(cmd, &json, "print machine-readable JSON");
  }

  int Run(const CommandContext& ctx) const {
    absl::StatusOr<v1::Calls> calls = LoadRecording(path);
    if (!calls.ok()) return Fail(ctx.io.err, calls.status());
    ctx.io.out << (json ? InspectJson(*calls) : InspectText(*calls));
    return kExitOk;
  }
};

struct ConvertCommand {
  static constexpr char kName[] = "convert";
  std::string in;
  std::string out;

  void Bind(CLI::App& cmd) {
    cmd.add_option("IN", in, "the recording to read")->required();
    cmd.add_option("OUT", out, "the file to write")->required();
  }

  int Run(const CommandContext& ctx) const {
    absl::StatusOr<v1::Calls> calls = LoadRecording(in);
    if (!calls.ok()) return Fail(ctx.io.err, calls.status());
    if (absl::Status s = SaveRecording(*calls, out); !s.ok()) {
      return Fail(ctx.io.err, s);
    }
    ctx.io.err << "wrote " << out << "\n";
    return kExitOk;
  }
};

struct PointsCommand {
  static constexpr char kName[] = "points";
  int64_t top = 8192;
  int count = 6;
  int64_t unit = 1;
  bool json = false;

  void Bind(CLI::App& cmd) {
    cmd.add_option("--context", top, "the longest context (default 8192)");
    cmd.add_option("--count", count, "at most this many contexts (default 6)");
    cmd.add_option("--unit", unit,
                   "each context a multiple of this, e.g. the prompt chunk "
                   "(default 1)");
    AddJsonFlag(cmd, &json, "print a JSON array of {weight, context}");
  }

  int Run(const CommandContext& ctx) const {
    absl::StatusOr<std::vector<WeightedContext>> points =
        Contexts(top, count, unit);
    if (!points.ok()) return Fail(ctx.io.err, points.status());
    ctx.io.out << (json ? PointsJson(*points) : PointsText(*points));
    return kExitOk;
  }

  // A JSON array of {weight, context}.
  static std::string PointsJson(const std::vector<WeightedContext>& points) {
    std::string out = "[";
    for (size_t i = 0; i < points.size(); ++i) {
      absl::StrAppendFormat(&out, "%s{\"weight\": %.17g, \"context\": %d}",
                            i ? ", " : "", points[i].weight, points[i].context);
    }
    return out + "]\n";
  }

  // A table: context, weight.
  static std::string PointsText(const std::vector<WeightedContext>& points) {
    std::string out = absl::StrFormat("%10s  %s\n", "context", "weight");
    for (const WeightedContext& p : points) {
      absl::StrAppendFormat(&out, "%10d  %.6f\n", p.context, p.weight);
    }
    return out;
  }
};

}  // namespace

int RunClient(int argc, const char* const* argv, std::ostream& out,
              std::ostream& err) {
  return RunClient(argc, argv, out, err, ClientEnvironment());
}

int RunClient(int argc, const char* const* argv, std::ostream& out,
              std::ostream& err, const ClientEnvironment& env) {
  Streams io{out, err};
  RemoteFlags remote;
  CLI::App app(
      "irontune-client: inspect recordings and talk to irontuned, the NPU "
      "tuning daemon.",
      "irontune-client");
  app.footer(kFooter);
  app.require_subcommand(1);
  // The daemon's address and deadline work before or after the command.
  app.fallthrough();
  app.add_option("--server", remote.server,
                 "the daemon: unix:PATH or host:port (default: "
                 "$IRONTUNE_SERVER, else unix:/run/irontune/irontuned.sock)");
  app.add_option("--timeout", remote.timeout_s,
                 "seconds a call may take, 0 for no deadline (default: 10 "
                 "for status, jobs, cancel, result and cache stats; 600 for "
                 "measure; 300 for cache export/import; none for submit and "
                 "watch; 30 for submit --detach)")
      ->check(CLI::NonNegativeNumber);
  AddSecurityFlags(app, &remote);
  std::function<int()> run;
  CommandContext ctx{io, env, remote, &run};
  AddCommands<InspectCommand, ConvertCommand, PointsCommand>(app, ctx);
  AddAutotuneCommands(app, ctx);
  AddMeasureCommand(app, ctx);
  AddJobCommands(app, ctx);
  AddCacheCommands(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // A subcommand's --help arrives as CallForHelp from the subcommand.
    return UsageError(err, e.what());
  }
  return run ? run() : kExitUsage;
}

}  // namespace irontune
