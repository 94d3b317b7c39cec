// End to end: the real irontuned and irontune-client binaries as
// subprocesses, over a real unix socket and loopback TCP, on the simulated
// NPU. Assertions are on outcomes and orders, never on wall-clock time; the
// waits below are bounds that keep a broken build from hanging the suite.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/client_unary_call.h"
#include "grpcpp/support/byte_buffer.h"
#include "irontune/v1/tuner.grpc.pb.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/process.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune::e2e {
namespace {

const std::string kDaemon = IRONTUNE_IRONTUNED;
const std::string kClient = IRONTUNE_CLIENT;
const std::string kSource = IRONTUNE_SOURCE_DIR;
const std::string kExample = kSource + "/examples/llama-3.2-1b.rec";

// testing::AddSiluCalls (one ElementwiseAdd and one SiLU, a recording that
// tunes in moments) as dir/small.txtpb; returns the path.
std::string WriteSmall(const std::string& dir) {
  const std::string path = dir + "/small.txtpb";
  std::string text;
  google::protobuf::TextFormat::PrintToString(testing::AddSiluCalls(), &text);
  std::ofstream(path) << text;
  return path;
}

// Client arguments submitting WriteSmall(dir) at --rounds 3 --calls 5, then
// `flags`.
std::vector<std::string> SubmitSmall(const std::string& dir,
                                     const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"submit", WriteSmall(dir), "--rounds",
                                   "3",      "--calls",       "5"};
  args.insert(args.end(), flags.begin(), flags.end());
  return args;
}

// A daemon on a fresh (or given) state directory, serving unix:DIR/sock,
// stopped with SIGTERM.
class Daemon : public DaemonProcess {
 public:
  explicit Daemon(const std::string& dir, std::vector<std::string> extra = {},
                  const std::string& clock = "virtual")
      : DaemonProcess(
            "irontuned",
            SimDaemonArgv(kDaemon, dir, "unix:" + dir + "/sock", clock, extra),
            dir, kClient, "unix:" + dir + "/sock") {
    REQUIRE(process().started());
    if (!Up(30)) FAIL("irontuned did not come up: " << Log());
  }

