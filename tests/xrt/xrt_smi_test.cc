#include "daemon/xrt/xrt_smi.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "catch2/catch.hpp"
#include "tests/testing/process.h"

namespace irontune {
namespace {

const std::string kData = IRONTUNE_SOURCE_DIR "/tests/xrt/testdata/";

std::string Captured(const std::string& name) {
  return e2e::ReadFile(kData + name);
}

TEST_CASE("platform reports of several shapes parse", "[xrt][smi]") {
  absl::StatusOr<SmiPlatform> strix =
      ParsePlatformReport(Captured("platform_strix.txt"));
  REQUIRE(strix.ok());
  CHECK(strix->name == "NPU Strix");
  CHECK(strix->power_mode == PowerMode::kDefault);

  // CRLF, values with trailing spaces, other padding and casing, and a
  // banner whose colon has spaces around it.
  absl::StatusOr<SmiPlatform> phoenix =
      ParsePlatformReport(Captured("platform_phoenix_crlf.txt"));
  REQUIRE(phoenix.ok());
  CHECK(phoenix->name == "NPU Phoenix");
  CHECK(phoenix->power_mode == PowerMode::kPerformance);

  absl::StatusOr<SmiPlatform> krackan =
      ParsePlatformReport(Captured("platform_krackan_lowercase.txt"));
  REQUIRE(krackan.ok());
  CHECK(krackan->name == "NPU Krackan 1");
  CHECK(krackan->power_mode == PowerMode::kTurbo);
}

TEST_CASE("a power mode \"not supported\" is the default, marked",
          "[xrt][smi]") {
  absl::StatusOr<SmiPlatform> p =
      ParsePlatformReport(Captured("platform_pmode_not_supported.txt"));
  REQUIRE(p.ok());
  CHECK(p->name == "RyzenAI-npu4");
  CHECK(p->power_mode == PowerMode::kDefault);
  CHECK_FALSE(p->power_mode_supported);
  CHECK(ParsePlatformReport(Captured("platform_strix.txt"))
            ->power_mode_supported);
  absl::StatusOr<Platform> platform = PlatformOf(*p);
  REQUIRE(platform.ok());
  CHECK(platform->power_mode == PowerMode::kDefault);
  CHECK(platform->core_mhz == 1800);  // default's bound: the top clock
}

TEST_CASE("a platform report missing a field is a clear error", "[xrt][smi]") {
  absl::StatusOr<SmiPlatform> p =
      ParsePlatformReport(Captured("platform_no_power_mode.txt"));
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(std::string(p.status().message()),
             Catch::Contains("no \"Power Mode\" field"));
  p = ParsePlatformReport(Captured("platform_no_device.txt"));
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(std::string(p.status().message()),
             Catch::Contains("no \"Name\" and \"Power Mode\" field"));
  p = ParsePlatformReport(Captured("platform_unknown_mode.txt"));
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(std::string(p.status().message()), Catch::Contains("Ludicrous"));
}

// aie_partitions_idle.json and _two_holders.json are written as xrt-smi
// writes them: Boost's write_json of the property tree XRT builds
// (ReportAiePartitions.cpp, XBHelpMenus.cpp @ master 963c58ee), so every
// value is a string and the idle NPU's partition list is "".
TEST_CASE("aie-partitions gives the other holders' pids", "[xrt][smi]") {
  const std::string two = Captured("aie_partitions_two_holders.json");
  REQUIRE_THAT(two, Catch::Contains("\"pid\": \"4242\""));
  absl::StatusOr<std::vector<int>> pids = ParseAiePartitions(two, 0);
  REQUIRE(pids.ok());
  CHECK(*pids == std::vector<int>{777, 4242, 5151});
  pids = ParseAiePartitions(two, 4242);  // our own contexts left out
  REQUIRE(pids.ok());
  CHECK(*pids == std::vector<int>{777, 5151});
  pids = ParseAiePartitions(Captured("aie_partitions_bad_pid.json"), 0);
  REQUIRE_FALSE(pids.ok());
  CHECK_THAT(std::string(pids.status().message()),
             Catch::Contains("partitions[0].hw_contexts[0].pid"));
  CHECK_FALSE(ParseAiePartitions("{", 0).ok());
}

TEST_CASE("an idle NPU's aie-partitions, with \"\" for its empty list",
          "[xrt][smi]") {
  const std::string idle = Captured("aie_partitions_idle.json");
  REQUIRE_THAT(idle, Catch::Contains("\"partitions\": \"\""));
  absl::StatusOr<std::vector<int>> pids = ParseAiePartitions(idle, 0);
  REQUIRE(pids.ok());
  CHECK(pids->empty());
  // Any list may be "", as Boost writes every empty one.
  pids = ParseAiePartitions(
      R"({"devices": [{"aie_partitions": {"partitions": [
          {"start_col": "1", "hw_contexts": ""},
          {"hw_contexts": [{"pid": 31}]}]}}]})",
      0);
  REQUIRE(pids.ok());
  CHECK(*pids == std::vector<int>{31});  // a number taken too
  CHECK(ParseAiePartitions(R"({"devices": ""})", 0)->empty());
  CHECK(ParseAiePartitions(R"({"devices": [{"aie_partitions": ""}]})", 0)
            ->empty());
  // Other strings are no list.
  pids = ParseAiePartitions(
      R"({"devices": [{"aie_partitions": {"partitions": "none"}}]})", 0);
  REQUIRE_FALSE(pids.ok());
  CHECK_THAT(std::string(pids.status().message()),
             Catch::Contains("devices[0].aie_partitions.partitions: not an "
                             "array"));
  CHECK_FALSE(ParseAiePartitions(
                  R"({"devices": [{"aie_partitions": {"partitions": [
                      {"hw_contexts": [{"pid": "12a"}]}]}}]})",
                  0)
                  .ok());
}

