// systemd's notify protocol: the notifier on its own, the heartbeat of a
// device call that hangs, a daemon whose worker hangs (pings stop, then
// resume), and the real irontuned under a NOTIFY_SOCKET made here.
#include "daemon/process/systemd_notify.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/value.h"
#include "daemon/process/daemon.h"
#include "daemon/scheduler/heartbeat.h"
#include "daemon/sim/sim_device.h"
#include "grpcpp/grpcpp.h"
#include "irontune/v1/tuner.grpc.pb.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

// What systemd does: a unix datagram socket that collects the messages.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    if (path[0] == '@') addr.sun_path[0] = '\0';
    const socklen_t len =
        offsetof(sockaddr_un, sun_path) + path.size() + (path[0] != '@');
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  }
  ~NotifySocket() { ::close(fd_); }
  bool bound() const { return bound_; }

  // The next message, or nothing within `seconds`.
  std::optional<std::string> Receive(double seconds) {
    timeval tv{
        static_cast<time_t>(seconds),
        static_cast<suseconds_t>((seconds - static_cast<int>(seconds)) * 1e6)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, n);
  }

  // Reads messages until one satisfies `match` (returned) or `seconds`
  // pass (""). Every message read is appended to `seen`.
  std::string WaitFor(const std::function<bool(const std::string&)>& match,
                      double seconds,
                      std::vector<std::string>* seen = nullptr) {
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      std::optional<std::string> m = Receive(0.2);
      if (!m) continue;
      if (seen) seen->push_back(*m);
      if (match(*m)) return *m;
    }
    return "";
  }
  std::string WaitFor(const std::string& text, double seconds,
                      std::vector<std::string>* seen = nullptr) {
    return WaitFor(
        [&](const std::string& m) { return m.find(text) != std::string::npos; },
        seconds, seen);
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

std::string ShortDir(const std::string& tag) {
  // Short: a unix socket path must fit in 108 bytes.
  return e2e::TempDir(tag);
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

TEST_CASE("systemd: Notify sends one datagram to a path or abstract socket") {
  const std::string dir = ShortDir("notify");
  for (const std::string& path :
       {dir + "/n.sock", "@irontune-test-" + std::to_string(::getpid())}) {
    NotifySocket socket(path);
    REQUIRE(socket.bound());
    NotifyConfig config;
    config.socket = path;
    SystemdNotifier notifier(config);
    REQUIRE(notifier.enabled());
    REQUIRE(notifier.Notify("READY=1\nSTATUS=hello").ok());
    CHECK(socket.Receive(5) == "READY=1\nSTATUS=hello");
  }
}

TEST_CASE("systemd: no socket sends nothing, and a missing one is named") {
  SystemdNotifier off{NotifyConfig{}};
  CHECK(!off.enabled());
  CHECK(off.Notify("READY=1").ok());

  NotifyConfig config;
  config.socket = ShortDir("gone") + "/absent.sock";
  SystemdNotifier notifier(config);
  absl::Status s = notifier.Notify("READY=1");
  CHECK(absl::IsFailedPrecondition(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("absent.sock"));
}

TEST_CASE("systemd: the environment gives the socket and the watchdog") {
  ::setenv("NOTIFY_SOCKET", "/run/x.sock", 1);
  ::setenv("WATCHDOG_USEC", "30000000", 1);
  ::unsetenv("WATCHDOG_PID");
  NotifyConfig config = NotifyConfig::FromEnvironment();
  CHECK(config.socket == "/run/x.sock");
  CHECK(config.watchdog == absl::Seconds(30));

  // The watchdog is another process's.
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  CHECK(NotifyConfig::FromEnvironment().watchdog == absl::ZeroDuration());
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  CHECK(NotifyConfig::FromEnvironment().watchdog == absl::Seconds(30));
  ::setenv("WATCHDOG_USEC", "soon", 1);
  CHECK(NotifyConfig::FromEnvironment().watchdog == absl::ZeroDuration());
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
}

// A device whose Load blocks until `release`.
class HangingDevice : public DeviceWrapper {
 public:
  explicit HangingDevice(Device* target) : DeviceWrapper(target) {}
  absl::StatusOr<std::unique_ptr<Image>> Load(const Artifact&) override {
    entered.Notify();
    release.WaitForNotification();
    return absl::UnavailableError("released");
  }
  absl::Notification entered;
  absl::Notification release;
};

// Polls `condition` for up to 10 s.
bool Eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 1000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

TEST_CASE("systemd: a device call that hangs makes the heartbeat stale") {
  std::unique_ptr<SimDevice> sim = *MakeSimDevice("sim:npu2");
  auto hanging = std::make_unique<HangingDevice>(sim.get());
  HangingDevice* hang = hanging.get();
  Heartbeat heartbeat;
  HeartbeatDevice device(std::move(hanging), &heartbeat);
  const absl::Duration bound = absl::Milliseconds(50);

  heartbeat.Waiting();
  CHECK(heartbeat.Alive(bound));
  CHECK(heartbeat.SinceBeat() == absl::ZeroDuration());
  std::thread caller([&] { (void)device.Load(Artifact()); });
  hang->entered.WaitForNotification();
  CHECK(Eventually([&] { return !heartbeat.Alive(bound); }));
  CHECK(heartbeat.SinceBeat() > bound);
  hang->release.Notify();
  caller.join();
  CHECK(heartbeat.Alive(bound));  // beaten on leaving the call
  heartbeat.Exited();
  CHECK(!heartbeat.Alive(absl::Hours(1)));
}

// A runner whose Measure waits for `release`.
class HangingRunner : public JobRunner {
 public:
  absl::StatusOr<std::unique_ptr<AutotuneSteps>> StartAutotune(
      const v1::AutotuneRequest&, JobContext&) override {
    return absl::UnimplementedError("not here");
  }
  absl::StatusOr<v1::MeasureResult> RunMeasure(const v1::MeasureRequest&,
                                               JobContext&) override {
    release->WaitForNotification();
    return v1::MeasureResult();
  }
  std::shared_ptr<absl::Notification> release =
      std::make_shared<absl::Notification>();
};

v1::MeasureRequest SmallMeasure() {
  v1::MeasureRequest request;
  *request.mutable_operator_() =
      testing::IronGemm(256, 256, 256, 64, 64, 64, 4);
  v1::Field* f = request.add_settings()->add_tunables();
  f->set_name("tile_m");
  *f->mutable_value() = IntValue(32);
  request.mutable_timing()->set_rounds(4);
  request.mutable_timing()->set_calls(5);
  request.set_client("watchdog-test");
  return request;
}

TEST_CASE("systemd: a hung worker stops the watchdog pings until it moves") {
  const std::string dir = ShortDir("hang");
  NotifySocket socket(dir + "/notify");
  REQUIRE(socket.bound());
  auto runner = std::make_unique<HangingRunner>();
  std::shared_ptr<absl::Notification> release = runner->release;
  DaemonOptions options;
  options.state_dir = dir;
  options.listen = {"unix:" + dir + "/sock"};
  options.sim_clock = SimClock::kVirtual;
  options.runner = std::move(runner);
  options.notify.socket = dir + "/notify";
  options.notify.watchdog = absl::Milliseconds(100);
  options.notify.status_period = absl::Milliseconds(20);
  options.stall_limit = absl::Milliseconds(300);
  auto started = Daemon::Start(std::move(options));
  INFO(started.status().ToString());
  REQUIRE(started.ok());
  std::unique_ptr<Daemon> daemon = *std::move(started);

  CHECK(socket.WaitFor("READY=1", 10) == "READY=1");
  CHECK(socket.WaitFor("STATUS=idle; 0 jobs queued", 10) != "");
  CHECK(socket.WaitFor("WATCHDOG=1", 10) == "WATCHDOG=1");

  auto stub = v1::Tuner::NewStub(grpc::CreateChannel(
      "unix:" + dir + "/sock", grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto reader = stub->Measure(&context, SmallMeasure());
  const std::string stuck = socket.WaitFor("device worker stuck", 10);
  CHECK_THAT(stuck, Catch::StartsWith("STATUS=running measure ") &&
                        Catch::Contains("for watchdog-test"));
  // Stuck: ten watchdog intervals pass without a ping.
  CHECK(socket.WaitFor("WATCHDOG=1", 1.0) == "");

  release->Notify();
  CHECK(socket.WaitFor("WATCHDOG=1", 10) == "WATCHDOG=1");
  v1::MeasureEvent event;
  while (reader->Read(&event)) {
  }
  reader->Finish();
  daemon->Shutdown();
  CHECK(socket.WaitFor("STOPPING=1", 10) == "STOPPING=1\nSTATUS=shutting down");
}

#ifdef IRONTUNE_IRONTUNED
TEST_CASE(
    "systemd: the real irontuned sends READY, STATUS, WATCHDOG, STOPPING") {
  const std::string dir = ShortDir("unit");
  NotifySocket socket(dir + "/notify");
  REQUIRE(socket.bound());
  e2e::Process irontuned(
      "irontuned",
      {IRONTUNE_IRONTUNED, "--device", "sim:npu2", "--sim-clock", "virtual",
       "--listen", "unix:" + dir + "/sock", "--state-dir", dir + "/state"},
      dir, {"NOTIFY_SOCKET=" + dir + "/notify", "WATCHDOG_USEC=200000"});
  REQUIRE(irontuned.started());

  std::vector<std::string> seen;
  CHECK(socket.WaitFor("READY=1", 30, &seen) == "READY=1");
  INFO(irontuned.Stderr());
  CHECK(socket.WaitFor("STATUS=idle; 0 jobs queued", 10, &seen) != "");
  int pings = 0;
  for (int i = 0; i < 3; ++i) {
    if (socket.WaitFor("WATCHDOG=1", 10, &seen) == "WATCHDOG=1") ++pings;
  }
  CHECK(pings == 3);
  CHECK(irontuned.WaitForStderrLine("systemd watchdog", 10) != "");

  irontuned.Signal(SIGTERM);
  CHECK(socket.WaitFor("STOPPING=1", 10, &seen) ==
        "STOPPING=1\nSTATUS=shutting down");
  REQUIRE(irontuned.Wait(30));
  CHECK(irontuned.exit_code() == 0);
  // Nothing but the protocol's messages came.
  for (const std::string& m : seen) {
    INFO(m);
    CHECK((StartsWith(m, "READY=1") || StartsWith(m, "STATUS=") ||
           StartsWith(m, "WATCHDOG=1") || StartsWith(m, "STOPPING=1")));
  }
}
#endif

}  // namespace
}  // namespace irontune
