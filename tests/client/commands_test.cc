// The remote commands against FakeTuner (fake_tuner.h), served in-process
// on a unix socket: the real gRPC path, canned answers.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "client/cli.h"
#include "common/profile.h"
#include "tests/client/fake_tuner.h"

namespace irontune {
namespace {

struct Run {
  int code;
  std::string out;
  std::string err;
};

Run Client(std::vector<std::string> args, ClientEnvironment env = {}) {
  args.insert(args.begin(), "irontune-client");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code =
      RunClient(static_cast<int>(argv.size()), argv.data(), out, err, env);
  return {code, out.str(), err.str()};
}

const std::string kExample =
    std::string(IRONTUNE_SOURCE_DIR) + "/examples/llama-3.2-1b.rec";
const std::string kExampleProfile =
    std::string(IRONTUNE_SOURCE_DIR) + "/examples/profiles/npu2.json";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string CopyExampleProfile(const FakeServer& server) {
  std::string path = server.dir() + "/npu2.json";
  std::filesystem::copy_file(kExampleProfile, path);
  return path;
}

TEST_CASE("submit streams progress to stderr and prints the diff") {
  FakeServer server;
  std::string profile = CopyExampleProfile(server);
  Run r = Client(
      {"--server", server.address(), "submit", kExample, "--profile", profile});
  REQUIRE(r.code == kExitOk);
  CHECK_THAT(r.err, Catch::Contains("job job-1 queued, 1 ahead"));
  CHECK_THAT(r.err, Catch::Contains("shape 3/3 GEMM M=256 K=2048 N=2048"));
  CHECK_THAT(r.err, Catch::Contains("fake: all shapes timed"));
  CHECK(r.err.find('\r') == std::string::npos);  // not a terminal
  CHECK_THAT(r.out, Catch::Contains(" → "));
  CHECK_THAT(r.out, Catch::Contains("model: 40.00 ± 1.50 µs faster"));
  CHECK_THAT(r.out, Catch::Contains("42 settings timed"));
  // Without --write the profile is left alone.
  CHECK(Read(profile) == Read(kExampleProfile));
}

TEST_CASE("submit on a terminal draws a bar and erases it") {
  FakeServer server;
  ClientEnvironment env;
  env.server = server.address();  // IRONTUNE_SERVER
  env.err_is_terminal = true;
  Run r = Client({"submit", kExample}, env);
  REQUIRE(r.code == kExitOk);
  CHECK_THAT(r.err, Catch::Contains("[#############.......] 3/3"));
  CHECK_THAT(r.err, Catch::Contains("\r\x1b[K"));
  CHECK_THAT(r.out, Catch::Contains("(new)"));  // added to an empty profile
}

TEST_CASE(
    "submit --write rewrites the profile; --check exits 3 on a change, 0 on "
    "none") {
  FakeServer server;
  std::string profile = CopyExampleProfile(server);
  Run check = Client({"--server", server.address(), "submit", kExample,
                      "--profile", profile, "--check"});
  CHECK(check.code == kExitProfileChanged);
  CHECK_THAT(check.err, Catch::Contains("differs from " + profile));
  CHECK(Read(profile) == Read(kExampleProfile));

  Run write = Client({"--server", server.address(), "submit", kExample,
                      "--profile", profile, "--write"});
  REQUIRE(write.code == kExitOk);
  CHECK_THAT(write.err, Catch::Contains("wrote " + profile));
  std::string written = Read(profile);
  CHECK(written != Read(kExampleProfile));
  absl::StatusOr<Profile> reloaded = Profile::Load(profile);
  REQUIRE(reloaded.ok());
  CHECK(written == reloaded->ToJson());  // the stable format

  Run again = Client({"--server", server.address(), "submit", kExample,
                      "--profile", profile, "--check"});
  CHECK(again.code == kExitOk);
  CHECK_THAT(again.out, Catch::Contains("no changes"));
}

TEST_CASE(
    "submit --check fails only on a change whose weighted gain clears "
    "--check-min-gain") {
  FakeServer server;
  const std::string profile = CopyExampleProfile(server);
  // The change: 30 +- 2 us a pass of a model of 10 ms.
  const auto check = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {
        "--server", server.address(), "submit",
        kExample,   "--profile",      profile,
        "--check",  "--client",       "weighted 30 2 10000"};
    args.insert(args.end(), more.begin(), more.end());
    return Client(args);
  };
  // The default, 0.1% of 10 ms: 10 us, which 30 - 2 x 2 clears.
  Run fails = check({});
  CHECK(fails.code == kExitProfileChanged);
  CHECK_THAT(fails.err, Catch::Contains("1 of 1 moved entry counts"));
  CHECK_THAT(fails.err, Catch::Contains("0.1% of the model's 10000.00 µs"));
  CHECK_THAT(fails.err, Catch::Contains("counts  +  RMSNorm rows=1"));
  CHECK_THAT(fails.err, Catch::Contains("+30.00 ± 2.00 µs per pass"));
  CHECK_THAT(fails.err, Catch::Contains("differs from " + profile));
  // 0.5%: 50 us. The diff still lists the entry; the check passes.
  Run passes = check({"--check-min-gain", "0.5%"});
  CHECK(passes.code == kExitOk);
  CHECK_THAT(passes.out, Catch::Contains("(new)"));
  CHECK_THAT(passes.err, Catch::Contains("below  +  RMSNorm rows=1"));
  CHECK_THAT(passes.err,
             Catch::Contains("no entry's gain clears --check-min-gain 0.5%"));
  // Microseconds a pass, the noise counted: 26 > 25, not > 27.
  CHECK(check({"--check-min-gain", "25us"}).code == kExitProfileChanged);
  CHECK(check({"--check-min-gain", "27us"}).code == kExitOk);
  CHECK(check({"--check-min-gain", "0.003"}).code == kExitOk);  // 30 us
  // The profile was never rewritten.
  CHECK(Read(profile) == Read(kExampleProfile));
}

TEST_CASE("submit --check --json adds the verdict, bad thresholds exit 2") {
  FakeServer server;
  const std::string profile = CopyExampleProfile(server);
  Run r = Client({"--server", server.address(), "submit", kExample, "--profile",
                  profile, "--check", "--json", "--client",
                  "weighted 30 2 10000", "--check-min-gain", "40us"});
  CHECK(r.code == kExitOk);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& check = doc["check"];
  CHECK(check["min_gain"] == "40 µs");
  CHECK(check["weighed"] == true);
  CHECK(check["fails"] == false);
  CHECK(check["threshold_us"] == 40.0);
  REQUIRE(check["entries"].size() == 1);
  CHECK(check["entries"][0]["kind"] == "added");
  CHECK(check["entries"][0]["weighted_gain_us"] == 30.0);
  CHECK(check["entries"][0]["counts"] == false);
  CHECK(doc["diff"]["added_gains"][0]["weighted_gain_us"] == 30.0);
  CHECK(doc["diff"]["model_time_us"] == 10000.0);

  Run bad =
      Client({"--server", server.address(), "submit", kExample, "--profile",
              profile, "--check", "--check-min-gain", "fast"});
  CHECK(bad.code == kExitUsage);
  CHECK_THAT(bad.err, Catch::Contains("--check-min-gain \"fast\""));
  Run alone = Client({"--server", server.address(), "submit", kExample,
                      "--profile", profile, "--check-min-gain", "1%"});
  CHECK(alone.code == kExitUsage);
  CHECK_THAT(alone.err, Catch::Contains("--check-min-gain needs --check"));
}

TEST_CASE(
    "submit --check against a daemon without weighted gains counts "
    "every change, and says why") {
  FakeServer server;
  const std::string profile = CopyExampleProfile(server);
  Run r = Client({"--server", server.address(), "submit", kExample, "--profile",
                  profile, "--check", "--check-min-gain", "50%"});
  CHECK(r.code == kExitProfileChanged);
  CHECK_THAT(r.err, Catch::Contains("irontuned sent no weighted gains (a "
                                    "daemon older than this client"));
  CHECK_THAT(r.err, Catch::Contains("every moved entry counts"));
}

TEST_CASE("submit --write creates a missing profile") {
  FakeServer server;
  std::string profile = server.dir() + "/new.json";
  Run r = Client({"--server", server.address(), "submit", kExample, "--profile",
                  profile, "--write", "--check"});
  CHECK(r.code == kExitProfileChanged);
  REQUIRE(Profile::Load(profile).ok());
  CHECK(Profile::Load(profile)->size() == 1);
}

TEST_CASE("submit --json prints one JSON document") {
  FakeServer server;
  Run r = Client({"--server", server.address(), "submit", kExample, "--json"});
  REQUIRE(r.code == kExitOk);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  CHECK(doc["job_id"] == "job-1");
  CHECK(doc["changed"] == true);
  CHECK(doc["profile"]["entries"].size() == 1);
  CHECK(doc["stats"]["settings_timed"] == 42);
}

TEST_CASE("submit --detach prints the job id and leaves") {
  FakeServer server;
  Run r =
      Client({"--server", server.address(), "submit", kExample, "--detach"});
  REQUIRE(r.code == kExitOk);
  CHECK(r.out == "job-9\n");
  CHECK_THAT(r.err, Catch::Contains("irontune-client watch job-9"));
}

TEST_CASE("an INVALID_ARGUMENT from the daemon is printed with its path") {
  FakeServer server;
  Run r = Client(
      {"--server", server.address(), "submit", kExample, "--rounds", "1"});
  CHECK(r.code == kExitError);
  CHECK_THAT(r.err, Catch::Contains("irontuned refused the request: "
                                    "timing.rounds: 1 round"));
}

TEST_CASE("a daemon that is not there: how to start it, exit 1") {
  std::string missing = "unix:/nonexistent-irontune-dir/irontuned.sock";
  for (const std::vector<std::string>& command :
       std::vector<std::vector<std::string>>{
           {"submit", kExample}, {"status"}, {"jobs"}, {"cancel", "job-1"}}) {
    std::vector<std::string> args = {"--server", missing};
    args.insert(args.end(), command.begin(), command.end());
    Run r = Client(args);
    CHECK(r.code == kExitError);
    CHECK_THAT(r.err, Catch::Contains("cannot reach irontuned at " + missing));
    CHECK_THAT(r.err, Catch::Contains("systemctl start irontuned"));
    CHECK_THAT(r.err, Catch::Contains("irontuned --state-dir"));
  }
}

TEST_CASE("the daemon's own UNAVAILABLE is not a missing daemon") {
  FakeServer server;
  Run r = Client(
      {"--server", server.address(), "submit", kExample, "--client", "held"});
  CHECK(r.code == kExitError);
  CHECK_THAT(r.err, Catch::Contains("UNAVAILABLE: the NPU is held by another"));
  CHECK_THAT(r.err, !Catch::Contains("systemctl"));
}

TEST_CASE("a --timeout bounds a call that does not end") {
  FakeServer server;
  Run r = Client(
      {"--server", server.address(), "--timeout", "0.3", "watch", "job-slow"});
  CHECK(r.code == kExitError);
  CHECK_THAT(r.err, Catch::Contains("did not finish before the deadline"));
}

TEST_CASE("status, jobs and cancel render the daemon's answers") {
  FakeServer server;
  Run status = Client({"--server", server.address(), "status"});
  REQUIRE(status.code == kExitOk);
  CHECK_THAT(status.out, Catch::Contains("irontuned 0.1.0-fake, up 1h02m"));
  CHECK_THAT(status.out, Catch::Contains("job-2 autotune for ci-nightly"));
  CHECK_THAT(status.out, Catch::Contains("job-3"));
  CHECK_THAT(status.out, Catch::Contains("hit rate 90.0%"));

  Run jobs = Client({"jobs", "--server", server.address(), "--limit", "2"});
  REQUIRE(jobs.code == kExitOk);
  CHECK_THAT(jobs.out, Catch::Contains("job-3"));
  CHECK_THAT(jobs.out, Catch::Contains("running"));
  CHECK_THAT(jobs.out, !Catch::Contains("job-1"));

  Run json = Client({"jobs", "--json", "--server", server.address()});
  REQUIRE(json.code == kExitOk);
  CHECK(nlohmann::json::parse(json.out)["jobs"].size() == 3);

  Run cancel = Client({"--server", server.address(), "cancel", "job-1"});
  REQUIRE(cancel.code == kExitOk);
  CHECK(cancel.out == "job-1 cancelled\n");
  Run unknown = Client({"--server", server.address(), "cancel", "job-x"});
  CHECK(unknown.code == kExitError);
  CHECK_THAT(unknown.err, Catch::Contains("no job job-x"));
}

TEST_CASE("result and watch show a job's diff and write its profile") {
  FakeServer server;
  std::string out = server.dir() + "/tuned.json";
  Run result =
      Client({"--server", server.address(), "result", "job-1", "--write", out});
  REQUIRE(result.code == kExitOk);
  CHECK_THAT(result.out, Catch::Contains("succeeded"));
  CHECK(Profile::Load(out).ok());

  Run measure = Client({"--server", server.address(), "result", "job-m"});
  REQUIRE(measure.code == kExitOk);
  CHECK_THAT(measure.out, Catch::Contains("(recorded)"));

  Run failed = Client({"--server", server.address(), "result", "job-f"});
  CHECK(failed.code == kExitError);
  CHECK_THAT(failed.out, Catch::Contains("the NPU was held elsewhere"));

  Run watch = Client({"--server", server.address(), "watch", "job-1"});
  REQUIRE(watch.code == kExitOk);
  CHECK_THAT(watch.err, Catch::Contains("shape 1/3"));
  CHECK_THAT(watch.out, Catch::Contains("1 changed, 0 added") ||
                            Catch::Contains("0 changed, 1 added"));
}

TEST_CASE("measure sends the chosen operator and settings") {
  FakeServer server;
  Run r = Client({"--server", server.address(), "measure", kExample, "--shape",
                  "GEMM M=256 K=2048 N=8192 b_col_maj=true", "--setting",
                  "tile_m=32", "--setting", "tile_m=128"});
  INFO(r.err);
  REQUIRE(r.code == kExitOk);
  CHECK_THAT(r.out, Catch::Contains("tile_m=32"));
  CHECK_THAT(r.out, Catch::Contains("-3.00 ± 0.20"));
  Run bad = Client({"--server", server.address(), "measure", kExample, "--op",
                    "0", "--setting", "nope=1"});
  CHECK(bad.code == kExitError);
  CHECK_THAT(bad.err, Catch::Contains("has no tunable nope"));
}

TEST_CASE("cache stats, export and import") {
  FakeServer server;
  Run stats = Client({"--server", server.address(), "cache", "stats"});
  REQUIRE(stats.code == kExitOk);
  CHECK_THAT(stats.out, Catch::Contains("rows      1234"));

  Run to_stdout = Client({"--server", server.address(), "cache", "export"});
  REQUIRE(to_stdout.code == kExitOk);
  CHECK(to_stdout.out == "{\"key\": \"a\"}\n{\"key\": \"b\"}\n");

  std::string file = server.dir() + "/cache.jsonl";
  REQUIRE(
      Client({"--server", server.address(), "cache", "export", file}).code ==
      kExitOk);
  CHECK(Read(file) == to_stdout.out);

  Run import = Client({"--server", server.address(), "cache", "import", file});
  REQUIRE(import.code == kExitOk);
  CHECK(import.out == "imported 2 lines from " + file + "\n");
  CHECK(server.service().imported_lines == 2);
}

}  // namespace
}  // namespace irontune
