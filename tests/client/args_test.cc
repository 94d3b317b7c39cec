// Argument handling that needs no daemon: server and timeout resolution,
// error messages, measure's settings and values, usage errors.
#include <catch2/catch.hpp>
#include <sstream>

#include "absl/strings/cord.h"
#include "client/cli.h"
#include "client/measure_command.h"
#include "client/remote.h"
#include "common/value.h"

namespace irontune {
namespace {

TEST_CASE("the server is --server, else IRONTUNE_SERVER, else the default") {
  CHECK(ResolveServer("localhost:7070", "unix:/x.sock") == "localhost:7070");
  CHECK(ResolveServer("", "unix:/x.sock") == "unix:/x.sock");
  CHECK(ResolveServer("", "") == "unix:/run/irontune/irontuned.sock");
}

TEST_CASE("--timeout overrides the command's default; 0 is none") {
  CHECK(ResolveTimeout(-1, kUnaryTimeoutS) == kUnaryTimeoutS);
  CHECK(ResolveTimeout(0, kUnaryTimeoutS) == 0);
  CHECK(ResolveTimeout(5, kAutotuneTimeoutS) == 5);
  CHECK(kAutotuneTimeoutS == 0);
}

TEST_CASE("errors from the daemon keep its field path") {
  std::string m =
      DescribeRpcError(absl::InvalidArgumentError(
                           "calls[0].recording.steps[3].op: no operator 7"),
                       "unix:/s");
  CHECK(m ==
        "irontuned refused the request: calls[0].recording.steps[3].op: "
        "no operator 7");
  // The daemon's own UNAVAILABLE (the NPU held elsewhere) is not a missing
  // daemon.
  std::string held = DescribeRpcError(absl::UnavailableError("NPU held"), "x");
  CHECK_THAT(held, Catch::Contains("UNAVAILABLE: NPU held"));
  CHECK_THAT(held, !Catch::Contains("systemctl"));
}

v1::Operator Gemm() {
  v1::Operator op;
  op.set_class_name("GEMM");
  v1::Tunable* t = op.add_tunables();
  t->set_name("tile_m");
  *t->mutable_value() = IntValue(64);
  v1::Tunable* b = op.add_tunables();
  b->set_name("b_col_maj");
  *b->mutable_value() = BoolValue(true);
  v1::Tunable* s = op.add_tunables();
  s->set_name("mode");
  *s->mutable_value() = StringValue("fast");
  return op;
}

TEST_CASE(
    "a setting names some tunables; the rest keep their recorded values") {
  absl::StatusOr<v1::Setting> s =
      ParseSetting(Gemm(), "tile_m=128, b_col_maj=false");
  REQUIRE(s.ok());
  REQUIRE(s->tunables_size() == 3);
  CHECK(s->tunables(0).value().int_value() == 128);
  CHECK(s->tunables(1).value().bool_value() == false);
  CHECK(s->tunables(2).value().string_value() == "fast");
}

TEST_CASE("bad settings are refused with what is wrong") {
  auto bad = [](const std::string& text) {
    absl::StatusOr<v1::Setting> s = ParseSetting(Gemm(), text);
    REQUIRE_FALSE(s.ok());
    return std::string(s.status().message());
  };
  CHECK_THAT(
      bad("tile_q=1"),
      Catch::Contains("no tunable tile_q (it has: tile_m, b_col_maj, mode)"));
  CHECK_THAT(bad("tile_m=big"), Catch::Contains("tile_m=big"));
  CHECK_THAT(bad("b_col_maj=1"), Catch::Contains("b_col_maj=1"));
  CHECK_THAT(bad("tile_m=1,tile_m=2"), Catch::Contains("given twice"));
  CHECK_THAT(bad("tile_m"), Catch::Contains("expected name=value"));
}

TEST_CASE("per-call values are name=integer") {
  google::protobuf::Map<std::string, int64_t> values;
  REQUIRE(ParseCallValues({"context=2048", "rows=256"}, &values).ok());
  CHECK(values["context"] == 2048);
  CHECK(values["rows"] == 256);
  CHECK_FALSE(ParseCallValues({"context"}, &values).ok());
  CHECK_FALSE(ParseCallValues({"context=long"}, &values).ok());
  CHECK_FALSE(ParseCallValues({"=3"}, &values).ok());
}

TEST_CASE("an operator is chosen by index or by shape") {
  v1::Calls calls;
  *calls.add_operators() = Gemm();
  CHECK(SelectOperator(calls, 0, "").ok());
  CHECK_THAT(std::string(SelectOperator(calls, 3, "").status().message()),
             Catch::Contains("has 1 operators"));
  CHECK_FALSE(SelectOperator(calls, -1, "GEMV M=1").ok());
  v1::Param* m = calls.mutable_operators(0)->add_params();
  m->set_name("M");
  m->mutable_value()->set_int_value(256);
  v1::Param* d = calls.mutable_operators(0)->add_params();
  d->set_name("dtype_in");
  d->mutable_value()->set_string_value("bf16");
  CHECK(SelectOperator(calls, -1, "GEMM M=256").ok());
  CHECK(SelectOperator(calls, -1, "GEMM M=256 dtype_in=bf16").ok());
  CHECK(SelectOperator(calls, -1, "GEMM dtype_in=\"bf16\"").ok());
  CHECK_FALSE(SelectOperator(calls, -1, "GEMM M=512").ok());
}

int Run(std::vector<std::string> args, std::string* err = nullptr) {
  args.insert(args.begin(), "irontune-client");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, e;
  int code = RunClient(static_cast<int>(argv.size()), argv.data(), out, e);
  if (err) *err = e.str();
  return code;
}

const std::string kExample =
    std::string(IRONTUNE_SOURCE_DIR) + "/examples/llama-3.2-1b.rec";

TEST_CASE("usage errors of the remote commands exit 2 before any call") {
  std::string err;
  CHECK(Run({"submit"}) == kExitUsage);
  CHECK(Run({"submit", kExample, "--priority", "urgent"}) == kExitUsage);
  CHECK(Run({"submit", kExample, "--write"}, &err) == kExitUsage);
  CHECK_THAT(err, Catch::Contains("need --profile"));
  CHECK(Run({"submit", kExample, "--profile", "p.json", "--detach",
             "--check"}) == kExitUsage);
  CHECK(Run({"--timeout", "-3", "status"}) == kExitUsage);
  CHECK(Run({"cancel"}) == kExitUsage);
  CHECK(Run({"cache"}) == kExitUsage);
  CHECK(Run({"cache", "import"}) == kExitUsage);
  CHECK(Run({"measure", kExample}, &err) == kExitUsage);
  CHECK_THAT(err, Catch::Contains("exactly one of --op and --shape"));
}

TEST_CASE("a bad recording is refused locally, naming the file") {
  std::string err;
  CHECK(Run({"submit", "/nonexistent/model.rec", "--server",
             "unix:/nonexistent.sock"},
            &err) == kExitError);
  CHECK_THAT(err, Catch::Contains("/nonexistent/model.rec"));
}

TEST_CASE("--help documents the exit codes and the environment") {
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
