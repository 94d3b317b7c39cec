#include "daemon/xrt/artifact_manifest.h"

#include <string>

#include "catch2/catch.hpp"

namespace irontune {
namespace {

// A full-ELF manifest as the artifact store writes it, `symbols` and
// `buffers` spliced in.
std::string Elf(const std::string& symbols = "[]",
                const std::string& buffers =
                    R"({"s0.A": {"arena": "input", "offset": 0, "nbytes": 64},
                        "s0.C": {"arena": "output", "offset": 8,
                                 "nbytes": 16}})",
                const std::string& arenas =
                    R"([{"name": "input", "nbytes": 64},
                        {"name": "output", "nbytes": 32},
                        {"name": "scratch", "nbytes": 0}])") {
  return R"({"format": "irontune-xrt-artifact/2", "packaging": "full_elf",
             "elf": "/a/d.elf", "arenas": )" +
         arenas + R"(, "buffers": )" + buffers + R"(, "symbols": )" + symbols +
         "}";
}

TEST_CASE("an xclbin-chain manifest parses and prints back",
          "[xrt][manifest]") {
  const std::string text = R"({"format": "irontune-xrt-artifact/2",
    "packaging": "xclbin_chain", "xclbin": "/a/d.xclbin",
    "kernel": "f1a2b3c4_op0", "insts": "/a/insts.bin",
    "symbols": [{"name": "seq_len", "insts_word": 57}]})";
  absl::StatusOr<XrtManifest> m = ParseXrtManifest(text);
  REQUIRE(m.ok());
  CHECK(m->packaging == v1::PACKAGING_XCLBIN_CHAIN);
  CHECK(m->xclbin == "/a/d.xclbin");
  CHECK(m->kernel == "f1a2b3c4_op0");
  CHECK(m->insts == "/a/insts.bin");
  REQUIRE(m->symbols.size() == 1);
  CHECK(m->symbols[0].name == "seq_len");
  CHECK(m->symbols[0].insts_word == 57);
  CHECK(m->symbols[0].scratchpad_word == -1);
  absl::StatusOr<XrtManifest> again = ParseXrtManifest(XrtManifestJson(*m));
  REQUIRE(again.ok());
  CHECK(again->insts == m->insts);
  CHECK(again->symbols[0].insts_word == 57);
}

TEST_CASE("an xclbin chain may leave its kernel to the xclbin",
          "[xrt][manifest]") {
  absl::StatusOr<XrtManifest> m = ParseXrtManifest(
      R"({"format": "irontune-xrt-artifact/2", "packaging": "xclbin_chain",
          "xclbin": "/a/d.xclbin", "insts": "/a/i.bin"})");
  REQUIRE(m.ok());
  CHECK(m->kernel.empty());
  CHECK(ParseXrtManifest(XrtManifestJson(*m))->kernel.empty());
}

TEST_CASE("a full-ELF manifest names its arenas and each buffer's view",
          "[xrt][manifest]") {
  absl::StatusOr<XrtManifest> m = ParseXrtManifest(
      Elf(R"([{"name": "pos", "scratchpad_word": 2, "kind": "core"},
              {"name": "base", "scratchpad_word": 3, "kind": "addr"}])"));
  REQUIRE(m.ok());
  REQUIRE(m->arenas.size() == 3);
  CHECK(m->arenas[1].name == "output");
  CHECK(m->arenas[1].nbytes == 32);
  CHECK(m->views.at("s0.C").arena == 1);
  CHECK(m->views.at("s0.C").offset == 8);
  CHECK(m->views.at("s0.C").nbytes == 16);
  CHECK(m->symbols[0].kind == ValueKind::kCore);
  CHECK(m->symbols[1].kind == ValueKind::kAddr);
  absl::StatusOr<XrtManifest> again = ParseXrtManifest(XrtManifestJson(*m));
  REQUIRE(again.ok());
  CHECK(again->views.at("s0.C").offset == 8);
  CHECK(again->symbols[1].kind == ValueKind::kAddr);
  CHECK(again->arenas.size() == 3);
}

TEST_CASE("a feedback arena is argument 3", "[xrt][manifest]") {
  absl::StatusOr<XrtManifest> m =
      ParseXrtManifest(Elf("[]", "{}", R"([{"name": "input", "nbytes": 0},
                         {"name": "output", "nbytes": 0},
                         {"name": "scratch", "nbytes": 0},
                         {"name": "feedback", "nbytes": 4096}])"));
  REQUIRE(m.ok());
  CHECK(m->arenas.at(3).name == "feedback");
}

