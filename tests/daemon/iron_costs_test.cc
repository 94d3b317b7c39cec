// IRON's cost files (daemon/store/iron_costs.h): each record shape IRON
// writes, read as IRON's reader reads it, and imported through
// Cache::Import's "iron_file" lines with counts and reasons. The files are
// IRON-shaped fixtures written for these tests.
#include "daemon/store/iron_costs.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "daemon/store/cache.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;

constexpr char kDir[] = "costs/npu-strix/Default/";
constexpr char kKey[] = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";

std::string Measurement(const std::string& pmode, double t) {
  return nlohmann::json{{"pmode", pmode},           {"calls", 20},
                        {"measured", "2026-06-02"}, {"t_step_us", t},
                        {"round_us", {t, t}},       {"alone_us", 200.0},
                        {"output", "ab12"}}
      .dump();
}

TEST_CASE("an IRON Measurement file is a figure under its key",
          "[store][iron]") {
  IronFileRead read =
      ReadIronCostFile(std::string(kDir) + kKey + ".json",
                       Measurement("Default", 41.25), PowerMode::kDefault);
  REQUIRE(read.skipped.empty());
  REQUIRE(read.figures.size() == 1);
  CHECK(read.figures[0].key == kKey);
  CHECK(read.figures[0].measurement.t_step_us() == 41.25);
  CHECK(read.figures[0].measurement.round_us_size() == 2);
  CHECK(read.figures[0].measurement.power_mode() == "default");
  CHECK(read.figures[0].measurement.output() == "ab12");
}

TEST_CASE("IRON records that are not a design's step are skipped, saying so",
          "[store][iron]") {
  const std::string path = std::string(kDir) + kKey + ".json";
  struct Case {
    std::string text;
    std::string why;
  } cases[] = {
      {R"({"pmode": "Default", "calls": 2, "measured": "d", "dispatch_us": 1,
           "reset_us": 1, "base_us": 1, "switch_us": 1, "rounds": 2,
           "switch_noise_us": null, "base_noise_us": null})",
       "an IRON Calibration"},
      {R"({"within": false, "detail": "C[3]", "measured": "d"})",
       "an IRON Accuracy"},
      {R"({"pmode": "Default", "calls": 2, "measured": "d", "pair_us": 3.0,
           "rounds": 2})",
       "an IRON Pairing"},
      {R"({"pmode": "Default", "calls": 2, "measured": "d", "shift_us": 3.0,
           "round_us": [3.0], "output": "x"})",
       "an IRON Shift"},
      {R"({"pmode": "Default", "t_step_us": 3.0})",
       "not an IRON cost record (fields [pmode, t_step_us])"},
      {Measurement("Turbo", 3.0),
       "measured at power mode \"Turbo\", this cache is for default"},
      {"[1, 2]", "not a JSON object"},
  };
  for (const Case& c : cases) {
    IronFileRead read = ReadIronCostFile(path, c.text, PowerMode::kDefault);
    INFO(c.text);
    CHECK(read.figures.empty());
    REQUIRE(read.skipped.size() == 1);
    CHECK_THAT(read.skipped[0], Catch::StartsWith(path + ": " + c.why) ||
                                    Catch::Contains(c.why));
  }
  // The name must be IRON's: a 32-hex-digit key, a .json file.
  CHECK_THAT(ReadIronCostFile(std::string(kDir) + "abc.json",
                              Measurement("Default", 1), PowerMode::kDefault)
                 .skipped.at(0),
             Catch::EndsWith("its name is not a 32-hex-digit key"));
  CHECK_THAT(ReadIronCostFile(std::string(kDir) + kKey + ".4242",
                              Measurement("Default", 1), PowerMode::kDefault)
                 .skipped.at(0),
             Catch::Contains("not a .json file"));
  // A pmode directory that disagrees with the file's pmode.
  CHECK_THAT(ReadIronCostFile(std::string("costs/x/Turbo/") + kKey + ".json",
                              Measurement("Default", 1), PowerMode::kDefault)
                 .skipped.at(0),
             Catch::Contains("another power mode"));
}

