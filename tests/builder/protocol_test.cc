#include "daemon/builder/protocol.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "catch2/catch.hpp"
#include "nlohmann/json.hpp"
#include "tests/builder/builder_fixtures.h"

namespace irontune {
namespace {

using Json = nlohmann::json;
using testing::GemmRequest;

TEST_CASE("The request carries the operator, device and runlist") {
  BuildRequest r = GemmRequest(64, v1::PACKAGING_FULL_ELF, 3);
  r.distinct = false;
  const Json j = Json::parse(RequestJson(r, "abc", "/out"));
  CHECK(j["protocol"] == 1);
  CHECK(j["recipe_hash"] == "abc");
  CHECK(j["operator"]["class"] == "GEMM");
  CHECK(j["operator"]["params"]["N"] == 128);
  CHECK(j["operator"]["tunables"]["tile_m"] == 64);
  CHECK(j["operator"]["buffers"][2]["name"] == "C");
  CHECK(j["operator"]["buffers"][2]["role"] == "out");
  CHECK(j["operator"]["buffers"][2]["dtype"] == "bf16");
  CHECK(j["operator"]["buffers"][2]["shape"] == Json::array({64, 128}));
  CHECK(j["operator"]["values"][0]["symbol"] == "seq_len");
  CHECK(j["device"]["generation"] == "npu2");
  CHECK(j["packaging"] == "full_elf");
  CHECK(j["steps"] == 3);
  CHECK(j["distinct"] == false);
  CHECK(j["output_dir"] == "/out");
}

TEST_CASE("Values keep their JSON types in the request") {
  BuildRequest r = GemmRequest();
  testing::AddParam(r.op, "scale", DoubleValue(2.0));
  testing::AddParam(r.op, "causal", BoolValue(true));
  testing::AddParam(r.op, "dtype", StringValue("bf16"));
  const Json p = Json::parse(RequestJson(r, "x", "/o"))["operator"]["params"];
  CHECK(p["scale"].is_number_float());
  CHECK(p["causal"].is_boolean());
  CHECK(p["dtype"] == "bf16");
  CHECK(p["M"].is_number_integer());
}

TEST_CASE("The recipe hash follows everything a build follows") {
  const BuildRequest base = GemmRequest();
  const std::string h = BuildRecipeHash(base, "env");
  CHECK(h.size() == 64);
  CHECK(BuildRecipeHash(base, "env") == h);
  CHECK(BuildRecipeHash(base, "env2") != h);
  CHECK(BuildRecipeHash(GemmRequest(32), "env") != h);
  BuildRequest r = base;
  r.steps = 2;
  CHECK(BuildRecipeHash(r, "env") != h);
  r = base;
  r.distinct = false;
  CHECK(BuildRecipeHash(r, "env") != h);
  r = base;
  r.packaging = v1::PACKAGING_FULL_ELF;
  CHECK(BuildRecipeHash(r, "env") != h);
  r = base;
  r.platform.generation = "npu1";
  CHECK(BuildRecipeHash(r, "env") != h);
  // A tunable's domain steers the search, not the build.
  r = base;
  *r.op.mutable_tunables(0)->add_domain() = IntValue(128);
  CHECK(BuildRecipeHash(r, "env") == h);
}

struct ReplyFixture {
  std::string dir = e2e::TempDir("reply");
  BuildRequest request = GemmRequest();
  Json reply = {
      {"protocol", 1},
      {"status", "built"},
      {"recipe_hash", "r1"},
      {"artifact_hash", "h1"},
      {"packaging", "xclbin_chain"},
      {"files",
       {{"xclbin", "d.xclbin"}, {"kernel", "MLIR_AIE"}, {"insts", "i.bin"}}},
      {"buffers",
       {{{"name", "s0.A"},
         {"step", 0},
         {"op_buffer", 0},
         {"nbytes", 8192},
         {"fills", true},
         {"drains", false}}}},
      {"symbols", {{{"name", "seq_len"}, {"insts_word", 3}}}}};

