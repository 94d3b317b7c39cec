#include "client/cli.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "client/job_flags.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {
namespace {

struct Run {
  int code;
  std::string out;
  std::string err;
};

Run Client(std::vector<std::string> args) {
  args.insert(args.begin(), "irontune-client");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = RunClient(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

const std::string kExample =
    std::string(IRONTUNE_SOURCE_DIR) + "/examples/llama-3.2-1b.rec";

TEST_CASE("inspect prints the calls and every shape with its space") {
  Run r = Client({"inspect", kExample});
  REQUIRE(r.code == kExitOk);
  CHECK_THAT(r.out, Catch::Contains("[0] decode"));
  CHECK_THAT(r.out, Catch::Contains("[1] prefill"));
  CHECK_THAT(r.out, Catch::Contains("GEMV M=2048 K=8192"));
  CHECK_THAT(r.out, Catch::Contains("GEMM M=256 K=2048 N=8192"));
  CHECK_THAT(r.out, Catch::Contains("setting space"));
}

TEST_CASE("inspect --json agrees with the text and is valid JSON") {
  Run r = Client({"inspect", "--json", kExample});
  REQUIRE(r.code == kExitOk);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["calls"].size() == 2);
  bool found = false;
  for (const auto& shape : doc["shapes"]) {
    if (shape["class"] == "GEMM" && shape["dims"]["K"] == 8192) {
      found = true;
      // tile_m 3 x tile_k 4 x tile_n 3 x columns 4.
      CHECK(shape["space"] == 3 * 4 * 3 * 4);
    }
  }
  REQUIRE(found);
}

TEST_CASE("inspect of a missing file is an error naming it") {
  Run r = Client({"inspect", "/nonexistent/model.rec"});
  REQUIRE(r.code == kExitError);
  REQUIRE_THAT(r.err, Catch::Contains("/nonexistent/model.rec"));
}

TEST_CASE("usage errors exit 2, help exits 0") {
  CHECK(Client({}).code == kExitUsage);
  CHECK(Client({"frobnicate"}).code == kExitUsage);
  CHECK(Client({"inspect"}).code == kExitUsage);
  Run help = Client({"--help"});
  CHECK(help.code == kExitOk);
  CHECK_THAT(help.out, Catch::Contains("Exit codes"));
  Run sub = Client({"points", "--help"});
  CHECK(sub.code == kExitOk);
  CHECK_THAT(sub.out, Catch::Contains("--unit"));
}

TEST_CASE("points prints the weighted contexts") {
  Run r = Client({"points", "--context", "8192", "--count", "6", "--unit",
                  "256", "--json"});
  REQUIRE(r.code == kExitOk);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  REQUIRE(doc.size() == 6);
  CHECK(doc[0]["context"] == 256);
  CHECK(doc[5]["context"] == 8192);
  double sum = 0;
  for (const auto& p : doc) sum += p["weight"].get<double>();
  CHECK(sum == Approx(1.0));
  Run bad = Client({"points", "--context", "1000", "--unit", "256"});
  CHECK(bad.code == kExitError);
}

TEST_CASE("convert writes a recording that inspects the same") {
  std::string out = std::string(IRONTUNE_BINARY_DIR) + "/convert_test.txtpb";
  REQUIRE(Client({"convert", kExample, out}).code == kExitOk);
  Run a = Client({"inspect", kExample});
  Run b = Client({"inspect", out});
  REQUIRE(b.code == kExitOk);
  REQUIRE(a.out == b.out);
}

int RunCode(std::vector<std::string> args, std::string* err = nullptr) {
  args.insert(args.begin(), "irontune-client");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, e;
  int code = RunClient(static_cast<int>(argv.size()), argv.data(), out, e);
  if (err) *err = e.str();
  return code;
}

TEST_CASE("usage errors of the remote commands exit 2 before any call") {
  std::string err;
  CHECK(RunCode({"submit"}) == kExitUsage);
  CHECK(RunCode({"submit", kExample, "--priority", "urgent"}) == kExitUsage);
  CHECK(RunCode({"submit", kExample, "--write"}, &err) == kExitUsage);
  CHECK_THAT(err, Catch::Contains("need --profile"));
  CHECK(RunCode({"submit", kExample, "--profile", "p.json", "--detach",
                 "--check"}) == kExitUsage);
  CHECK(RunCode({"--timeout", "-3", "status"}) == kExitUsage);
  CHECK(RunCode({"cancel"}) == kExitUsage);
  CHECK(RunCode({"cache"}) == kExitUsage);
  CHECK(RunCode({"cache", "import"}) == kExitUsage);
  CHECK(RunCode({"measure", kExample}, &err) == kExitUsage);
  CHECK_THAT(err, Catch::Contains("exactly one of --op and --shape"));
}

TEST_CASE("submit --budget takes a duration, and names itself when bad") {
  CHECK(ParseBudget("90s").value() == 90);
  CHECK(ParseBudget("15m").value() == 900);
  CHECK(ParseBudget("1h").value() == 3600);
  CHECK(ParseBudget("1h30m").value() == 5400);
  CHECK(ParseBudget("2.5s").value() == 2.5);
  for (const char* bad :
       {"", "90", "abc", "15 minutes", "-5s", "0s", "0", "inf"}) {
    INFO(bad);
    const absl::StatusOr<double> s = ParseBudget(bad);
    REQUIRE_FALSE(s.ok());
    CHECK(absl::IsInvalidArgument(s.status()));
    CHECK_THAT(std::string(s.status().message()),
               Catch::StartsWith(std::string("--budget: '") + bad + "'"));
  }
  std::string err;
  CHECK(RunCode({"submit", kExample, "--budget", "soon"}, &err) == kExitUsage);
  CHECK_THAT(err, Catch::Contains("--budget"));
  CHECK_THAT(err, Catch::Contains("'soon' is not a duration"));
  CHECK(RunCode({"submit", kExample, "--budget", "-1m"}, &err) == kExitUsage);
  CHECK_THAT(err, Catch::Contains("not a positive, finite duration"));
  // Only submit has it.
  CHECK(RunCode({"measure", kExample, "--shape", "GEMV M=2048 K=8192",
                 "--budget", "1m"}) == kExitUsage);

  // The request carries it in seconds; left out, no budget.
  JobFlags flags;
  v1::AutotuneRequest request;
  ApplyJobFlags(flags, ClientEnvironment(), &request);
  CHECK(request.budget_seconds() == 0);
  flags.budget = "15m";
  ApplyJobFlags(flags, ClientEnvironment(), &request);
  CHECK(request.budget_seconds() == 900);
}

TEST_CASE("a bad recording is refused locally, naming the file") {
  std::string err;
  CHECK(RunCode({"submit", "/nonexistent/model.rec", "--server",
                 "unix:/nonexistent.sock"},
                &err) == kExitError);
  CHECK_THAT(err, Catch::Contains("/nonexistent/model.rec"));
}

// The example without its last call (the prompt chunk) and its counts: what
// a copy stopped half-way leaves. Every command that reads it refuses it.
TEST_CASE("a recording cut short is refused by inspect, convert and submit") {
  std::ifstream in(kExample, std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  v1::Calls calls;
  REQUIRE(calls.ParseFromString(whole));
  REQUIRE(calls.calls_size() == 2);
  // The first fields of the file, encoded alone, are a prefix of it.
  v1::Calls shorter = calls;
  shorter.mutable_calls()->RemoveLast();
  shorter.clear_counts();
  std::string prefix;
  {
    google::protobuf::io::StringOutputStream stream(&prefix);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    REQUIRE(shorter.SerializeToCodedStream(&coded));
  }
  REQUIRE(whole.starts_with(prefix));
  REQUIRE(prefix.size() < whole.size());
  const std::string cut_path =
      std::string(IRONTUNE_BINARY_DIR) + "/cut_example.rec";
  {
    std::ofstream out(cut_path, std::ios::binary | std::ios::trunc);
    out << prefix;
  }
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"inspect", cut_path},
           {"convert", cut_path, cut_path + ".txtpb"},
           {"submit", cut_path, "--server", "unix:/nonexistent.sock"}}) {
    INFO(args[0]);
    std::string err;
    CHECK(RunCode(args, &err) == kExitError);
    CHECK_THAT(err, Catch::Contains(cut_path) &&
                        Catch::Contains("counts: missing; the recording is "
                                        "cut short"));
  }
}

TEST_CASE("help documents the exit codes and the environment") {
  std::ostringstream out, err;
  const char* argv[] = {"irontune-client", "--help"};
  REQUIRE(RunClient(2, argv, out, err) == kExitOk);
  CHECK_THAT(out.str(),
             Catch::Contains("Exit codes: 0 success, 1 error, 2 usage, 3"));
  CHECK_THAT(out.str(), Catch::Contains("IRONTUNE_SERVER"));
  CHECK_THAT(out.str(), Catch::Contains("--server"));
  CHECK_THAT(out.str(), Catch::Contains("submit"));
}

}  // namespace
}  // namespace irontune
