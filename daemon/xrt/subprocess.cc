#include "daemon/xrt/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace irontune {
namespace {

struct Pipes {
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  int exec[2] = {-1, -1};  // CLOEXEC: carries exec's errno to the parent
  ~Pipes() {
    for (int* p : {out, err, exec})
      for (int i = 0; i < 2; ++i)
        if (p[i] >= 0) ::close(p[i]);
  }
  void Close(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

[[noreturn]] void Child(const std::vector<std::string>& argv, Pipes& p) {
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, 0);
  ::dup2(p.out[1], 1);
  ::dup2(p.err[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execvp(args[0], args.data());
  const int e = errno;
  (void)!::write(p.exec[1], &e, sizeof(e));
  ::_exit(127);
}

// Reads both pipes until they close or `deadline`; false on the deadline.
bool Drain(Pipes& p, absl::Time deadline, size_t max_bytes,
           CommandResult& result) {
  char buf[4096];
  while (p.out[0] >= 0 || p.err[0] >= 0) {
    pollfd fds[2] = {{p.out[0], POLLIN, 0}, {p.err[0], POLLIN, 0}};
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
    if (::poll(fds, 2, ms) < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      int& fd = i == 0 ? p.out[0] : p.err[0];
      std::string& sink = i == 0 ? result.out : result.err;
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) {
        p.Close(fd);
      } else if (sink.size() < max_bytes) {
        sink.append(buf, std::min<size_t>(n, max_bytes - sink.size()));
      }
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout,
                                         size_t max_bytes) {
  if (argv.empty()) return absl::InvalidArgumentError("RunCommand: no argv");
  Pipes p;
  if (::pipe2(p.out, O_CLOEXEC) != 0 || ::pipe2(p.err, O_CLOEXEC) != 0 ||
      ::pipe2(p.exec, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const absl::Time deadline = absl::Now() + timeout;
  const pid_t pid = ::fork();
  if (pid < 0) {
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) Child(argv, p);
  p.Close(p.out[1]);
  p.Close(p.err[1]);
  p.Close(p.exec[1]);
  CommandResult result;
  const bool done = Drain(p, deadline, max_bytes, result);
  if (!done) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int exec_errno = 0;
  if (::read(p.exec[0], &exec_errno, sizeof(exec_errno)) ==
      sizeof(exec_errno)) {
    return absl::NotFoundError(
        absl::StrCat("cannot run ", argv[0], ": ", std::strerror(exec_errno)));
  }
  if (!done) {
    return absl::DeadlineExceededError(
        absl::StrCat("`", absl::StrJoin(argv, " "), "` ran longer than ",
                     absl::FormatDuration(timeout), " and was killed"));
  }
  if (WIFSIGNALED(status)) {
    result.exit_code = -1;
    result.signal = WTERMSIG(status);
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace irontune