TEST_CASE("both NPU naming schemes give one platform name", "[xrt][smi]") {
  struct Case {
    const char* reported;
    const char* canonical;
  };
  // The in-tree driver's names, the out-of-tree driver's of each era, and
  // the firmware's board names.
  for (const Case& c : std::vector<Case>{
           {"RyzenAI-npu1", "NPU Phoenix"},
           {"NPU Phoenix", "NPU Phoenix"},
           {"RyzenAI-npu2", "NPU Strix A0"},
           {"RyzenAI-npu4", "NPU Strix"},
           {"NPU Strix", "NPU Strix"},
           {"RyzenAI-npu5", "NPU Strix Halo"},
           {"NPU Strix Halo", "NPU Strix Halo"},
           {"RyzenAI-npu6", "NPU Krackan"},
           {"NPU Kracken", "NPU Krackan"},
           {"NPU Krackan", "NPU Krackan"},
           {"NPU Krackan 1", "NPU Krackan 1"},
           {"npu  krackan   2", "NPU Krackan 2"},
           {"NPU Gorgon Point 3", "NPU Gorgon Point 3"},
           {"NPU Hawk Point", "NPU Hawk Point"},
           {"ryzenai-NPU4", "NPU Strix"},
       }) {
    INFO(c.reported);
    absl::StatusOr<std::string> name = CanonicalNpuName(c.reported);
    REQUIRE(name.ok());
    CHECK(*name == c.canonical);
    CHECK(*CanonicalNpuName(*name) == *name);  // canonical stays so
    absl::StatusOr<Platform> p = PlatformOf({c.reported, PowerMode::kDefault});
    REQUIRE(p.ok());
    CHECK(p->name == c.canonical);  // what the cache partitions on
  }
  CHECK(PlatformOf({"RyzenAI-npu1", PowerMode::kDefault})->generation ==
        "npu1");
  CHECK(PlatformOf({"RyzenAI-npu6", PowerMode::kDefault})->generation ==
        "npu2");
  for (const char* other : {"RyzenAI-npu3", "RyzenAI-npu7-pf", "NPU",
                            "NPU Strix Point", "Alveo U250", ""}) {
    INFO(other);
    absl::StatusOr<std::string> name = CanonicalNpuName(other);
    REQUIRE_FALSE(name.ok());
    CHECK_THAT(std::string(name.status().message()),
               Catch::Contains(std::string("\"") + other + "\""));
  }
}

TEST_CASE("the platforms a front accepts are those xrt-smi names",
          "[xrt][smi]") {
  // KnownPlatforms (daemon/npu/platform.h) and the families here list the
  // same NPUs: a name one knows and the other not would be a platform a
  // front queues work for that no box reports, or the reverse.
  for (const KnownPlatform& k : KnownPlatforms()) {
    const std::string name(k.name);
    INFO(name);
    absl::StatusOr<Platform> p = PlatformOf({name, PowerMode::kDefault});
    REQUIRE(p.ok());
    CHECK(p->name == name);
    CHECK(p->generation == k.generation);
  }
  for (const char* reported :
       {"RyzenAI-npu1", "RyzenAI-npu2", "RyzenAI-npu4", "RyzenAI-npu5",
        "RyzenAI-npu6", "NPU Kracken", "NPU Hawk Point", "NPU Gorgon Point"}) {
    INFO(reported);
    const std::string name = *CanonicalNpuName(reported);
    CHECK(std::any_of(
        KnownPlatforms().begin(), KnownPlatforms().end(),
        [&name](const KnownPlatform& k) { return k.name == name; }));
  }
}

