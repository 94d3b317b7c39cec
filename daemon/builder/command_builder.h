// CommandBuilder: the Builder of a real NPU box. For a setting not in the
// ArtifactStore it runs a configured build command (e.g. deploy/iron-builder)
// speaking docs/builder-protocol.md: one JSON request on stdin, one JSON
// reply on stdout. The Artifact it returns has the XRT artifact manifest as
// its payload (irontune-xrt-artifact/1: the stored files' absolute paths,
// the kernel name, the per-call symbols and where each is written).
//
// Failure: a refusal of the command is a BuildOutcome refusal. Everything
// else is an error Status for that setting, naming the command and the
// setting: the command cannot be started (NotFound, PermissionDenied), it
// ends with a status other than 0 or is killed by a signal (Internal, with
// the tail of its stderr), it runs past the timeout (DeadlineExceeded; its
// process group is killed), it floods stdout (ResourceExhausted), its reply
// is malformed or names missing files (Internal, naming the field) or says
// "failed" (Internal, with its reason). None of them harms the daemon.
//
// The command runs with a minimal environment (builder_env.h): PATH, HOME,
// LANG, LC_ALL and TMPDIR, and the variables `pass_env` names, read from
// irontuned's environment as each command starts.
//
// Threads: Build may be called from several threads at once. At most
// `jobs` commands run at a time; further calls wait for a slot. Environment
// is thread-safe.
#ifndef IRONTUNE_DAEMON_BUILDER_COMMAND_BUILDER_H_
#define IRONTUNE_DAEMON_BUILDER_COMMAND_BUILDER_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/base/subprocess.h"
#include "daemon/builder/artifact_store.h"
#include "daemon/npu/builder.h"

namespace irontune {

struct CommandBuilderOptions {
  // The command, split on white space into a program and its arguments.
  std::string command;
  // Per build; then its process group is killed.
  absl::Duration timeout = absl::Seconds(600);
  // Most builds running at once. REQUIRES: >= 1.
  int jobs = 1;
  // For `COMMAND --version`.
  absl::Duration version_timeout = absl::Seconds(30);
  // The variables of irontuned's environment the command gets besides
  // builder_env.h's kBuilderBaseEnv (--builder-env): names, or prefixes
  // ending `*`. Nothing else is passed.
  std::vector<std::string> pass_env;
};

class CommandBuilder : public Builder {
 public:
  // Runs `COMMAND --version` once for Environment(). InvalidArgument for an
  // empty command, jobs < 1 or a bad pass_env name (CheckBuilderEnvNames);
  // NotFound / PermissionDenied when the command cannot be started. A command
  // whose --version fails is still used: its version reads "unknown (why)".
  // `store` is not owned and must outlive the builder.
  static absl::StatusOr<std::unique_ptr<CommandBuilder>> Create(
      CommandBuilderOptions options, ArtifactStore* store);

  // The stored artifact of `request`, else the command's build of it.
  // InvalidArgument for a bad request (steps outside [1, 65536], packaging
  // unspecified, no class, no generation).
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override;

  // Where the command announced kFitCheckLine (docs/builder-protocol.md):
  // "" for a design in the store, else the command's answer to a fit
  // request (run in a slot like a build; its "failed" and the ends a
  // build's error has are errors too). Otherwise Builder::Fit (a Build).
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override;
  bool ChecksFit() const override { return checks_fit_; }

  // "command-builder/1 COMMAND; VERSION".
  std::string Environment() const override { return environment_; }

  // Kills the commands running now (their builds, and those waiting for a
  // slot, end with Cancelled; nothing is stored) and starts no more.
  void Stop() override;

  // The most builds that ever ran at once (for tests of the bound).
  int peak_running() const;

 private:
  CommandBuilder(CommandBuilderOptions options, std::vector<std::string> argv,
                 std::string environment, bool checks_fit,
                 ArtifactStore* store);
  absl::StatusOr<BuildOutcome> RunCommand(const BuildRequest& request,
                                          const std::string& recipe_hash,
                                          const std::string& dir);
  // The command's verdict on a fit request of `request`.
  absl::StatusOr<std::string> RunFitCheck(const BuildRequest& request,
                                          const std::string& recipe_hash);
  // A command's run options: the build timeout, the stop flag, its
  // environment.
  ProcessOptions RunOptions() const;
  // Waits for a slot; false once stopped (no slot taken).
  bool Acquire() ABSL_LOCKS_EXCLUDED(mu_);
  void Release() ABSL_LOCKS_EXCLUDED(mu_);

  const CommandBuilderOptions options_;
  const std::vector<std::string> argv_;
  const std::string environment_;
  const bool checks_fit_;  // the command announced kFitCheckLine
  ArtifactStore* const store_;
  mutable absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int peak_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<bool> stopped_{false};
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BUILDER_COMMAND_BUILDER_H_