TEST_CASE("a CostTable's steps are figures, calibrations and packs skipped",
          "[store][iron]") {
  const std::string table = R"({"device": "npu2", "dispatch": "separate",
"steps": {
  "GEMM_a": {"pmode": "Default", "calls": 5, "measured": "d", "t_step_us": 7.5, "noise_us": 0.25, "alone_us": 90.0, "exact": true, "accurate": true, "rounds": 3},
  "GEMM_b": {"t_step_us": 8.0, "alone_us": 91.0, "exact": false, "pmode": "Default", "rounds": 3, "calls": 5, "measured": "d"},
  "GEMM_c": {"pmode": "Default", "calls": 5, "t_step_us": 7.0, "alone_us": 90.0, "exact": true, "rounds": 3, "extra": 1},
  "GEMM_d": {"pmode": "Default", "calls": 5, "t_step_us": 7.0, "exact": true, "rounds": 3}
},
"calibrations": {"GEMM_a|GEMM_b": {"pmode": "Default", "calls": 5, "measured": "d", "dispatch_us": 30, "reset_us": 18, "base_us": 40, "switch_us": 60, "rounds": 3}}})";
  IronFileRead read = ReadIronCostFile("t.json", table, PowerMode::kDefault);
  REQUIRE(read.figures.size() == 2);
  CHECK(read.figures[0].key == "separate/GEMM_a");
  CHECK(read.figures[0].measurement.t_step_noise_us() == 0.25);
  CHECK(read.figures[1].key == "separate/GEMM_b");
  CHECK_FALSE(read.figures[1].measurement.has_t_step_noise_us());
  REQUIRE(read.skipped.size() == 3);
  CHECK_THAT(read.skipped[0],
             Catch::Equals("t.json: steps[GEMM_c]: [extra] not a StepCost's "
                           "field"));
  CHECK_THAT(read.skipped[1],
             Catch::Equals("t.json: steps[GEMM_d]: recorded without "
                           "[alone_us]"));
  CHECK_THAT(read.skipped[2],
             Catch::StartsWith("t.json: calibrations[GEMM_a|GEMM_b]: a "
                               "configure calibration"));
}

TEST_CASE("Cache::Import takes iron_file lines and counts what it skipped",
          "[store][iron]") {
  const fs::path dir = fs::temp_directory_path() /
                       ("irontune_iron_costs_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto cache = Cache::Open((dir / "cache.db").string(), "NPU Strix",
                           PowerMode::kDefault);
  REQUIRE(cache.ok());
  auto line = [](const std::string& path, const std::string& text) {
    return nlohmann::json{{"kind", "iron_file"}, {"path", path}, {"text", text}}
        .dump();
  };
  const std::string path = std::string(kDir) + kKey + ".json";
  std::stringstream in;
  in << line(path, Measurement("Default", 41.25)) << "\n"
     << line("b/Default/" + std::string(32, 'b') + ".json",
             Measurement("Turbo", 2))
     << "\n";
  absl::StatusOr<ImportCounts> counts = (*cache)->Import(in, {"t", "p", "s"});
  INFO(counts.status().ToString());
  REQUIRE(counts.ok());
  CHECK(counts->imported == 1);
  REQUIRE(counts->skipped.size() == 1);
  CHECK_THAT(counts->skipped[0], Catch::Contains("power mode \"Turbo\""));
  auto got = (*cache)->GetIronCost(kKey);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->t_step_us() == 41.25);
  // Again: present already, so kept and counted as skipped.
  std::stringstream again(line(path, Measurement("Default", 99)) + "\n");
  counts = (*cache)->Import(again, {"t", "p", "s"});
  REQUIRE(counts.ok());
  CHECK(counts->imported == 0);
  REQUIRE(counts->skipped.size() == 1);
  CHECK_THAT(counts->skipped[0], Catch::EndsWith("already present, kept"));
  CHECK((*(*cache)->GetIronCost(kKey))->t_step_us() == 41.25);
  cache->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace irontune
