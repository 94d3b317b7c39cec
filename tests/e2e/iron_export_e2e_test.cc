// End to end: `cache export --iron DIR` through the real irontuned and
// irontune-client writes IRON's cost cache layout (one file per key under
// DIR/<platform>/<pmode>/, IRON's Measurement fields), skipping and
// counting what IRON cannot look up; importing that tree into a fresh
// irontuned gives back the same figures. Waits are bounds, never
// assertions on time.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "google/protobuf/text_format.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/process.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kExportDaemon = IRONTUNE_IRONTUNED;
const std::string kExportClient = IRONTUNE_CLIENT;
const std::string kExportSource = IRONTUNE_SOURCE_DIR;

std::unique_ptr<DaemonProcess> StartExportDaemon(const std::string& dir) {
  fs::create_directories(dir);
  const std::string socket = "unix:" + dir + "/sock";
  auto daemon = std::make_unique<DaemonProcess>(
      "irontuned", SimDaemonArgv(kExportDaemon, dir, socket), dir,
      kExportClient, socket);
  REQUIRE(daemon->Up());
  return daemon;
}

// The export's "iron_cost" lines under 32-hex-digit keys.
std::vector<std::string> IronKeyLines(const std::string& exported) {
  std::vector<std::string> out;
  std::istringstream in(exported);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("kind", "") == "iron_cost" &&
        j.value("key", "").size() == 32) {
      out.push_back(line);
    }
  }
  return out;
}

TEST_CASE("e2e: cache export --iron writes IRON's layout, it imports back",
          "[e2e][iron]") {
  const std::string dir = TempDir("iron-export");
  const std::string fixtures = kExportSource + "/tests/e2e/testdata/iron-costs";
  auto daemon = StartExportDaemon(dir + "/a");
  // A filled cache: IRON's per-key figures and CostTable steps, and
  // irontune's own measurements from a small submit.
  REQUIRE(daemon->Client({"cache", "import", fixtures + "/costs"}, 60).code ==
          0);
  REQUIRE(daemon
              ->Client({"cache", "import",
                        fixtures + "/tables/llama-decode-npu2.json"},
                       60)
              .code == 0);
  const std::string recording = dir + "/small.txtpb";
  std::string text;
  google::protobuf::TextFormat::PrintToString(
      testing::OneCall("small", {testing::Add2048({256, 512})},
                       {{"p", "q", "r"}}),
      &text);
  std::ofstream(recording) << text;
  Result submit = daemon->Client(
      {"submit", recording, "--rounds", "3", "--calls", "5"}, 300);
  INFO(submit.out << submit.err);
  REQUIRE(submit.code == 0);

  const std::string out = dir + "/iron";
  Result exported = daemon->Client({"cache", "export", "--iron", out}, 60);
  INFO(exported.out << exported.err);
  REQUIRE(exported.code == 0);
  CHECK_THAT(exported.out, Catch::StartsWith("wrote 2 IRON cost files under " +
                                             out + "; skipped "));
  CHECK_THAT(exported.out, Catch::Contains("skipped 3 CostTable steps"));
  CHECK_THAT(exported.out, Catch::Contains("irontune's own measurements"));

  // IRON's layout: <platform slug>/<xrt-smi's pmode>/<32 hex>.json, and
  // exactly a Measurement's fields, in its order.
  const fs::path leaf = fs::path(out) / "npu-strix" / "Default";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(leaf)) files.push_back(e.path());
  REQUIRE(files.size() == 2);
  const std::vector<std::string> fields = {
      "t_step_us", "round_us", "output",           "run",
      "pmode",     "calls",    "default_round_us", "measured"};
  for (const fs::path& f : files) {
    CHECK(f.extension() == ".json");
    CHECK(f.stem().string().find_first_not_of("0123456789abcdef") ==
          std::string::npos);
    CHECK(f.stem().string().size() == 32);
    const nlohmann::ordered_json j =
        nlohmann::ordered_json::parse(ReadFile(f.string()));
    std::vector<std::string> names;
    for (const auto& [k, v] : j.items()) names.push_back(k);
    CHECK(names == fields);
    CHECK(j.at("pmode") == "Default");
  }
  const std::string one =
      ReadFile((leaf / "0a1b2c3d4e5f60718293a4b5c6d7e8f9.json").string());
  CHECK_THAT(one, Catch::StartsWith("{\"t_step_us\": 41.25, \"round_us\": "
                                    "[41.5, 41.0, 41.25], \"output\": "
                                    "\"9f2c0d4e"));
  CHECK_THAT(one, Catch::EndsWith("\"pmode\": \"Default\", \"calls\": 20, "
                                  "\"default_round_us\": [], \"measured\": "
                                  "\"2026-06-02\"}\n"));

  // A file in this format comes out as IRON wrote it, byte for byte.
  const std::string name = "11111111111111111111111111111111.json";
  CHECK(ReadFile((leaf / name).string()) ==
        ReadFile(fixtures + "/costs/npu-strix/Default/" + name));

  // Round trip: a fresh irontuned imports the tree, the same two figures.
  auto fresh = StartExportDaemon(dir + "/b");
  Result back = fresh->Client({"cache", "import", out}, 60);
  INFO(back.out << back.err);
  REQUIRE(back.code == 0);
  CHECK_THAT(back.out,
             Catch::StartsWith("imported 2 IRON figures from 2 files in "));
  CHECK_THAT(back.out, Catch::Contains("; skipped 0\n"));
  Result before = daemon->Client({"cache", "export"}, 60);
  Result after = fresh->Client({"cache", "export"}, 60);
  REQUIRE(before.code == 0);
  REQUIRE(after.code == 0);
  CHECK(IronKeyLines(after.out) == IronKeyLines(before.out));
  CHECK(IronKeyLines(after.out).size() == 2);
}

TEST_CASE("e2e: cache export --iron refuses --pmode of no power mode",
          "[e2e][iron]") {
  const std::string dir = TempDir("iron-export-usage");
  Result r = Run({kExportClient, "cache", "export", "--iron", dir + "/x",
                  "--pmode", "Fast"},
                 dir, 30);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("not a power mode"));
}

}  // namespace
}  // namespace irontune::e2e