TEST_CASE("a platform name gives its generation's facts", "[xrt][smi]") {
  absl::StatusOr<Platform> p =
      PlatformOf({"NPU Phoenix", PowerMode::kBalanced});
  REQUIRE(p.ok());
  CHECK(p->generation == "npu1");
  CHECK(p->columns == 4);
  CHECK(p->hw_contexts == 6);
  CHECK_FALSE(p->full_elf);
  CHECK(p->core_mhz == 1024);
  p = PlatformOf({"NPU Strix Halo", PowerMode::kPowersaver});
  REQUIRE(p.ok());
  CHECK(p->generation == "npu2");
  CHECK(p->full_elf);
  CHECK(p->core_mhz == 792);
  CHECK(PlatformOf({"NPU Krackan 2", PowerMode::kDefault})->core_mhz == 1800);
  absl::StatusOr<Platform> unknown =
      PlatformOf({"Alveo U250", PowerMode::kDefault});
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(std::string(unknown.status().message()),
             Catch::Contains("Alveo U250"));
}

// The fake xrt-smi, with its environment set for one test.
struct FakeSmi {
  explicit FakeSmi(const std::string& tag) : dir(e2e::TempDir(tag)) {
    setenv("IRONTUNE_FAKE_XRT_SMI_LOG", (dir + "/log").c_str(), 1);
    setenv("IRONTUNE_FAKE_XRT_SMI_PMODE", (dir + "/pmode").c_str(), 1);
  }
  ~FakeSmi() {
    for (const char* v :
         {"IRONTUNE_FAKE_XRT_SMI_LOG", "IRONTUNE_FAKE_XRT_SMI_PMODE",
          "IRONTUNE_FAKE_XRT_SMI_PARTITIONS", "IRONTUNE_FAKE_XRT_SMI_PLATFORM",
          "IRONTUNE_FAKE_XRT_SMI_FAIL", "IRONTUNE_FAKE_XRT_SMI_SLEEP",
          "IRONTUNE_FAKE_XRT_SMI_DEVICES", "IRONTUNE_FAKE_XRT_SMI_PLATFORM_1",
          "IRONTUNE_FAKE_XRT_SMI_PARTITIONS_1"})
      unsetenv(v);
  }
  XrtSmiOptions Options() const {
    XrtSmiOptions o;
    o.path = IRONTUNE_FAKE_XRT_SMI;
    o.scratch_file = dir + "/partitions.json";
    return o;
  }
  std::string dir;
};

TEST_CASE("XrtSmi runs xrt-smi and parses what it prints", "[xrt][smi]") {
  FakeSmi fake("xrt-smi-run");
  XrtSmi smi(fake.Options());
  absl::StatusOr<SmiPlatform> p = smi.ExaminePlatform();
  REQUIRE(p.ok());
  CHECK(p->name == "NPU Strix");
  setenv("IRONTUNE_FAKE_XRT_SMI_PARTITIONS",
         (kData + "aie_partitions_two_holders.json").c_str(), 1);
  absl::StatusOr<std::vector<int>> pids = smi.HolderPids(5151);
  REQUIRE(pids.ok());
  CHECK(*pids == std::vector<int>{777, 4242});
  const std::string log = e2e::ReadFile(fake.dir + "/log");
  CHECK_THAT(log, Catch::Contains("examine -r platform"));
  CHECK_THAT(log, Catch::Contains("examine -r aie-partitions -f JSON -o " +
                                  fake.dir + "/partitions.json"));
}

TEST_CASE(
    "XrtSmi sets the power mode, refusing turbo while contexts are "
    "held",
    "[xrt][smi]") {
  FakeSmi fake("xrt-smi-pmode");
  XrtSmi smi(fake.Options());
  REQUIRE(smi.SetPowerMode(PowerMode::kPerformance).ok());
  CHECK(smi.ExaminePlatform()->power_mode == PowerMode::kPerformance);
  setenv("IRONTUNE_FAKE_XRT_SMI_PARTITIONS",
         (kData + "aie_partitions_two_holders.json").c_str(), 1);
  absl::Status turbo = smi.SetPowerMode(PowerMode::kTurbo);
  CHECK(turbo.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(turbo.message()),
             Catch::Contains("turbo is refused while hardware contexts are "
                             "active (held by pid 777, 4242, 5151)"));
  CHECK(smi.ExaminePlatform()->power_mode == PowerMode::kPerformance);
  unsetenv("IRONTUNE_FAKE_XRT_SMI_PARTITIONS");
  REQUIRE(smi.SetPowerMode(PowerMode::kTurbo).ok());
  CHECK(smi.ExaminePlatform()->power_mode == PowerMode::kTurbo);
}

