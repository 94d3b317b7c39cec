// The environment a build command runs with (docs/builder-protocol.md,
// "Running the command"): a few variables every program expects, and those
// the operator names (--builder-env), taken from irontuned's own
// environment; nothing else. So systemd's NOTIFY_SOCKET (with which a
// builder could tell systemd irontuned is ready, or stopping), a token in
// IRONTUNE_TOKEN, or any other secret irontuned was started with never
// reaches the builder.
//
// Thread-safe (pure functions over what they are given).
#ifndef IRONTUNE_DAEMON_BUILDER_BUILDER_ENV_H_
#define IRONTUNE_DAEMON_BUILDER_BUILDER_ENV_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace irontune {

// Passed whenever irontuned has them.
inline constexpr const char* kBuilderBaseEnv[] = {"PATH", "HOME", "LANG",
                                                  "LC_ALL", "TMPDIR"};
// PATH when irontuned has none.
inline constexpr char kBuilderDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";
// Never passed: systemd's service protocol and irontune's token. Naming one
// in --builder-env is an error; a prefix skips them.
inline constexpr const char* kBuilderDeniedEnv[] = {
    "NOTIFY_SOCKET", "WATCHDOG_USEC",  "WATCHDOG_PID",  "LISTEN_FDS",
    "LISTEN_PID",    "LISTEN_FDNAMES", "IRONTUNE_TOKEN"};

// Checks the names --builder-env gave: each a variable's name
// ([A-Za-z_][A-Za-z0-9_]*) or a prefix of one followed by `*` (MLIR_AIE_*),
// not one of kBuilderDeniedEnv. InvalidArgument naming the first bad one
// and why.
absl::Status CheckBuilderEnvNames(const std::vector<std::string>& names);

// The "NAME=value" entries of `environ` (a null-terminated array like
// ::environ) a build command gets: kBuilderBaseEnv, then those `names`
// match (REQUIRES: CheckBuilderEnvNames OK), each once, in environ's
// order; PATH is kBuilderDefaultPath where environ has none.
std::vector<std::string> BuilderEnvironment(
    const std::vector<std::string>& names, const char* const* environ);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BUILDER_BUILDER_ENV_H_
