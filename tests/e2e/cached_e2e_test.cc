// End to end: a submit whose every figure is in the cache is answered while
// a long job holds the device (daemon/scheduler/cached_answers.h), with the
// answer the device worker gives. The real irontuned (real-time sim clock,
// so the long job holds the device) and irontune-client as subprocesses
// over a unix socket. Assertions are on states and orders, never on time;
// the waits are bounds.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "google/protobuf/text_format.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/process.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune::e2e {
namespace {

const std::string kDaemon = IRONTUNE_IRONTUNED;
const std::string kClient = IRONTUNE_CLIENT;

// `calls` as dir/NAME.txtpb; returns the path.
std::string Write(const std::string& dir, const std::string& name,
                  const v1::Calls& calls) {
  const std::string path = dir + "/" + name + ".txtpb";
  std::string text;
  google::protobuf::TextFormat::PrintToString(calls, &text);
  std::ofstream(path) << text;
  return path;
}

// irontuned on the real-time sim (builds cost nothing), on `dir`.
class Daemon : public DaemonProcess {
 public:
  Daemon(const std::string& dir, std::vector<std::string> extra = {})
      : DaemonProcess("irontuned",
                      SimDaemonArgv(kDaemon, dir, "unix:" + dir + "/sock",
                                    "realtime", WithFreeBuilds(extra)),
                      dir, kClient, "unix:" + dir + "/sock") {
    REQUIRE(process().started());
    if (!Up(30)) FAIL("irontuned did not come up: " << Log());
  }
  nlohmann::json Json(const std::vector<std::string>& args) const {
    Result r = Client(args, 120);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out);
  }
  // The job `id` as `jobs` lists it (null when absent).
  nlohmann::json Job(const std::string& id) const {
    const nlohmann::json doc = Json({"jobs", "--json"});
    if (doc.contains("jobs")) {
      for (const auto& job : doc["jobs"]) {
        if (job["job_id"] == id) return job;
      }
    }
    return nullptr;
  }
  // Waits (bounded) until job `id` is in `state`.
  bool WaitFor(const std::string& id, const std::string& state) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (std::chrono::steady_clock::now() < end) {
      const nlohmann::json job = Job(id);
      if (!job.is_null() && job["state"] == state) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

 private:
  static std::vector<std::string> WithFreeBuilds(
      std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--sim-build-seconds", "0"});
    return extra;
  }
};

int64_t Ms(const nlohmann::json& field) {
  return std::stoll(field.get<std::string>());
}

TEST_CASE(
    "e2e: a cached submit is answered while a long job holds the device") {
  const std::string dir = TempDir("cached-answers");
  const std::string silu = Write(
      dir, "silu",
      testing::OneCall("silu", {testing::Silu8192({512, 1024})}, {{"s", "t"}}));
  const std::string add = Write(dir, "add", testing::AddCalls());
  const std::vector<std::string> cached_submit = {
      "submit", silu, "--rounds", "3", "--calls", "5", "--json"};
  nlohmann::json answer;
  {
    Daemon daemon(dir);
    // Fills the cache (through the device worker).
    const nlohmann::json first = daemon.Json(cached_submit);
    CHECK(first["stats"]["settings_timed"].get<int>() > 0);
    // A long job on the device: 1000 rounds of 1000 calls a setting.
    const std::string long_job =
        daemon.Json({"submit", add, "--rounds", "1000", "--calls", "1000",
                     "--detach", "--json"})["job_id"];
    REQUIRE(daemon.WaitFor(long_job, "JOB_STATE_RUNNING"));

    answer = daemon.Json(cached_submit);
    const std::string id = answer["job_id"];
    CHECK(answer["stats"]["settings_timed"].get<int>() == 0);
    CHECK(answer["stats"]["cache_hits"].get<int>() > 0);

    // The long job kept the device all along: still the one running, and
    // the cached job started after it and ended before it.
    const nlohmann::json status = daemon.Json({"status", "--json"});
    CHECK(status["running"]["job_id"] == long_job);
    const nlohmann::json held = daemon.Job(long_job);
    const nlohmann::json cached = daemon.Job(id);
    REQUIRE(!held.is_null());
    REQUIRE(!cached.is_null());
    CHECK(held["state"] == "JOB_STATE_RUNNING");
    CHECK(cached["state"] == "JOB_STATE_SUCCEEDED");
    CHECK(Ms(cached["started_unix_ms"]) >= Ms(held["started_unix_ms"]));
    CHECK_THAT(daemon.Log(), Catch::Contains("job " + id + " ended: ") &&
                                 Catch::Contains("(from the cache)"));

    // A remeasure is not answered from the cache: it waits for the device.
    Result remeasure =
        daemon.Client({"submit", silu, "--rounds", "3", "--calls", "5",
                       "--remeasure", "--detach", "--json"},
                      60);
    REQUIRE(remeasure.code == 0);
    const std::string queued = nlohmann::json::parse(remeasure.out)["job_id"];
    CHECK(daemon.Job(queued)["state"] == "JOB_STATE_QUEUED");
    CHECK(daemon.Client({"cancel", queued}, 30).code == 0);
    CHECK(daemon.Client({"cancel", long_job}, 30).code == 0);
    REQUIRE(daemon.WaitFor(long_job, "JOB_STATE_CANCELLED"));
    CHECK(daemon.Stop() == 0);
  }
  // The device worker's answer to the same submit, cached answers off: the
  // same profile and diff.
  Daemon worker(dir, {"--cached-answers", "0"});
  const nlohmann::json worked = worker.Json(cached_submit);
  CHECK(worked["stats"]["settings_timed"].get<int>() == 0);
  CHECK(worked["profile"] == answer["profile"]);
  CHECK(worked["diff"] == answer["diff"]);
  CHECK(worked["changed"] == answer["changed"]);
  CHECK_THAT(worker.Log(), !Catch::Contains("(from the cache)"));
  CHECK(worker.Stop() == 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace irontune::e2e