  ReplyFixture() {
    std::ofstream(dir + "/d.xclbin") << "{}";
    std::ofstream(dir + "/i.bin") << std::string(16, '\0');
  }
  absl::StatusOr<BuilderReply> Parse() const {
    return ParseReply(reply.dump(), request, "r1", dir);
  }
  // The error text of parsing the reply.
  std::string Error() const {
    absl::StatusOr<BuilderReply> r = Parse();
    return r.ok() ? "ok" : std::string(r.status().message());
  }
};

TEST_CASE("A good reply parses") {
  ReplyFixture f;
  absl::StatusOr<BuilderReply> r = f.Parse();
  REQUIRE(r.ok());
  CHECK(r->status == ReplyStatus::kBuilt);
  CHECK(r->files.xclbin == "d.xclbin");
  CHECK(r->buffers.at(0).nbytes == 8192);
  CHECK(r->symbols.at(0).insts_word == 3);
  CHECK(r->builder_artifact_hash == "h1");
}

TEST_CASE("Refused and failed replies need only their reason") {
  const BuildRequest request = GemmRequest();
  auto refused =
      ParseReply(R"({"protocol": 1, "status": "refused", "reason": "L1 full"})",
                 request, "r", "/nonexistent");
  REQUIRE(refused.ok());
  CHECK(refused->status == ReplyStatus::kRefused);
  CHECK(refused->reason == "L1 full");
  auto failed =
      ParseReply(R"({"protocol": 1, "status": "failed"})", request, "r", "/x");
  REQUIRE(failed.ok());
  CHECK(failed->status == ReplyStatus::kFailed);
}

TEST_CASE("Malformed replies name the field") {
  ReplyFixture f;
  f.reply["protocol"] = 2;
  CHECK(f.Error() == "reply.protocol is 2, not in [1, 1]");
  f = ReplyFixture();
  f.reply["status"] = "maybe";
  CHECK(f.Error() == "reply.status is \"maybe\", not built, refused or failed");
  f = ReplyFixture();
  f.reply["buffers"][0]["nbytes"] = "8192";
  CHECK(f.Error() == "reply.buffers[0].nbytes is not an integer");
  f = ReplyFixture();
  f.reply["buffers"][0]["op_buffer"] = 3;
  CHECK(f.Error() == "reply.buffers[0].op_buffer is 3, not in [0, 2]");
  f = ReplyFixture();
  f.reply["buffers"][0]["step"] = 1;
  CHECK(f.Error() == "reply.buffers[0].step is 1, not in [0, 0]");
  f = ReplyFixture();
  f.reply["buffers"].push_back(f.reply["buffers"][0]);
  CHECK(f.Error() == "reply.buffers[1] repeats the name \"s0.A\"");
  f = ReplyFixture();
  f.reply["symbols"][0]["insts_word"] = 4;  // i.bin has 4 words
  CHECK(f.Error() == "reply.symbols[0].insts_word is 4, not in [0, 3]");
  f = ReplyFixture();
  f.reply["files"].erase("kernel");
  CHECK(f.Error() == "reply.files.kernel is missing");
  f = ReplyFixture();
  f.reply["recipe_hash"] = "r2";
  CHECK(f.Error() == "reply.recipe_hash is \"r2\", not the request's \"r1\"");
  f = ReplyFixture();
  f.reply["packaging"] = "full_elf";
  CHECK(f.Error() ==
        "reply.packaging is \"full_elf\", not the request's \"xclbin_chain\"");
  CHECK(ParseReply("", f.request, "r1", f.dir).status().message() ==
        "the reply is empty");
  CHECK(ParseReply("[1, 2]", f.request, "r1", f.dir).status().message() ==
        "the reply is not one JSON object");
}

TEST_CASE("Reply files must be non-empty files inside the output dir") {
  ReplyFixture f;
  f.reply["files"]["xclbin"] = "../outside.xclbin";
  CHECK(f.Error().find("reply.files.xclbin \"../outside.xclbin\" is not "
                       "inside ") == 0);
  f = ReplyFixture();
  f.reply["files"]["xclbin"] = "/etc/passwd";
  CHECK(f.Error().find("is not inside") != std::string::npos);
  f = ReplyFixture();
  f.reply["files"]["xclbin"] = f.dir + "/d.xclbin";  // absolute, inside
  CHECK(f.Error() == "ok");
  f = ReplyFixture();
  std::ofstream(f.dir + "/empty.bin").flush();
  f.reply["files"]["insts"] = "empty.bin";
  CHECK(f.Error() == "reply.files.insts names an empty file");
  f = ReplyFixture();
  std::ofstream(f.dir + "/odd.bin") << "12345";
  f.reply["files"]["insts"] = "odd.bin";
  CHECK(f.Error() == "reply.files.insts is 5 bytes, not whole 32-bit words");
  f = ReplyFixture();
  std::filesystem::create_symlink("/etc/hostname", f.dir + "/link");
  f.reply["files"]["xclbin"] = "link";
  CHECK(f.Error().find("is not a regular file") != std::string::npos);
}

TEST_CASE("A full ELF reply names the ELF and argument symbols") {
  ReplyFixture f;
  f.request.packaging = v1::PACKAGING_FULL_ELF;
  f.reply["packaging"] = "full_elf";
  f.reply["files"] = {{"elf", "d.xclbin"}};
  f.reply["symbols"] = {{{"name", "seq_len"}, {"arg", 4}}};
  absl::StatusOr<BuilderReply> r = f.Parse();
  REQUIRE(r.ok());
  CHECK(r->files.elf == "d.xclbin");
  CHECK(r->symbols.at(0).arg == 4);
  f.reply["symbols"] = {{{"name", "seq_len"}, {"scratchpad_word", 2}}};
  r = f.Parse();
  REQUIRE(r.ok());
  CHECK(r->symbols.at(0).scratchpad_word == 2);
  CHECK(r->symbols.at(0).arg == -1);
  f.reply["symbols"] = {{{"name", "seq_len"}, {"insts_word", 4}}};
  CHECK(f.Error() == "reply.symbols[0].arg is missing");
}

}  // namespace
}  // namespace irontune