  nlohmann::json Jobs() const {
    Result r = Client({"jobs", "--json"}, 30);
    REQUIRE(r.code == 0);
    nlohmann::json doc = nlohmann::json::parse(r.out);
    return doc.contains("jobs") ? doc["jobs"] : nlohmann::json::array();
  }
  // Waits (bounded) until some job is in `state`; returns it or null.
  nlohmann::json WaitForJob(const std::string& state, double seconds = 60) {
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      for (const auto& job : Jobs()) {
        if (job["state"] == state) return job;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return nullptr;
  }
  // The loopback TCP address it serves on, for --listen 127.0.0.1:0.
  std::string TcpAddress() {
    const std::string address = WaitForServingAddress(process(), "127.0.0.1:");
    INFO(Log());
    REQUIRE(!address.empty());
    return address;
  }
};

TEST_CASE("e2e: submit tunes a recording and prints the diff") {
  const std::string dir = TempDir("submit");
  Daemon daemon(dir);
  Result r = daemon.Client(SubmitSmall(dir, {"--client", "e2e"}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("ElementwiseAdd size=2048"));
  CHECK_THAT(r.out, Catch::Contains("SiLU size=8192"));
  CHECK_THAT(r.out, Catch::Contains("added"));
  // --check against the profile just written: unchanged, exit 0.
  const std::string profile = dir + "/profile.json";
  REQUIRE(
      daemon.Client(SubmitSmall(dir, {"--profile", profile, "--write"})).code ==
      0);
  Result check =
      daemon.Client(SubmitSmall(dir, {"--profile", profile, "--check"}));
  INFO(check.err);
  CHECK(check.code == 0);
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: submit --budget leaves the shapes not begun untuned") {
  const std::string dir = TempDir("budget");
  Daemon daemon(dir);
  // The virtual clock's device time: the first shape alone passes 1 ms.
  Result r = daemon.Client(SubmitSmall(dir, {"--budget", "1ms", "--json"}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& untuned = doc["diff"]["untuned"];
  REQUIRE(untuned.size() == 1);
  CHECK_THAT(untuned[0]["reason"].get<std::string>(),
             Catch::Contains("budget of 0.001 s"));
  CHECK(untuned[0]["planned_device_seconds"].get<double>() > 0);
  // One shape tuned: one entry added, the untuned one has none.
  CHECK(doc["diff"]["added"].size() == 1);
  CHECK(doc["stats"]["device_seconds"].get<double>() > 0.001);
  // Progress on stderr carried the estimate down to nothing left.
  CHECK_THAT(r.err, Catch::Contains("about 0.0 s to go"));
  // The table names the untuned shape (timed again: cached figures cost no
  // device time); a bad budget never reaches the daemon.
  Result table =
      daemon.Client(SubmitSmall(dir, {"--budget", "1ms", "--remeasure"}));
  REQUIRE(table.code == 0);
  CHECK_THAT(table.out, Catch::Contains("1 shape left untuned"));
  Result bad = daemon.Client(SubmitSmall(dir, {"--budget", "soon"}));
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--budget"));
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: a profile that differs fails --check with exit 3") {
  const std::string dir = TempDir("check");
  Daemon daemon(dir);
  const std::string profile = dir + "/stale.json";
  std::ofstream(profile)
      << "{\"entries\": [\n{\"operator\": \"SiLU\", \"size\": 8192, "
         "\"tile_size\": 1024, \"num_aie_columns\": 1}\n]}\n";
  Result r = daemon.Client(SubmitSmall(dir, {"--profile", profile, "--check"}));
  INFO(r.err);
  CHECK(r.code == 3);
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: submit --check weighs a change by its gain over the model") {
  const std::string dir = TempDir("check_min_gain");
  Daemon daemon(dir);
  const std::string profile = dir + "/stale.json";
  std::ofstream(profile)
      << "{\"entries\": [\n{\"operator\": \"SiLU\", \"size\": 8192, "
         "\"tile_size\": 1024, \"num_aie_columns\": 1}\n]}\n";
  // The default threshold, 0.1% of the model's time: one column of eight
  // is far slower, so the stale entry counts.
  Result r = daemon.Client(
      SubmitSmall(dir, {"--profile", profile, "--check", "--json"}));
  INFO(r.err);
  REQUIRE(r.code == 3);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& diff = doc["diff"];
  REQUIRE(diff["has_model_time"] == true);
  const double model_us = diff["model_time_us"].get<double>();
  CHECK(model_us > 0);
  const nlohmann::json& check = doc["check"];
  CHECK(check["weighed"] == true);
  CHECK(check["fails"] == true);
  CHECK(check["threshold_us"].get<double>() == Approx(0.001 * model_us));
  const nlohmann::json* silu = nullptr;
  for (const nlohmann::json& e : check["entries"]) {
    if (e["entry"] == "SiLU size=8192") silu = &e;
  }
  REQUIRE(silu != nullptr);
  CHECK((*silu)["kind"] == "changed");
  CHECK((*silu)["counts"] == true);
  // Its weighted gain is the diff's, its step's gain times the one step.
  REQUIRE(diff["changed"].size() >= 1);
  const double gain = (*silu)["weighted_gain_us"].get<double>();
  CHECK(gain > 0);
  CHECK_THAT(r.err, Catch::Contains("counts"));
  // A threshold above that gain: the check passes, the entry still listed.
  const std::string above = std::to_string(static_cast<int>(gain) + 1) + "us";
  Result passes = daemon.Client(SubmitSmall(
      dir, {"--profile", profile, "--check", "--check-min-gain", above}));
  INFO(passes.err);
  CHECK(passes.code == 0);
  CHECK_THAT(passes.out, Catch::Contains("SiLU size=8192"));
  CHECK_THAT(passes.err, Catch::Contains("no entry's gain clears "
                                         "--check-min-gain"));
  // A bad threshold never reaches the daemon.
  Result bad = daemon.Client(SubmitSmall(
      dir, {"--profile", profile, "--check", "--check-min-gain", "-1%"}));
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--check-min-gain"));
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: two clients at once are both served, in queue order") {
  const std::string dir = TempDir("two");
  Daemon daemon(dir);
  auto first = daemon.StartClient({"submit", kExample, "--rounds", "2",
                                   "--calls", "3", "--client", "first"});
  REQUIRE(!daemon.WaitForJob("JOB_STATE_RUNNING").is_null());
  auto second = daemon.StartClient(SubmitSmall(dir, {"--client", "second"}));
  REQUIRE(first->Wait(600));
  REQUIRE(second->Wait(600));
  INFO(first->Stderr() << second->Stderr());
  CHECK(first->exit_code() == 0);
  CHECK(second->exit_code() == 0);
  nlohmann::json jobs = daemon.Jobs();
  REQUIRE(jobs.size() == 2);
  std::map<std::string, nlohmann::json> by_client;
  for (const auto& j : jobs) by_client[j["client"]] = j;
  CHECK(by_client["first"]["state"] == "JOB_STATE_SUCCEEDED");
  CHECK(by_client["second"]["state"] == "JOB_STATE_SUCCEEDED");
  // The second started only after the first ended.
  CHECK(std::stoll(by_client["second"]["started_unix_ms"].get<std::string>()) >=
        std::stoll(by_client["first"]["ended_unix_ms"].get<std::string>()));
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: cancel stops a running job") {
  const std::string dir = TempDir("cancel");
  Daemon daemon(dir);
  Result submitted =
      daemon.Client({"submit", kExample, "--detach", "--json"}, 30);
  REQUIRE(submitted.code == 0);
  const std::string job =
      nlohmann::json::parse(submitted.out)["job_id"].get<std::string>();
  REQUIRE(!daemon.WaitForJob("JOB_STATE_RUNNING").is_null());
  Result cancel = daemon.Client({"cancel", job}, 30);
  INFO(cancel.err);
  CHECK(cancel.code == 0);
  CHECK(!daemon.WaitForJob("JOB_STATE_CANCELLED").is_null());
  Result result = daemon.Client({"result", job}, 30);
  CHECK(result.code == 1);
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: a client killed mid-job cancels its job") {
  const std::string dir = TempDir("killed");
  Daemon daemon(dir);
  auto client = daemon.StartClient({"submit", kExample});
  REQUIRE(!daemon.WaitForJob("JOB_STATE_RUNNING").is_null());
  client->Signal(SIGKILL);
  REQUIRE(client->Wait(10));
  CHECK(!daemon.WaitForJob("JOB_STATE_CANCELLED").is_null());
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: detach, then watch, and the result after the client is gone") {
  const std::string dir = TempDir("detach");
  Daemon daemon(dir);
  Result submitted = daemon.Client(
      {"submit", WriteSmall(dir), "--detach", "--json", "--rounds", "3"}, 30);
  REQUIRE(submitted.code == 0);
  const std::string job =
      nlohmann::json::parse(submitted.out)["job_id"].get<std::string>();
  Result watch = daemon.Client({"watch", job});
  INFO(watch.err);
  CHECK(watch.code == 0);
  CHECK_THAT(watch.out, Catch::Contains("SiLU size=8192"));
  Result result = daemon.Client({"result", job, "--json"}, 30);
  REQUIRE(result.code == 0);
  nlohmann::json doc = nlohmann::json::parse(result.out);
  CHECK(doc["profile"]["entries"].size() == 2);
  // And after a restart, from the jobs database.
  CHECK(daemon.Stop() == 0);
  Daemon again(dir);
  CHECK(again.Client({"result", job}, 30).code == 0);
  CHECK(again.Stop() == 0);
}

TEST_CASE("e2e: a bad recording gets INVALID_ARGUMENT with the field path") {
  const std::string dir = TempDir("bad");
  Daemon daemon(dir);
  // Straight to the daemon: the client would refuse it before sending.
  auto channel =
      grpc::CreateChannel(daemon.server(), grpc::InsecureChannelCredentials());
  auto stub = v1::Tuner::NewStub(channel);
  v1::AutotuneRequest request;
  request.mutable_calls()->set_format_version(1);
  request.mutable_calls()->add_operators();  // no class name
  request.mutable_calls()
      ->add_calls()
      ->mutable_recording()
      ->add_steps()
      ->set_op(7);
  grpc::ClientContext context;
  auto reader = stub->Autotune(&context, request);
  v1::AutotuneEvent event;
  while (reader->Read(&event)) {
  }
  grpc::Status status = reader->Finish();
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(status.error_message(), Catch::Contains("operators[0]"));
  CHECK(daemon.Client({"status"}, 30).code == 0);
  // Garbage bytes where a request should be: refused, the daemon stays up.
  std::mt19937 rng(5);
  for (const char* name : {"GetResult", "Cancel", "ListJobs", "GetStatus"}) {
    for (int i = 0; i < 20; ++i) {
      std::string bytes(1 + rng() % 200, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      grpc::internal::RpcMethod method(
          (std::string("/irontune.v1.Tuner/") + name).c_str(),
          grpc::internal::RpcMethod::NORMAL_RPC);
      grpc::ClientContext garbage_context;
      grpc::Slice slice(bytes);
      grpc::ByteBuffer request_bytes(&slice, 1), response;
      (void)
          grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
              channel.get(), method, &garbage_context, request_bytes,
              &response);
    }
  }
  CHECK(daemon.Client({"status"}, 30).code == 0);
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: a full queue gets RESOURCE_EXHAUSTED") {
  const std::string dir = TempDir("full");
  Daemon daemon(dir, {"--queue-limit", "1"});
  REQUIRE(daemon.Client({"submit", kExample, "--detach"}, 30).code == 0);
  REQUIRE(!daemon.WaitForJob("JOB_STATE_RUNNING").is_null());
  REQUIRE(daemon.Client({"submit", kExample, "--detach"}, 30).code == 0);
  Result third = daemon.Client({"submit", kExample, "--detach"}, 30);
  CHECK(third.code == 1);
  CHECK_THAT(third.err, Catch::Contains("full"));
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: --no-build-spare keeps every build thread for what is asked") {
  const std::string dir = TempDir("spare");
  {
    Daemon daemon(dir, {"--build-jobs", "3"});
    CHECK(daemon.Stop() == 0);
    CHECK_THAT(daemon.Log(), Catch::Contains("build pool: 3 threads\n"));
  }
  Daemon daemon(dir, {"--build-jobs", "3", "--no-build-spare"});
  CHECK(daemon.Stop() == 0);
  CHECK_THAT(daemon.Log(),
             Catch::Contains(
                 "build pool: 3 threads, none building with time to spare"));
}

TEST_CASE("e2e: SIGTERM mid-job exits cleanly") {
  const std::string dir = TempDir("sigterm");
  Daemon daemon(dir, {}, "realtime");
  REQUIRE(daemon.Client({"submit", kExample, "--detach"}, 30).code == 0);
  REQUIRE(!daemon.WaitForJob("JOB_STATE_RUNNING").is_null());
  CHECK(daemon.Stop(10) == 0);
  // The job ended cancelled, as a restarted daemon reports.
  Daemon again(dir);
  nlohmann::json jobs = again.Jobs();
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0]["state"] == "JOB_STATE_CANCELLED");
  CHECK(again.Stop() == 0);
}

TEST_CASE("e2e: a restart keeps the cache") {
  const std::string dir = TempDir("restart");
  auto stats = [&](Daemon& d) {
    Result r = d.Client(SubmitSmall(dir, {"--json"}));
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["stats"];
  };
  nlohmann::json first, second;
  {
    Daemon daemon(dir);
    first = stats(daemon);
    CHECK(daemon.Stop() == 0);
  }
  {
    Daemon daemon(dir);
    second = stats(daemon);
    CHECK(daemon.Stop() == 0);
  }
  // The first job timed every setting; after the restart each is a hit
  // from the cache the first job filled (a winner is still re-timed).
  REQUIRE(first["settings_timed"].get<int>() > 0);
  CHECK(first.value("cache_hits", 0) == 0);
  CHECK(second.value("cache_hits", 0) > 0);
}

// grpc.health.v1.Health/Check with an empty request, encoded by hand (the
// health proto's generated code is not installed). 1 is SERVING.
int HealthStatus(const std::string& target) {
  auto channel =
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                   grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  grpc::Slice empty;
  grpc::ByteBuffer request(&empty, 1), response;
  grpc::Status s =
      grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel.get(), method, &context, request, &response);
  if (!s.ok()) return -1;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return -1;
  std::string bytes;
  for (const auto& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  // HealthCheckResponse{status = 1}: field 1, varint.
  if (bytes.size() == 2 && bytes[0] == 0x08) return bytes[1];
  return bytes.empty() ? 0 : -1;
}

TEST_CASE("e2e: the health service answers SERVING over loopback TCP") {
  const std::string dir = TempDir("health");
  Daemon daemon(dir,
                {"--listen", "127.0.0.1:0", "--allow-loopback-without-tokens"});
  const std::string tcp = daemon.TcpAddress();
  CHECK(HealthStatus(tcp) == 1);
  // Per-service probes: irontune.v1.Tuner has its own status.
  Result tuner = Run(
      {kClient, "--server", tcp, "health", "--service", "irontune.v1.Tuner"},
      dir, 30);
  CHECK(tuner.code == 0);
  CHECK(tuner.out == "SERVING\n");
  Result status = Run({kClient, "--server", tcp, "status"}, dir, 30);
  CHECK(status.code == 0);
  CHECK_THAT(status.out, Catch::Contains("NPU Strix"));
  CHECK(daemon.Stop() == 0);
}

TEST_CASE("e2e: the client explains a daemon that is not running") {
  const std::string dir = TempDir("absent");
  Result r =
      Run({kClient, "--server", "unix:" + dir + "/nothing", "status"}, dir, 30);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("irontuned"));
}

}  // namespace
}  // namespace irontune::e2e
