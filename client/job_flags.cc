#include "client/job_flags.h"

#include <CLI/CLI.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "common/power_modes.h"

namespace irontune {
namespace {

// "`what` (default `value`)", as --help says it.
template <typename T>
std::string WithDefault(absl::string_view what, T value) {
  return absl::StrCat(what, " (default ", value, ")");
}

// Who asks and how urgently.
void AddRequesterFlags(CLI::App& cmd, JobFlags* f) {
  cmd.add_option("--priority", f->priority,
                 "interactive (default) or batch (CI: runs after every "
                 "interactive job)")
      ->check(CLI::IsMember({"interactive", "batch"}));
  cmd.add_option("--client", f->client,
                 "who asks, for fairness and logs (default: $USER)");
}

// Where the job runs: the generation or platform, not a box.
void AddTargetFlags(CLI::App& cmd, JobFlags* f) {
  cmd.add_option("--platform", f->platform,
                 "the NPU the job must run on: a platform (strix, \"NPU "
                 "Strix\") or a generation (npu2); a daemon whose NPU it does "
                 "not name refuses the job (default: the daemon's NPU)")
      ->type_name("PLATFORM");
  cmd.add_option("--power-mode", f->power_mode,
                 "the power mode the job must be timed at (default: the "
                 "NPU's present mode)")
      ->check(CLI::IsMember(PowerModeNameList()));
}

// How long to time: IRON's Timing and the runlist length, each 0 (the
// daemon's default, quoted from common/defaults.h) unless given.
void AddTimingFlags(CLI::App& cmd, JobFlags* f) {
  cmd.add_option("--rounds", f->rounds,
                 WithDefault("interleaved rounds", kDefaultRounds));
  cmd.add_option("--calls", f->calls,
                 WithDefault("runs per round", kDefaultCalls));
  cmd.add_option(
      "--settle", f->settle,
      WithDefault("rounds before slow settings are cut", kDefaultSettle));
  cmd.add_option("--cutoff", f->cutoff,
                 WithDefault("cut settings slower than this times the fastest",
                             kDefaultCutoff));
  cmd.add_option("--repeats", f->repeats,
                 WithDefault("steps in the many-step run", kDefaultRepeats));
}

// How the designs are built and fed, and whether the cache may answer.
void AddRunFlags(CLI::App& cmd, JobFlags* f) {
  cmd.add_option("--packaging", f->packaging,
                 "full-elf or xclbin-chain (default: full ELF where the NPU "
                 "has it)")
      ->check(CLI::IsMember({"full-elf", "xclbin-chain"}));
  cmd.add_option("--seed", f->seed, "seed of the inputs (default 0)");
  cmd.add_flag("--remeasure", f->remeasure,
               "time every setting again instead of using the cache");
}

}  // namespace

void AddJobFlags(CLI::App& cmd, JobFlags* f) {
  AddRequesterFlags(cmd, f);
  AddTargetFlags(cmd, f);
  AddTimingFlags(cmd, f);
  AddRunFlags(cmd, f);
  if (cmd.get_name() == "submit") {
    cmd.add_option("--min-gain", f->min_gain,
                   "the least gain, as a share of the step time, for which a "
                   "setting replaces the one the profile runs (default 0.005)")
        ->check(CLI::Range(0.0, 1.0));
    cmd.add_option("--budget", f->budget,
                   "cap the job's device time, e.g. 90s, 15m, 1h: the shapes "
                   "with the most weighted time are tuned first, and those "
                   "not begun when it is spent keep their entries and are "
                   "listed as untuned (default: no cap)")
        ->type_name("DURATION")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              absl::StatusOr<double> s = ParseBudget(text);
              // CLI11 names the flag itself.
              return s.ok() ? ""
                            : std::string(absl::StripPrefix(
                                  s.status().message(), "--budget: "));
            },
            ""));
  }
}

absl::StatusOr<double> ParseBudget(const std::string& text) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--budget: '", text,
        "' is not a duration; give a number with a unit, e.g. 90s, 15m, "
        "1h, 1h30m"));
  }
  if (d <= absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--budget: '", text,
        "' is not a positive, finite duration; leave the flag out for no "
        "cap"));
  }
  return absl::ToDoubleSeconds(d);
}

std::string ClientName(const JobFlags& f, const ClientEnvironment& env) {
  if (!f.client.empty()) return f.client;
  if (!env.user.empty()) return env.user;
  return "irontune-client";
}

v1::Priority PriorityOf(const JobFlags& f) {
  return f.priority == "batch" ? v1::PRIORITY_BATCH : v1::PRIORITY_INTERACTIVE;
}

v1::Packaging PackagingOf(const JobFlags& f) {
  if (f.packaging == "full-elf") return v1::PACKAGING_FULL_ELF;
  if (f.packaging == "xclbin-chain") return v1::PACKAGING_XCLBIN_CHAIN;
  return v1::PACKAGING_UNSPECIFIED;
}

}  // namespace irontune
