// irontuned's command line: flags and config file (CLI11), logging, the
// signal wait and the exit codes. main.cc only calls IrontunedMain.
//
// Exit codes: 0 ok (including --help and a clean SIGTERM/SIGINT shutdown),
// 1 start-up error, 2 usage error.
#ifndef IRONTUNE_DAEMON_PROCESS_CLI_H_
#define IRONTUNE_DAEMON_PROCESS_CLI_H_

namespace irontune {

inline constexpr int kExitOk = 0;
inline constexpr int kExitStartup = 1;
inline constexpr int kExitUsage = 2;

// Runs irontuned until SIGTERM or SIGINT. Call from main only: it blocks
// those signals in every thread and waits for them with sigwait.
int IrontunedMain(int argc, char** argv);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_PROCESS_CLI_H_
