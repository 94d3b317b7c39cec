#include "client/command.h"

#include <CLI/CLI.hpp>
#include <utility>

namespace irontune {

CLI::App* AddCommand(CLI::App& parent, const CommandContext& ctx,
                     const std::string& name, const std::string& description,
                     std::function<int()> run) {
  CLI::App* cmd = parent.add_subcommand(name, description);
  cmd->callback([slot = ctx.run, run = std::move(run)] { *slot = run; });
  return cmd;
}

void AddModelArg(CLI::App& cmd, std::string* value) {
  cmd.add_option("MODEL", *value, "the recording: .rec, .txtpb or .json")
      ->required();
}

void AddJobArg(CLI::App& cmd, std::string* value) {
  cmd.add_option("JOB", *value, "the job id")->required();
}

void AddJsonFlag(CLI::App& cmd, bool* value, const std::string& description) {
  cmd.add_flag("--json", *value, description);
}

int Fail(std::ostream& err, const absl::Status& status) {
  err << "irontune-client: " << status.message() << "\n";
  return kExitError;
}

int UsageError(std::ostream& err, const std::string& message) {
  err << "irontune-client: " << message << "\n"
      << "Run 'irontune-client --help' for usage.\n";
  return kExitUsage;
}

}  // namespace irontune
