// The fleet's processes for its end-to-end tests: real irontuned boxes and
// fronts against the test cluster, and waits on what they commit.
#ifndef IRONTUNE_TESTS_FLEET_FLEET_PROCESSES_H_
#define IRONTUNE_TESTS_FLEET_FLEET_PROCESSES_H_

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "catch2/catch.hpp"
#include "daemon/fleet/fleet_queue.h"
#include "tests/testing/daemon_process.h"

namespace irontune::testing {

// An irontuned on sim:npu2 at the performance power mode in the fleet of
// `url`, as `name`, on the virtual clock; or, `slow`, on the real-time
// clock with each design's build slept for 2 s on one build thread, so a
// shard takes several seconds; then `more` flags.
inline std::unique_ptr<e2e::DaemonProcess> StartBox(
    const std::string& url, const std::string& name, bool slow = false,
    const std::vector<std::string>& more = {}) {
  const std::string dir = e2e::TempDir("fleet-box");
  const std::string server = "unix:" + dir + "/sock";
  std::vector<std::string> extra = {
      "--device",      "sim:npu2", "--power-mode",  "performance",
      "--fleet",       url,        "--fleet-name",  name,
      "--fleet-lease", "2",        "--runtime-dir", dir};
  if (slow) {
    extra.insert(extra.end(), {"--sim-build-seconds", "2", "--sim-build-sleep",
                               "--build-jobs", "1"});
  }
  extra.insert(extra.end(), more.begin(), more.end());
  return std::make_unique<e2e::DaemonProcess>(
      name,
      e2e::SimDaemonArgv(IRONTUNE_IRONTUNED, dir + "/state", server,
                         slow ? "realtime" : "virtual", extra),
      dir, IRONTUNE_CLIENT, server);
}

// Waits up to `seconds` for `sql` (one integer) to be positive.
inline bool AwaitPositive(FleetStore& store, const std::string& sql,
                          double seconds) {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    auto rows = store.connection().Exec(sql);
    if (rows.ok() && rows->Int(0, 0).value_or(0) > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// A front (--role front) of the fleet at `url`, mapping npu2 to Strix,
// listening on a unix socket, then `extra`.
inline std::unique_ptr<e2e::DaemonProcess> StartFront(
    const std::string& url, const std::vector<std::string>& extra = {}) {
  const std::string dir = e2e::TempDir("fleet-front");
  const std::string server = "unix:" + dir + "/sock";
  std::vector<std::string> argv = {
      IRONTUNE_IRONTUNED, "--role",   "front",
      "--fleet",          url,        "--fleet-platform",
      "npu2=strix",       "--listen", server,
      "--log-level",      "info",     "--state-dir",
      dir + "/state"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<e2e::DaemonProcess>("front", argv, dir,
                                              IRONTUNE_CLIENT, server);
}

// Waits up to `seconds` for job `id` to end; its last view.
inline JobView AwaitEnd(FleetQueue& queue, int64_t id, double seconds) {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  JobView view;
  while (std::chrono::steady_clock::now() < end) {
    absl::StatusOr<JobView> now = queue.GetJob(id);
    if (!now.ok()) {  // the store may be coming back
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    view = *now;
    if (view.state != FleetJobState::kQueued &&
        view.state != FleetJobState::kRunning) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return view;
}

inline int64_t CountRows(FleetStore& store, const std::string& sql) {
  auto rows = store.connection().Exec(sql);
  REQUIRE(rows.ok());
  return rows->Int(0, 0).value();
}

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_FLEET_FLEET_PROCESSES_H_
