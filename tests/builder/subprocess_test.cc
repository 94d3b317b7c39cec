// daemon/base/subprocess, tested here beside its first user, the build
// command.
#include "daemon/base/subprocess.h"

#include <signal.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "tests/builder/builder_fixtures.h"

namespace irontune {
namespace {

TEST_CASE("RunProcess passes stdin through and reads stdout and stderr") {
  ProcessOptions options;
  absl::StatusOr<ProcessResult> r =
      RunProcess({"sh", "-c", "cat; echo oops >&2"}, "hello\nworld\n", options);
  REQUIRE(r.ok());
  CHECK(r->exited);
  CHECK(r->exit_code == 0);
  CHECK(r->out == "hello\nworld\n");
  CHECK(r->err_tail == "oops\n");
}

TEST_CASE("RunProcess gives the child exactly the environment asked for") {
  setenv("IRONTUNE_TEST_SECRET", "hunter2", 1);
  ProcessOptions options;
  options.environment = std::vector<std::string>{"A=1", "B=two words"};
  // env(1) prints its environment as it is: nothing added, nothing kept.
  absl::StatusOr<ProcessResult> r = RunProcess({"env"}, "", options);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK(r->out == "A=1\nB=two words\n");
  // By default the child has ours.
  r = RunProcess({"env"}, "", ProcessOptions());
  REQUIRE(r.ok());
  CHECK(r->out.find("IRONTUNE_TEST_SECRET=hunter2\n") != std::string::npos);
  unsetenv("IRONTUNE_TEST_SECRET");
}

TEST_CASE("RunProcess feeds a large input to a child that reads it all") {
  const std::string input(3 << 20, 'x');  // more than any pipe buffer
  absl::StatusOr<ProcessResult> r =
      RunProcess({"wc", "-c"}, input, ProcessOptions());
  REQUIRE(r.ok());
  CHECK(std::stoul(r->out) == input.size());
}

TEST_CASE("RunProcess survives a child that does not read its stdin") {
  const std::string input(3 << 20, 'x');
  absl::StatusOr<ProcessResult> r =
      RunProcess({"sh", "-c", "exec 0<&-; echo done"}, input, ProcessOptions());
  REQUIRE(r.ok());
  CHECK(r->exited);
  CHECK(r->out == "done\n");
}

TEST_CASE("RunProcess reports the exit status and keeps stderr's tail") {
  ProcessOptions options;
  options.stderr_keep = 10;
  absl::StatusOr<ProcessResult> r = RunProcess(
      {"sh", "-c", "echo 0123456789abcdefghij >&2; exit 7"}, "", options);
  REQUIRE(r.ok());
  CHECK(r->exited);
  CHECK(r->exit_code == 7);
  CHECK(r->err_tail == "bcdefghij\n");
  CHECK(DescribeEnd(*r, options) == "exited with status 7");
}

TEST_CASE("RunProcess reports a child killed by a signal") {
  absl::StatusOr<ProcessResult> r =
      RunProcess({"sh", "-c", "kill -SEGV $$"}, "", ProcessOptions());
  REQUIRE(r.ok());
  CHECK_FALSE(r->exited);
  CHECK(r->term_signal == SIGSEGV);
  CHECK(DescribeEnd(*r, ProcessOptions()).find("signal 11") !=
        std::string::npos);
}

TEST_CASE("RunProcess kills the whole process group at the timeout") {
  ProcessOptions options;
  options.timeout = absl::Milliseconds(300);
  // The grandchild holds stdout open: only killing the group ends it.
  absl::StatusOr<ProcessResult> r =
      RunProcess({"sh", "-c", "sleep 60 & echo $!; wait"}, "", options);
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK_FALSE(r->exited);
  CHECK(r->term_signal == SIGKILL);
  const pid_t grandchild = std::stoi(r->out);
  CHECK(testing::Gone(grandchild));
}

TEST_CASE("RunProcess stops a child that floods stdout") {
  ProcessOptions options;
  options.max_stdout = 1000;
  absl::StatusOr<ProcessResult> r =
      RunProcess({"sh", "-c", "yes"}, "", options);
  REQUIRE(r.ok());
  CHECK(r->stdout_overflow);
  CHECK(r->out.size() == 1000);
  CHECK_FALSE(r->exited);
}

TEST_CASE("RunProcess names a command that cannot be started") {
  absl::StatusOr<ProcessResult> r =
      RunProcess({"/nonexistent/irontune-builder"}, "", ProcessOptions());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kNotFound);
  CHECK(r.status().message().find("/nonexistent/irontune-builder") !=
        std::string::npos);
  CHECK(RunProcess({}, "", ProcessOptions()).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("RunProcess gives the child an unblocked SIGTERM") {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  absl::StatusOr<ProcessResult> r =
      RunProcess({"sh", "-c", "kill -TERM $$; sleep 5"}, "", ProcessOptions());
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  REQUIRE(r.ok());
  CHECK(r->term_signal == SIGTERM);
}

TEST_CASE("RunProcess kills the process group once its stop flag turns true") {
  std::atomic<bool> stop{false};
  ProcessOptions options;
  options.stop = &stop;
  std::thread stopper([&stop] {
    absl::SleepFor(absl::Milliseconds(200));
    stop = true;
  });
  absl::StatusOr<ProcessResult> r =
      RunProcess({"sh", "-c", "sleep 60 & echo $!; wait"}, "", options);
  stopper.join();
  REQUIRE(r.ok());
  CHECK(r->stopped);
  CHECK_FALSE(r->timed_out);
  CHECK_FALSE(r->exited);
  CHECK_THAT(DescribeEnd(*r, options), Catch::Contains("shuts down"));
  CHECK(testing::Gone(std::stoi(r->out)));
}

}  // namespace
}  // namespace irontune