TEST_CASE("with a BDF every command runs with -d, on that NPU", "[xrt][smi]") {
  FakeSmi fake("xrt-smi-bdf");
  setenv("IRONTUNE_FAKE_XRT_SMI_DEVICES", "0000:c5:00.1 0000:c6:00.1", 1);
  setenv("IRONTUNE_FAKE_XRT_SMI_PLATFORM_1",
         (kData + "platform_ryzenai_npu6.txt").c_str(), 1);
  setenv("IRONTUNE_FAKE_XRT_SMI_PARTITIONS_1",
         (kData + "aie_partitions_two_holders.json").c_str(), 1);
  XrtSmiOptions o = fake.Options();
  o.bdf = "0000:c6:00.1";
  XrtSmi second(o);
  absl::StatusOr<SmiPlatform> p = second.ExaminePlatform();
  REQUIRE(p.ok());
  CHECK(p->name == "RyzenAI-npu6");
  absl::StatusOr<std::vector<int>> pids = second.HolderPids(0);
  REQUIRE(pids.ok());
  CHECK(*pids == std::vector<int>{777, 4242, 5151});
  REQUIRE(second.SetPowerMode(PowerMode::kBalanced).ok());
  CHECK(second.ExaminePlatform()->power_mode == PowerMode::kBalanced);
  const std::string log = e2e::ReadFile(fake.dir + "/log");
  CHECK_THAT(log, Catch::Contains("examine -d 0000:c6:00.1 -r platform"));
  CHECK_THAT(log, Catch::Contains("examine -d 0000:c6:00.1 -r aie-partitions"));
  CHECK_THAT(log,
             Catch::Contains("configure -d 0000:c6:00.1 --pmode balanced"));

  // Without -d xrt-smi reports on its first NPU, idle and another one.
  XrtSmi first(fake.Options());
  CHECK(first.ExaminePlatform()->name == "NPU Strix");
  CHECK(first.ExaminePlatform()->power_mode == PowerMode::kDefault);
  CHECK(first.HolderPids(0)->empty());
}

TEST_CASE("no power mode is set where the report says \"not supported\"",
          "[xrt][smi]") {
  FakeSmi fake("xrt-smi-no-pmode");
  setenv("IRONTUNE_FAKE_XRT_SMI_PLATFORM",
         (kData + "platform_pmode_not_supported.txt").c_str(), 1);
  XrtSmi smi(fake.Options());
  absl::Status set = smi.SetPowerMode(PowerMode::kPerformance);
  CHECK(set.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(set.message()),
             Catch::Contains("reports its power mode as \"not supported\""));
  CHECK_THAT(std::string(set.message()), Catch::Contains("--power-mode"));
  CHECK_THAT(e2e::ReadFile(fake.dir + "/log"), !Catch::Contains("configure"));
}

TEST_CASE("xrt-smi failing, hanging or missing is a clear error",
          "[xrt][smi]") {
  FakeSmi fake("xrt-smi-fail");
  setenv("IRONTUNE_FAKE_XRT_SMI_FAIL", "No devices found", 1);
  XrtSmi smi(fake.Options());
  absl::StatusOr<SmiPlatform> p = smi.ExaminePlatform();
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(std::string(p.status().message()),
             Catch::Contains("failed (exit 1): ERROR: No devices found"));
  unsetenv("IRONTUNE_FAKE_XRT_SMI_FAIL");

  setenv("IRONTUNE_FAKE_XRT_SMI_SLEEP", "5", 1);
  XrtSmiOptions slow = fake.Options();
  slow.timeout = absl::Milliseconds(300);
  p = XrtSmi(slow).ExaminePlatform();
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == absl::StatusCode::kDeadlineExceeded);
  unsetenv("IRONTUNE_FAKE_XRT_SMI_SLEEP");

  XrtSmiOptions missing = fake.Options();
  missing.path = fake.dir + "/no-such-xrt-smi";
  p = XrtSmi(missing).ExaminePlatform();
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(p.status().message()), Catch::Contains("--xrt-smi"));
}

}  // namespace
}  // namespace irontune
