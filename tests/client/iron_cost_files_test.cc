// `cache export --iron`'s writer (client/iron_cost_files.h): irontuned's
// export lines as IRON's cost cache files, checked against the names,
// fields and spelling IRON's iron/tune/measure.py writes.
#include "client/iron_cost_files.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;
using e2e::TempDir;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// An export line as CacheReader::Export writes one.
std::string Line(const std::string& kind, const std::string& key,
                 const std::string& mode = "default",
                 const std::string& platform = "npu-strix") {
  nlohmann::json m = {{"t_step_us", 41.25},
                      {"round_us", {41.5, 41.0, 100.0}},
                      {"output", "9f2c"},
                      {"run", "r7"},
                      {"power_mode", mode},
                      {"calls", 20},
                      {"default_round_us", nlohmann::json::array()},
                      {"measured", "2026-06-02"},
                      {"discarded_rounds", 0},
                      {"refused_calls", 0}};
  nlohmann::json line = {{"kind", kind},
                         {"platform", platform},
                         {"power_mode", mode},
                         {"key", key},
                         {"measurement", m}};
  if (kind == "measurement") line["row_schema"] = 3;
  return line.dump();
}

const std::string kKey = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";

TEST_CASE("PythonFloat spells a double as Python's repr") {
  // Python 3: repr(x) for each.
  CHECK(PythonFloat(12.5) == "12.5");
  CHECK(PythonFloat(100.0) == "100.0");
  CHECK(PythonFloat(0.0) == "0.0");
  CHECK(PythonFloat(-2.5) == "-2.5");
  CHECK(PythonFloat(0.1) == "0.1");
  CHECK(PythonFloat(1.0 / 3) == "0.3333333333333333");
  CHECK(PythonFloat(0.0001) == "0.0001");
  CHECK(PythonFloat(1e-05) == "1e-05");
  CHECK(PythonFloat(1.5e-07) == "1.5e-07");
  CHECK(PythonFloat(1e15) == "1000000000000000.0");
  CHECK(PythonFloat(1e16) == "1e+16");
  CHECK(PythonFloat(123456789.125) == "123456789.125");
  CHECK(PythonFloat(1180591620717411303424.0) == "1.1805916207174113e+21");
  CHECK(PythonFloat(5e-324) == "5e-324");
}

TEST_CASE("IronCostWriter writes IRON's file for an IRON key") {
  const std::string dir = TempDir("iron-export");
  IronCostWriter writer(dir, "");
  REQUIRE(writer.Add(Line("iron_cost", kKey)).ok());
  const fs::path file =
      fs::path(dir) / "npu-strix" / "Default" / (kKey + ".json");
  REQUIRE(fs::exists(file));
  // json.dumps(dataclasses.asdict(Measurement)) + "\n": the fields in
  // declaration order, Python's separators and float spelling.
  CHECK(Slurp(file) ==
        "{\"t_step_us\": 41.25, \"round_us\": [41.5, 41.0, 100.0], "
        "\"output\": \"9f2c\", \"run\": \"r7\", \"pmode\": \"Default\", "
        "\"calls\": 20, \"default_round_us\": [], "
        "\"measured\": \"2026-06-02\"}\n");
  // No partial `<key>.<pid>` left beside it.
  int files = 0;
  for (const auto& e : fs::directory_iterator(file.parent_path())) {
    (void)e;
    ++files;
  }
  CHECK(files == 1);
  CHECK(writer.counts().written == 1);
  CHECK(writer.counts().skipped_total() == 0);
}

TEST_CASE("IronCostWriter never writes through a symlink beside a file") {
  const fs::path dir = TempDir("iron-export-link");
  const fs::path pmode_dir = fs::path(dir) / "npu-strix" / "Default";
  fs::create_directories(pmode_dir);
  const fs::path victim = fs::path(dir) / "victim";
  std::ofstream(victim) << "precious\n";
  // The name each file's temporary once had: <key>.<pid>.
  fs::create_symlink(victim,
                     pmode_dir / (kKey + "." + std::to_string(getpid())));
  IronCostWriter writer(dir, "");
  REQUIRE(writer.Add(Line("iron_cost", kKey)).ok());
  CHECK(Slurp(victim) == "precious\n");
  CHECK(fs::is_regular_file(pmode_dir / (kKey + ".json")));
}

TEST_CASE("IronCostWriter skips what IRON cannot look up, by reason") {
  const std::string dir = TempDir("iron-export-skips");
  IronCostWriter writer(dir, "");
  REQUIRE(writer.Add(Line("measurement", kKey)).ok());
  REQUIRE(writer.Add(Line("measurement", "1" + kKey.substr(1))).ok());
  REQUIRE(writer.Add(Line("iron_cost", "fused/GEMV_M2048_K8192")).ok());
  REQUIRE(writer
              .Add(R"({"kind":"verdict","platform":"npu-strix",)"
                   R"("recipe_hash":"ab","environment":"e","row_schema":1,)"
                   R"("verdict":"ok"})")
              .ok());
  const IronExportCounts& counts = writer.counts();
  CHECK(counts.written == 0);
  CHECK(counts.skipped_total() == 4);
  REQUIRE(counts.skipped.size() == 3);
  for (const auto& [why, n] : counts.skipped) {
    if (absl::StrContains(why, "irontune's own")) CHECK(n == 2);
  }
  CHECK_FALSE(fs::exists(fs::path(dir) / "npu-strix"));
}

TEST_CASE("IronCostWriter: --pmode's spelling, and its mode only") {
  const std::string dir = TempDir("iron-export-pmode");
  IronCostWriter writer(dir, "DEFAULT");
  REQUIRE(writer.Add(Line("iron_cost", kKey)).ok());
  REQUIRE(writer.Add(Line("iron_cost", kKey, "turbo")).ok());
  const fs::path file =
      fs::path(dir) / "npu-strix" / "DEFAULT" / (kKey + ".json");
  REQUIRE(fs::exists(file));
  CHECK(absl::StrContains(Slurp(file), "\"pmode\": \"DEFAULT\""));
  CHECK(writer.counts().written == 1);
  CHECK(writer.counts().skipped_total() == 1);
}

TEST_CASE("IronCostWriter refuses a line that is not an export line") {
  const std::string dir = TempDir("iron-export-bad");
  IronCostWriter writer(dir, "");
  absl::Status s = writer.Add("{not json");
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(s.message(), "export line 1"));
  s = writer.Add(Line("iron_cost", kKey, "default", "../escape"));
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(s.message(), "export line 2: platform"));
  CHECK(writer.Add(R"({"kind":"gizmo"})").code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK_FALSE(fs::exists(fs::path(dir) / "escape"));
}

}  // namespace
}  // namespace irontune
