#include "daemon/builder/protocol.h"

#include <sys/stat.h>

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
  CHECK(r->files.xclbin.path == "d.xclbin");
  CHECK(r->files.xclbin.fd.valid());  // what is read from now on
  CHECK(r->files.xclbin.nbytes == 2);
  CHECK(r->files.insts.nbytes == 16);
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
  f.reply["files"]["kernel"] = 7;
  CHECK(f.Error() == "reply.files.kernel is not a string");
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
  CHECK(f.Error() ==
        "reply.files.xclbin: artifact \"../outside.xclbin\": has a \"..\" "
        "component, which may leave it");
  f = ReplyFixture();
  f.reply["files"]["xclbin"] = "/etc/passwd";
  CHECK(f.Error().find("reply.files.xclbin \"/etc/passwd\" is not inside ") ==
        0);
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
  f.reply["files"]["insts"] = "missing.bin";
  CHECK(f.Error() ==
        "reply.files.insts: artifact \"missing.bin\": the file does not exist");
}

TEST_CASE("Reply files are opened with no symlink followed") {
  ReplyFixture f;
  // A symlinked directory is "inside" by its path, not by what it reaches.
  std::filesystem::create_directory_symlink("/etc", f.dir + "/sub");
  f.reply["files"]["xclbin"] = "sub/passwd";
  CHECK(f.Error() ==
        "reply.files.xclbin: artifact \"sub/passwd\": a component (\"sub\") "
        "is a symlink");
  f.reply["files"]["xclbin"] = f.dir + "/sub/passwd";  // absolute, the same
  CHECK(f.Error().find("a component (\"sub\") is a symlink") !=
        std::string::npos);
  f = ReplyFixture();
  std::filesystem::create_symlink("d.xclbin", f.dir + "/link");
  f.reply["files"]["xclbin"] = "link";  // even to a file inside
  CHECK(f.Error() ==
        "reply.files.xclbin: artifact \"link\": the file is a symlink");
  f = ReplyFixture();
  REQUIRE(::mkfifo((f.dir + "/fifo").c_str(), 0600) == 0);
  f.reply["files"]["insts"] = "fifo";  // refused, not waited on
  CHECK(f.Error() ==
        "reply.files.insts: artifact \"fifo\": is not a regular file (a "
        "fifo)");
}

// A full-ELF reply as IRON's fused image lays it out: s0.A in the input
// arena, s0.C at byte 64 of the output arena.
ReplyFixture ElfReply() {
  ReplyFixture f;
  f.request.packaging = v1::PACKAGING_FULL_ELF;
  f.reply["packaging"] = "full_elf";
  f.reply["files"] = {{"elf", "d.xclbin"}};
  f.reply["arenas"] = {{{"name", "input"}, {"nbytes", 8192}},
                       {{"name", "output"}, {"nbytes", 8256}},
                       {{"name", "scratch"}, {"nbytes", 0}}};
  f.reply["buffers"][0]["arena"] = "input";
  f.reply["buffers"][0]["offset"] = 0;
  f.reply["buffers"].push_back({{"name", "s0.C"},
                                {"step", 0},
                                {"op_buffer", 2},
                                {"nbytes", 8192},
                                {"fills", false},
                                {"drains", true},
                                {"arena", "output"},
                                {"offset", 64}});
  f.reply["symbols"] = {
      {{"name", "seq_len"}, {"scratchpad_word", 2}, {"kind", "core"}}};
  return f;
}

TEST_CASE("A full ELF reply names its arenas, views and value kinds") {
  const ReplyFixture f = ElfReply();
  absl::StatusOr<BuilderReply> r = f.Parse();
  REQUIRE(r.ok());
  CHECK(r->files.elf.path == "d.xclbin");
  REQUIRE(r->arenas.size() == 3);
  CHECK(r->arenas[1].name == "output");
  CHECK(r->arenas[1].nbytes == 8256);
  REQUIRE(r->views.size() == 2);
  CHECK(r->views[1].arena == "output");
  CHECK(r->views[1].offset == 64);
  CHECK(r->symbols.at(0).scratchpad_word == 2);
  CHECK(r->symbols.at(0).kind == "core");
}

TEST_CASE("A full ELF reply without arenas, views or kinds is refused") {
  ReplyFixture f = ElfReply();
  f.reply.erase("arenas");
  CHECK(f.Error() == "reply.arenas is missing");
  f = ElfReply();
  f.reply["buffers"][1].erase("offset");
  CHECK(f.Error() == "reply.buffers[1].offset is missing");
  f = ElfReply();
  f.reply["symbols"][0].erase("kind");
  CHECK(f.Error() == "reply.symbols[0].kind is missing");
  f = ElfReply();
  f.reply["symbols"][0]["kind"] = "int";
  CHECK(f.Error() == "reply.symbols[0].kind is \"int\", not core or addr");
  f = ElfReply();
  f.reply["symbols"] = {{{"name", "seq_len"}, {"insts_word", 4}}};
  CHECK(f.Error() == "reply.symbols[0].scratchpad_word is missing");
}

TEST_CASE("A full ELF symbol that is a kernel argument is refused") {
  ReplyFixture f = ElfReply();
  f.reply["symbols"] = {{{"name", "seq_len"}, {"arg", 4}}};
  CHECK(f.Error().find("reply.symbols[0].arg is refused: XRT takes no "
                       "scalar arguments") == 0);
}

TEST_CASE("A full ELF's arenas and views are checked") {
  ReplyFixture f = ElfReply();
  f.reply["arenas"][0]["name"] = "weights";
  CHECK(f.Error() ==
        "reply.arenas[0].name is \"weights\", not \"input\" "
        "(arena 0 is kernel argument 0)");
  f = ElfReply();
  f.reply["arenas"].erase(2);
  CHECK(f.Error().find("has 2 arenas") != std::string::npos);
  f = ElfReply();
  f.reply["arenas"].push_back({{"name", "feedback"}, {"nbytes", 64}});
  CHECK(f.Error() == "ok");
  f = ElfReply();
  f.reply["buffers"][1]["arena"] = "feedback";
  CHECK(f.Error() == "reply.buffers[1].arena \"feedback\" is no arena");
  f = ElfReply();
  f.reply["buffers"][1]["offset"] = 66;
  CHECK(f.Error() == "reply.buffers[1].offset is not a multiple of 4");
  f = ElfReply();
  f.reply["buffers"][1]["offset"] = 128;
  CHECK(f.Error() ==
        "reply.buffers[1] ends at byte 8320, past arena output's 8256");
  f = ElfReply();
  f.reply["buffers"][1]["arena"] = "input";
  f.reply["buffers"][1]["offset"] = 0;
  f.reply["arenas"][0]["nbytes"] = 16384;
  CHECK(f.Error() == "ok");  // the same view twice: a shared buffer
  f.reply["buffers"][1]["offset"] = 4096;
  CHECK(f.Error() == "reply.buffers[1] overlaps s0.A in arena input");
}

TEST_CASE("An xclbin chain reply may leave the kernel to the xclbin") {
  ReplyFixture f;
  f.reply["files"].erase("kernel");
  absl::StatusOr<BuilderReply> r = f.Parse();
  REQUIRE(r.ok());
  CHECK(r->files.kernel.empty());
  f.reply["files"]["kernel"] = "f1a2b3c4_op0";
  CHECK(f.Parse()->files.kernel == "f1a2b3c4_op0");
}

}  // namespace
}  // namespace irontune
