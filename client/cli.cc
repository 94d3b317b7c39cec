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
    "not given (default unix:/run/irontune/irontuned.sock).\n"
    "Exit codes: 0 success, 1 error, 2 usage, 3 profile changed (submit "
    "--check).";

int Fail(const Streams& io, const absl::Status& status) {
  return irontune::Fail(io.err, status);
}

void AddInspect(CLI::App& app, const Streams& io, std::function<int()>* run) {
  auto* cmd = app.add_subcommand(
      "inspect",
      "Print a recording's calls, its operator shapes and, for each shape, "
      "its tunables, their domain sizes and the size of the setting space.");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("FILE", *path, "a recording: .rec, .txtpb or .json")
      ->required();
  cmd->add_flag("--json", *json, "print machine-readable JSON");
  cmd->callback([=, &io] {
    *run = [=, &io]() -> int {
      absl::StatusOr<v1::Calls> calls = LoadRecording(*path);
      if (!calls.ok()) return Fail(io, calls.status());
      io.out << (*json ? InspectJson(*calls) : InspectText(*calls));
      return kExitOk;
    };
  });
}

void AddConvert(CLI::App& app, const Streams& io, std::function<int()>* run) {
  auto* cmd = app.add_subcommand(
      "convert",
      "Convert a recording between binary (.rec), text (.txtpb) and JSON "
      "(.json), by the files' extensions. The input is validated first.");
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("IN", *in, "the recording to read")->required();
  cmd->add_option("OUT", *out, "the file to write")->required();
  cmd->callback([=, &io] {
    *run = [=, &io]() -> int {
      absl::StatusOr<v1::Calls> calls = LoadRecording(*in);
      if (!calls.ok()) return Fail(io, calls.status());
      if (absl::Status s = SaveRecording(*calls, *out); !s.ok()) {
        return Fail(io, s);
      }
      io.err << "wrote " << *out << "\n";
      return kExitOk;
    };
  });
}

void AddPoints(CLI::App& app, const Streams& io, std::function<int()>* run) {
  auto* cmd = app.add_subcommand(
      "points",
      "Print the contexts a design whose work follows the context is timed "
      "at: at most COUNT contexts halving down from CONTEXT, each a multiple "
      "of UNIT, weighted by the trapezoid rule (the weights sum to 1). Use "
      "them as a recording's points.");
  auto top = std::make_shared<int64_t>(8192);
  auto count = std::make_shared<int>(6);
  auto unit = std::make_shared<int64_t>(1);
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--context", *top, "the longest context (default 8192)");
  cmd->add_option("--count", *count, "at most this many contexts (default 6)");
  cmd->add_option("--unit", *unit,
                  "each context a multiple of this, e.g. the prompt chunk "
                  "(default 1)");
  cmd->add_flag("--json", *json, "print a JSON array of {weight, context}");
  cmd->callback([=, &io] {
    *run = [=, &io]() -> int {
      absl::StatusOr<std::vector<WeightedContext>> points =
          Contexts(*top, *count, *unit);
      if (!points.ok()) return Fail(io, points.status());
      if (*json) {
        io.out << "[";
        for (size_t i = 0; i < points->size(); ++i) {
          io.out << absl::StrFormat("%s{\"weight\": %.17g, \"context\": %d}",
                                    i ? ", " : "", (*points)[i].weight,
                                    (*points)[i].context);
        }
        io.out << "]\n";
      } else {
        io.out << absl::StrFormat("%10s  %s\n", "context", "weight");
        for (const WeightedContext& p : *points) {
          io.out << absl::StrFormat("%10d  %.6f\n", p.context, p.weight);
        }
      }
      return kExitOk;
    };
  });
}

}  // namespace

int Fail(std::ostream& err, const absl::Status& status) {
  err << "irontune-client: " << status.message() << "\n";
  return kExitError;
}

int UsageError(std::ostream& err, const std::string& message) {
  err << "irontune-client: " << message << "\n"
      << "Run 'irontune-client --help' for usage.\n";
  return kExitUsage;
}

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
  std::function<int()> run;
  CommandContext ctx{io, env, remote, &run};
  AddInspect(app, io, &run);
  AddConvert(app, io, &run);
  AddPoints(app, io, &run);
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
    err << "irontune-client: " << e.what() << "\n"
        << "Run 'irontune-client --help' for usage.\n";
    return kExitUsage;
  }
  return run ? run() : kExitUsage;
}

}  // namespace irontune
