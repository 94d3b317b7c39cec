#include "daemon/xrt/artifact_manifest.h"

#include <string>

#include "catch2/catch.hpp"

namespace irontune {
namespace {

TEST_CASE("an xclbin-chain manifest parses and prints back",
          "[xrt][manifest]") {
  const std::string text = R"({"format": "irontune-xrt-artifact/1",
    "packaging": "xclbin_chain", "xclbin": "/a/d.xclbin",
    "kernel": "MLIR_AIE", "insts": "/a/insts.bin",
    "symbols": [{"name": "seq_len", "insts_word": 57}]})";
  absl::StatusOr<XrtManifest> m = ParseXrtManifest(text);
  REQUIRE(m.ok());
  CHECK(m->packaging == v1::PACKAGING_XCLBIN_CHAIN);
  CHECK(m->xclbin == "/a/d.xclbin");
  CHECK(m->kernel == "MLIR_AIE");
  CHECK(m->insts == "/a/insts.bin");
  REQUIRE(m->symbols.size() == 1);
  CHECK(m->symbols[0].name == "seq_len");
  CHECK(m->symbols[0].insts_word == 57);
  CHECK(m->symbols[0].arg == -1);
  absl::StatusOr<XrtManifest> again = ParseXrtManifest(XrtManifestJson(*m));
  REQUIRE(again.ok());
  CHECK(again->insts == m->insts);
  CHECK(again->symbols[0].insts_word == 57);
}

TEST_CASE("a full-ELF manifest takes argument symbols", "[xrt][manifest]") {
  absl::StatusOr<XrtManifest> m = ParseXrtManifest(
      R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf",
          "elf": "/a/d.elf", "symbols": [{"name": "n", "arg": 5}]})");
  REQUIRE(m.ok());
  CHECK(m->packaging == v1::PACKAGING_FULL_ELF);
  CHECK(m->elf == "/a/d.elf");
  CHECK(m->symbols[0].arg == 5);
  CHECK(ParseXrtManifest(XrtManifestJson(*m))->symbols[0].arg == 5);
}

TEST_CASE("a full-ELF manifest takes ctrl scratchpad words",
          "[xrt][manifest]") {
  absl::StatusOr<XrtManifest> m = ParseXrtManifest(
      R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf",
          "elf": "/a/d.elf", "symbols": [{"name": "pos", "scratchpad_word": 2},
                                         {"name": "n", "arg": 5}]})");
  REQUIRE(m.ok());
  REQUIRE(m->symbols.size() == 2);
  CHECK(m->symbols[0].scratchpad_word == 2);
  CHECK(m->symbols[0].arg == -1);
  CHECK(m->symbols[1].arg == 5);
  CHECK(m->symbols[1].scratchpad_word == -1);
  absl::StatusOr<XrtManifest> again = ParseXrtManifest(XrtManifestJson(*m));
  REQUIRE(again.ok());
  CHECK(again->symbols[0].scratchpad_word == 2);
  CHECK(again->symbols[1].arg == 5);
}

TEST_CASE("bad manifests are refused naming the field", "[xrt][manifest]") {
  struct Case {
    const char* text;
    const char* names;
  };
  const Case cases[] = {
      {"not json", "payload: not JSON"},
      {"[1]", "not a JSON object"},
      {R"({"format": "x", "packaging": "full_elf", "elf": "/e"})", "format"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "pdi"})",
       "packaging"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf"})",
       "elf: missing"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf",
           "elf": "rel/d.elf"})",
       "not an absolute path"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "xclbin_chain",
           "xclbin": "/x", "kernel": "K", "insts": "/i",
           "symbols": [{"name": "n", "arg": 2}]})",
       "symbols[0].arg"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf",
           "elf": "/e", "symbols": [{"name": "n", "arg": -1}]})",
       "symbols[0].arg"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf",
           "elf": "/e", "symbols": [{"name": "n", "arg": 1},
                                    {"name": "n", "arg": 2}]})",
       "named twice"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "xclbin_chain",
           "xclbin": "/x", "kernel": "K", "insts": "/i",
           "symbols": [{"name": "n", "scratchpad_word": 2}]})",
       "symbols[0].scratchpad_word: not taken by xclbin_chain"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf",
           "elf": "/e", "symbols": [{"name": "n", "scratchpad_word": -3}]})",
       "symbols[0].scratchpad_word"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf",
           "elf": "/e", "symbols": [{"name": "n", "arg": 1,
                                     "scratchpad_word": 2}]})",
       "both arg and scratchpad_word"},
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf",
           "elf": "/e", "symbols": [{"name": "n"}]})",
       "symbols[0].arg|scratchpad_word: missing"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<XrtManifest> m = ParseXrtManifest(c.text);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(m.status().message()), Catch::Contains(c.names));
  }
}

}  // namespace
}  // namespace irontune
