#include "daemon/base/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "daemon/base/errno_code.h"

extern char** environ;

namespace irontune {
namespace {

// How often the loop looks whether the child has exited while it waits for
// output.
constexpr int kPollSliceMs = 20;

absl::Status ErrnoStatus(int err, const std::string& what) {
  return absl::Status(ErrnoCode(err, absl::StatusCode::kInternal),
                      absl::StrCat(what, ": ", strerror(err)));
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The three channels to a child: [0] is our end, [1] the child's.
struct Channels {
  std::array<int, 2> in = {-1, -1};
  std::array<int, 2> out = {-1, -1};
  std::array<int, 2> err = {-1, -1};

  ~Channels() {
    for (auto* c : {&in, &out, &err}) {
      CloseFd((*c)[0]);
      CloseFd((*c)[1]);
    }
  }
  absl::Status Open() {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in.data()) != 0 ||
        ::pipe2(out.data(), O_CLOEXEC) != 0 ||
        ::pipe2(err.data(), O_CLOEXEC) != 0) {
      return ErrnoStatus(errno, "cannot make pipes for a child process");
    }
    for (int fd : {in[0], out[0], err[0]}) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return absl::OkStatus();
  }
};

// `strings` as a null-terminated array of C strings, which they back.
std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings)
    out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Starts argv in a process group of its own on `channels`' child ends, with
// `environment` (nullopt: ours).
absl::StatusOr<pid_t> Spawn(
    const std::vector<std::string>& argv, Channels& channels,
    const std::optional<std::vector<std::string>>& environment) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  absl::Cleanup free_actions = [&] {
    posix_spawn_file_actions_destroy(&actions);
  };
  posix_spawn_file_actions_adddup2(&actions, channels.in[1], 0);
  posix_spawn_file_actions_adddup2(&actions, channels.out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, channels.err[1], 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  absl::Cleanup free_attr = [&] { posix_spawnattr_destroy(&attr); };
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                      POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigemptyset(&defaults);
  for (int sig :
       {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<char*> args = CStrings(argv);
  std::vector<char*> env;
  if (environment) env = CStrings(*environment);
  pid_t pid = 0;
  // posix_spawnp looks the program up on our PATH, whatever `env` holds.
  const int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(),
                                environment ? env.data() : environ);
  if (rc != 0) return ErrnoStatus(rc, absl::StrCat("cannot run ", argv[0]));
  return pid;
}

// Reads what `fd` has; false at end of file (or an error).
bool Drain(int fd, std::string& into, size_t keep, bool tail) {
  char buffer[16384];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      into.append(buffer, static_cast<size_t>(n));
      if (tail && into.size() > keep) into.erase(0, into.size() - keep);
      if (!tail && into.size() > keep) return true;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    return false;
  }
}

// One child from spawn to reaping.
class Run {
 public:
  Run(pid_t pid, Channels& channels, std::string_view input,
      const ProcessOptions& options)
      : pid_(pid), ch_(channels), input_(input), options_(options) {
    CloseFd(ch_.in[1]);
    CloseFd(ch_.out[1]);
    CloseFd(ch_.err[1]);
    if (input_.empty()) CloseFd(ch_.in[0]);
  }

  ProcessResult Wait() {
    const absl::Time deadline = absl::Now() + options_.timeout;
    while (!(exited_ && ch_.out[0] < 0 && ch_.err[0] < 0)) {
      if (!exited_ && HasExited()) {
        exited_ = true;
        ::kill(-pid_, SIGKILL);  // what is left of its group
        CloseFd(ch_.in[0]);
      }
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        result_.timed_out = !exited_;
        break;
      }
      if (options_.stop != nullptr && options_.stop->load()) {
        result_.stopped = !exited_;
        break;
      }
      PollOnce(left);
      if (result_.stdout_overflow) break;
    }
    ::kill(-pid_, SIGKILL);
    Reap();
    return std::move(result_);
  }

 private:
  // Whether the child has exited, without reaping it (its pid, and so its
  // group's id, stay ours until Reap).
  bool HasExited() {
    siginfo_t info;
    info.si_pid = 0;
    return ::waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid_;
  }

  void Reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && !result_.timed_out && !result_.stdout_overflow &&
        !result_.stopped) {
      result_.exited = true;
      result_.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      result_.term_signal = WTERMSIG(status);
    }
  }

  void PollOnce(absl::Duration left) {
    std::vector<pollfd> fds;
    if (ch_.in[0] >= 0) fds.push_back({ch_.in[0], POLLOUT, 0});
    if (ch_.out[0] >= 0) fds.push_back({ch_.out[0], POLLIN, 0});
    if (ch_.err[0] >= 0) fds.push_back({ch_.err[0], POLLIN, 0});
    const int ms = static_cast<int>(
        std::min<int64_t>(kPollSliceMs, absl::ToInt64Milliseconds(left) + 1));
    if (::poll(fds.data(), fds.size(), ms) <= 0) return;
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == ch_.in[0]) {
        Feed();
      } else if (p.fd == ch_.out[0]) {
        if (!Drain(p.fd, result_.out, options_.max_stdout, false))
          CloseFd(ch_.out[0]);
        if (result_.out.size() > options_.max_stdout) {
          result_.out.resize(options_.max_stdout);
          result_.stdout_overflow = true;
        }
      } else if (!Drain(p.fd, result_.err_tail, options_.stderr_keep, true)) {
        CloseFd(ch_.err[0]);
      }
    }
  }

  // Writes what the child will take of the input; closes stdin when all is
  // written or the child stopped reading.
  void Feed() {
    while (written_ < input_.size()) {
      const ssize_t n =
          ::send(ch_.in[0], input_.data() + written_, input_.size() - written_,
                 MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        written_ += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
      } else {
        break;  // EPIPE and the like: it does not read its stdin
      }
    }
    ::shutdown(ch_.in[0], SHUT_WR);
    CloseFd(ch_.in[0]);
  }

  pid_t pid_;
  Channels& ch_;
  std::string_view input_;
  const ProcessOptions& options_;
  size_t written_ = 0;
  bool exited_ = false;
  ProcessResult result_;
};

}  // namespace

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         std::string_view input,
                                         const ProcessOptions& options) {
  if (argv.empty() || argv[0].empty()) {
    return absl::InvalidArgumentError("no command to run");
  }
  Channels channels;
  if (absl::Status opened = channels.Open(); !opened.ok()) return opened;
  absl::StatusOr<pid_t> pid = Spawn(argv, channels, options.environment);
  if (!pid.ok()) return pid.status();
  Run run(*pid, channels, input, options);
  return run.Wait();
}

std::string DescribeEnd(const ProcessResult& result,
                        const ProcessOptions& options) {
  if (result.timed_out) {
    return absl::StrCat("still running after ",
                        absl::FormatDuration(options.timeout),
                        ": its process group was killed");
  }
  if (result.stopped) {
    return "stopped as irontuned shuts down: its process group was killed";
  }
  if (result.stdout_overflow) {
    return absl::StrCat("wrote over ", options.max_stdout,
                        " bytes to stdout: its process group was killed");
  }
  if (result.exited) {
    return absl::StrCat("exited with status ", result.exit_code);
  }
  if (result.term_signal != 0) {
    return absl::StrCat("killed by signal ", result.term_signal, " (",
                        strsignal(result.term_signal), ")");
  }
  return "ended without an exit status";
}

}  // namespace irontune
