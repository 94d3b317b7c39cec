#include "tests/testing/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace irontune::e2e {

Process::Process(const std::string& name, const std::vector<std::string>& argv,
                 const std::string& dir, const std::vector<std::string>& env) {
  static std::atomic<int> counter{0};
  const std::string stem = dir + "/" + name + "." + std::to_string(++counter);
  out_path_ = stem + ".out";
  err_path_ = stem + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const std::string& e : env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(),
                  envp.data()) != 0) {
    pid_ = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
}

Process::~Process() {
  if (pid_ > 0 && exit_code_ < 0) {
    kill(pid_, SIGKILL);
    Wait(10);
  }
}

void Process::Signal(int sig) {
  if (pid_ > 0 && exit_code_ < 0) kill(pid_, sig);
}

bool Process::Wait(double seconds) {
  if (pid_ <= 0) return true;
  if (exit_code_ >= 0) return true;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string Process::Stdout() const { return ReadFile(out_path_); }
std::string Process::Stderr() const { return ReadFile(err_path_); }

std::string Process::WaitForStderrLine(const std::string& text,
                                       double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    // Whether the child had exited before this read: then it is the last.
    const bool exited = Wait(0);
    std::istringstream err(Stderr());
    for (std::string line; std::getline(err, line);) {
      if (line.find(text) != std::string::npos) return line;
    }
    if (exited || std::chrono::steady_clock::now() >= deadline) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string WaitForServingAddress(Process& irontuned, const std::string& prefix,
                                  double seconds) {
  const std::string line = irontuned.WaitForStderrLine(" serving ", seconds);
  const size_t end = line.rfind("; state in ");
  const size_t on = end == std::string::npos ? end : line.rfind(" on ", end);
  if (on == std::string::npos) return "";
  std::istringstream addresses(line.substr(on + 4, end - on - 4));
  for (std::string a; std::getline(addresses, a, ',');) {
    if (!a.empty() && a[0] == ' ') a.erase(0, 1);
    if (a.rfind(prefix, 0) == 0) return a;
  }
  return "";
}

Result Run(const std::vector<std::string>& argv, const std::string& dir,
           double seconds, const std::vector<std::string>& env) {
  Process p("run", argv, dir, env);
  if (!p.Wait(seconds)) {
    p.Signal(SIGKILL);
    p.Wait(10);
    return {-1, p.Stdout(), p.Stderr() + "\n(timed out)"};
  }
  return {p.exit_code(), p.Stdout(), p.Stderr()};
}

long ProcStatusKib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  const std::string prefix = field + ":";
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      return std::atol(line.c_str() + prefix.size());
    }
  }
  return -1;
}

std::string TempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("irontune-e2e-" + tag + "-" + std::to_string(getpid()) + "-" +
       std::to_string(++counter));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace irontune::e2e
