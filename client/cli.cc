#include "client/cli.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "client/inspect.h"
#include "common/recording.h"

namespace irontune {
namespace {

constexpr char kExitCodes[] =
    "Exit codes: 0 success, 1 error, 2 usage, 3 profile changed (submit "
    "--check).";

struct Streams {
  std::ostream& out;
  std::ostream& err;
};

// Prints `status` as the client's error line and returns kExitError.
int Fail(const Streams& io, const absl::Status& status) {
  io.err << "irontune-client: " << status.message() << "\n";
  return kExitError;
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

}  // namespace

int RunClient(int argc, const char* const* argv, std::ostream& out,
              std::ostream& err) {
  Streams io{out, err};
  CLI::App app(
      "irontune-client: inspect recordings and talk to irontuned, the NPU "
      "tuning daemon.",
      "irontune-client");
  app.footer(kExitCodes);
  app.require_subcommand(1);
  std::function<int()> run;
  AddInspect(app, io, &run);
  AddConvert(app, io, &run);
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
