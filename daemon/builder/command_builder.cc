#include "daemon/builder/command_builder.h"

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/base/subprocess.h"
#include "daemon/builder/builder_env.h"
#include "daemon/builder/protocol.h"

extern char** environ;

namespace irontune {
namespace {

// How much of stderr's end an error carries.
constexpr size_t kStderrInError = 2048;
constexpr size_t kMaxVersionChars = 200;
constexpr char kStopping[] = "irontuned is shutting down";

// "GEMM {tile_m=64, tile_n=32} x4 xclbin_chain": the setting, for errors.
std::string SettingText(const BuildRequest& request) {
  std::vector<std::string> tunables;
  for (const v1::Tunable& t : request.op.tunables())
    tunables.push_back(absl::StrCat(t.name(), "=", ValueToString(t.value())));
  return absl::StrCat(request.op.class_name(), " {",
                      absl::StrJoin(tunables, ", "), "} x", request.steps, " ",
                      PackagingWord(request.packaging));
}

std::string StderrTail(const ProcessResult& result) {
  absl::string_view tail = absl::StripTrailingAsciiWhitespace(result.err_tail);
  if (tail.empty()) return "; stderr is empty";
  if (tail.size() > kStderrInError)
    tail = tail.substr(tail.size() - kStderrInError);
  return absl::StrCat("; stderr ends: ", tail);
}

// What `COMMAND --version` says: its first non-empty line (or "unknown
// (why)") and whether a later line is kFitCheckLine.
struct CommandVersionInfo {
  std::string version;
  bool fit_check = false;
};

absl::StatusOr<CommandVersionInfo> CommandVersion(
    std::vector<std::string> argv, const CommandBuilderOptions& builder) {
  argv.push_back("--version");
  ProcessOptions options;
  options.timeout = builder.version_timeout;
  options.max_stdout = 1 << 16;
  options.environment = BuilderEnvironment(builder.pass_env, environ);
  ASSIGN_OR_RETURN(ProcessResult result, RunProcess(argv, "", options));
  CommandVersionInfo out;
  if (!result.exited || result.exit_code != 0) {
    out.version =
        absl::StrCat("unknown (--version ", DescribeEnd(result, options), ")");
    return out;
  }
  for (absl::string_view line : absl::StrSplit(result.out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (out.version.empty()) {
      out.version = std::string(line.substr(0, kMaxVersionChars));
    } else if (line == kFitCheckLine) {
      out.fit_check = true;
    }
  }
  if (out.version.empty()) out.version = "unknown (--version printed nothing)";
  return out;
}

// The error of a command that did not exit 0, else OK.
absl::Status EndStatus(const ProcessResult& result,
                       const ProcessOptions& options) {
  if (result.exited && result.exit_code == 0) return absl::OkStatus();
  const absl::StatusCode code =
      result.timed_out         ? absl::StatusCode::kDeadlineExceeded
      : result.stdout_overflow ? absl::StatusCode::kResourceExhausted
                               : absl::StatusCode::kInternal;
  return absl::Status(
      code, absl::StrCat(DescribeEnd(result, options), StderrTail(result)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CommandBuilder>> CommandBuilder::Create(
    CommandBuilderOptions options, ArtifactStore* store) {
  std::vector<std::string> argv = absl::StrSplit(
      options.command, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  if (argv.empty())
    return absl::InvalidArgumentError("--builder-command is empty");
  if (options.jobs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--build-jobs must be at least 1, not ", options.jobs));
  }
  RETURN_IF_ERROR(CheckBuilderEnvNames(options.pass_env));
  absl::StatusOr<CommandVersionInfo> version = CommandVersion(argv, options);
  if (!version.ok()) {
    return absl::Status(
        version.status().code(),
        absl::StrCat("--builder-command: ", version.status().message()));
  }
  std::string environment = absl::StrCat(
      "command-builder/1 ", absl::StrJoin(argv, " "), "; ", version->version);
  return std::unique_ptr<CommandBuilder>(
      new CommandBuilder(std::move(options), std::move(argv),
                         std::move(environment), version->fit_check, store));
}

CommandBuilder::CommandBuilder(CommandBuilderOptions options,
                               std::vector<std::string> argv,
                               std::string environment, bool checks_fit,
                               ArtifactStore* store)
    : options_(std::move(options)),
      argv_(std::move(argv)),
      environment_(std::move(environment)),
      checks_fit_(checks_fit),
      store_(store) {}

ProcessOptions CommandBuilder::RunOptions() const {
  ProcessOptions options;
  options.timeout = options_.timeout;
  options.stop = &stopped_;
  options.environment = BuilderEnvironment(options_.pass_env, environ);
  return options;
}

int CommandBuilder::peak_running() const {
  absl::MutexLock lock(&mu_);
  return peak_;
}

bool CommandBuilder::Acquire() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](CommandBuilder* b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b->mu_) {
        return b->running_ < b->options_.jobs || b->stopped_.load();
      },
      this));
  if (stopped_) return false;
  ++running_;
  peak_ = std::max(peak_, running_);
  return true;
}

void CommandBuilder::Stop() {
  stopped_ = true;
  absl::MutexLock lock(&mu_);  // wakes the callers waiting for a slot
}

void CommandBuilder::Release() {
  absl::MutexLock lock(&mu_);
  --running_;
}

absl::StatusOr<BuildOutcome> CommandBuilder::Build(
    const BuildRequest& request) {
  RETURN_IF_ERROR(CheckBuildRequest(request));
  const std::string recipe = BuildRecipeHash(request, environment_);
  ASSIGN_OR_RETURN(std::optional<Artifact> hit,
                   store_->Lookup(recipe, request));
  if (hit) return BuildOutcome{std::move(hit), ""};
  if (!Acquire()) return absl::CancelledError(kStopping);
  absl::Cleanup release = [this] { Release(); };
  // Another call may have built it while this one waited for a slot.
  ASSIGN_OR_RETURN(hit, store_->Lookup(recipe, request));
  if (hit) return BuildOutcome{std::move(hit), ""};
  ASSIGN_OR_RETURN(const std::string dir, store_->NewBuildDir(recipe));
  absl::StatusOr<BuildOutcome> outcome = RunCommand(request, recipe, dir);
  if (!outcome.ok()) {
    store_->Discard(dir);
    return absl::Status(
        outcome.status().code(),
        absl::StrCat("builder command \"", options_.command, "\" for ",
                     SettingText(request), ": ", outcome.status().message()));
  }
  return outcome;
}

absl::StatusOr<std::string> CommandBuilder::Fit(const BuildRequest& request) {
  if (!checks_fit_) return Builder::Fit(request);
  RETURN_IF_ERROR(CheckBuildRequest(request));
  const std::string recipe = BuildRecipeHash(request, environment_);
  ASSIGN_OR_RETURN(std::optional<Artifact> hit,
                   store_->Lookup(recipe, request));
  if (hit) return std::string();  // built: it fits
  if (!Acquire()) return absl::CancelledError(kStopping);
  absl::Cleanup release = [this] { Release(); };
  absl::StatusOr<std::string> verdict = RunFitCheck(request, recipe);
  if (!verdict.ok()) {
    return absl::Status(
        verdict.status().code(),
        absl::StrCat("builder command \"", options_.command, "\" checking ",
                     SettingText(request), ": ", verdict.status().message()));
  }
  return verdict;
}

absl::StatusOr<std::string> CommandBuilder::RunFitCheck(
    const BuildRequest& request, const std::string& recipe_hash) {
  const ProcessOptions options = RunOptions();
  ASSIGN_OR_RETURN(
      ProcessResult result,
      RunProcess(argv_, FitRequestJson(request, recipe_hash), options));
  if (result.stopped) return absl::CancelledError(kStopping);
  RETURN_IF_ERROR(EndStatus(result, options));
  absl::StatusOr<BuilderReply> reply = ParseFitReply(result.out);
  if (!reply.ok()) {
    return absl::InternalError(absl::StrCat(
        "malformed reply: ", reply.status().message(), StderrTail(result)));
  }
  switch (reply->status) {
    case ReplyStatus::kFits:
      return std::string();
    case ReplyStatus::kRefused:
      return reply->reason.empty() ? std::string("refused without a reason")
                                   : reply->reason;
    default:
      return absl::InternalError(absl::StrCat(
          "the fit check failed: ",
          reply->reason.empty() ? "no reason given" : reply->reason,
          StderrTail(result)));
  }
}

absl::StatusOr<BuildOutcome> CommandBuilder::RunCommand(
    const BuildRequest& request, const std::string& recipe_hash,
    const std::string& dir) {
  const ProcessOptions options = RunOptions();
  ASSIGN_OR_RETURN(
      ProcessResult result,
      RunProcess(argv_, RequestJson(request, recipe_hash, dir), options));
  if (result.stopped) return absl::CancelledError(kStopping);
  RETURN_IF_ERROR(EndStatus(result, options));
  absl::StatusOr<BuilderReply> reply =
      ParseReply(result.out, request, recipe_hash, dir);
  if (!reply.ok()) {
    return absl::InternalError(absl::StrCat(
        "malformed reply: ", reply.status().message(), StderrTail(result)));
  }
  BuildOutcome outcome;
  switch (reply->status) {
    case ReplyStatus::kRefused:
      store_->Discard(dir);
      outcome.refusal =
          reply->reason.empty() ? "refused without a reason" : reply->reason;
      return outcome;
    case ReplyStatus::kFailed:
      return absl::InternalError(absl::StrCat(
          "the build failed: ",
          reply->reason.empty() ? "no reason given" : reply->reason,
          StderrTail(result)));
    case ReplyStatus::kBuilt:
    case ReplyStatus::kFits:  // not a build's (ParseReply)
      break;
  }
  ASSIGN_OR_RETURN(Artifact artifact,
                   store_->Insert(recipe_hash, dir, *reply, request));
  outcome.artifact = std::move(artifact);
  return outcome;
}

}  // namespace irontune