TEST_CASE("values are encoded by kind, checked after the shift",
          "[xrt][manifest]") {
  CHECK(*EncodeValue("n", 4096, ValueKind::kCore) == 16384);
  CHECK(*EncodeValue("n", -5, ValueKind::kCore) == -20);
  CHECK(*EncodeValue("n", 4096, ValueKind::kAddr) == 4096);
  CHECK(*EncodeValue("n", 7, ValueKind::kNone) == 7);
  CHECK(*EncodeValue("n", (int64_t{1} << 29) - 1, ValueKind::kCore) ==
        ((1 << 29) - 1) * 4);
  CHECK_FALSE(EncodeValue("n", int64_t{1} << 29, ValueKind::kCore).ok());
  CHECK(EncodeValue("n", int64_t{1} << 29, ValueKind::kAddr).ok());
  CHECK_FALSE(EncodeValue("n", int64_t{1} << 31, ValueKind::kAddr).ok());
}

TEST_CASE("bad manifests are refused naming the field", "[xrt][manifest]") {
  struct Case {
    std::string text;
    const char* names;
  };
  const std::string chain =
      R"({"format": "irontune-xrt-artifact/2", "packaging": "xclbin_chain",
          "xclbin": "/x", "insts": "/i", "symbols": )";
  const Case cases[] = {
      {"not json", "payload: not JSON"},
      {"[1]", "not a JSON object"},
      {R"({"format": "x", "packaging": "full_elf", "elf": "/e"})", "format"},
      // A /1 manifest (one bo per buffer, values as arguments) is refused.
      {R"({"format": "irontune-xrt-artifact/1", "packaging": "full_elf",
           "elf": "/e", "symbols": [{"name": "n", "arg": 5}]})",
       "predates full-ELF arenas"},
      {R"({"format": "irontune-xrt-artifact/2", "packaging": "pdi"})",
       "packaging"},
      {R"({"format": "irontune-xrt-artifact/2", "packaging": "full_elf"})",
       "elf: missing"},
      {R"({"format": "irontune-xrt-artifact/2", "packaging": "full_elf",
           "elf": "rel/d.elf"})",
       "not an absolute path"},
      {R"({"format": "irontune-xrt-artifact/2", "packaging": "full_elf",
           "elf": "/e", "buffers": {}})",
       "arenas: missing"},
      {Elf("[]", "{}", R"([{"name": "output", "nbytes": 0},
                           {"name": "input", "nbytes": 0},
                           {"name": "scratch", "nbytes": 0}])"),
       "arenas[0].name: \"output\", expected \"input\""},
      {Elf("[]", "{}", R"([{"name": "input", "nbytes": 0}])"),
       "not an array of 3 or 4 arenas"},
      {Elf("[]", R"({"a": {"arena": "weights", "offset": 0, "nbytes": 4}})"),
       "buffers.a.arena: \"weights\" is none of the arenas"},
      {Elf("[]", R"({"a": {"arena": "input", "offset": 2, "nbytes": 4}})"),
       "buffers.a.offset: 2 is not a multiple of 4"},
      {Elf("[]", R"({"a": {"arena": "input", "offset": 60, "nbytes": 8}})"),
       "bytes [60, 68) are not a non-empty range of arena input (64 bytes)"},
      {Elf("[]", R"({"a": {"arena": "input", "offset": 0, "nbytes": 32},
                     "b": {"arena": "input", "offset": 16, "nbytes": 32}})"),
       "buffers.b: overlaps buffer a in arena input"},
      {Elf(R"([{"name": "n", "arg": 5}])"),
       "symbols[0].arg: XRT takes no scalar arguments"},
      {Elf(R"([{"name": "n", "scratchpad_word": 2}])"),
       "symbols[0].kind: missing"},
      {Elf(R"([{"name": "n", "scratchpad_word": 2, "kind": "int"}])"),
       "symbols[0].kind: \"int\" is not \"core\" or \"addr\""},
      {Elf(R"([{"name": "n", "scratchpad_word": -3, "kind": "core"}])"),
       "symbols[0].scratchpad_word"},
      {Elf(R"([{"name": "n", "scratchpad_word": 1, "kind": "core"},
               {"name": "n", "scratchpad_word": 2, "kind": "core"}])"),
       "named twice"},
      {Elf(R"([{"name": "n", "insts_word": 1}])"),
       "symbols[0]: not a symbol of full_elf"},
      {chain + R"([{"name": "n", "scratchpad_word": 2}]})",
       "symbols[0]: not a symbol of xclbin_chain"},
      {chain + R"([{"name": "n"}]})", "symbols[0].insts_word: missing"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<XrtManifest> m = ParseXrtManifest(c.text);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(m.status().message()), Catch::Contains(c.names));
  }
}

TEST_CASE("views a step shares may coincide", "[xrt][manifest]") {
  CHECK(ParseXrtManifest(
            Elf("[]", R"({"s0.a": {"arena": "input", "offset": 0, "nbytes": 8},
                          "s1.a": {"arena": "input", "offset": 0, "nbytes": 8},
                          "s1.b": {"arena": "input", "offset": 8,
                                   "nbytes": 8}})"))
            .ok());
}

}  // namespace
}  // namespace irontune
