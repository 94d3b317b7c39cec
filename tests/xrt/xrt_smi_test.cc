#include "daemon/xrt/xrt_smi.h"

#include <unistd.h>

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

TEST_CASE("aie-partitions gives the other holders' pids", "[xrt][smi]") {
  const std::string two = Captured("aie_partitions_two_holders.json");
  absl::StatusOr<std::vector<int>> pids = ParseAiePartitions(two, 0);
  REQUIRE(pids.ok());
  CHECK(*pids == std::vector<int>{777, 4242, 5151});
  pids = ParseAiePartitions(two, 4242);  // our own contexts left out
  REQUIRE(pids.ok());
  CHECK(*pids == std::vector<int>{777, 5151});
  pids = ParseAiePartitions(Captured("aie_partitions_idle.json"), 0);
  REQUIRE(pids.ok());
  CHECK(pids->empty());
  pids = ParseAiePartitions(Captured("aie_partitions_bad_pid.json"), 0);
  REQUIRE_FALSE(pids.ok());
  CHECK_THAT(std::string(pids.status().message()),
             Catch::Contains("partitions[0].hw_contexts[0].pid"));
  CHECK_FALSE(ParseAiePartitions("{", 0).ok());
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
          "IRONTUNE_FAKE_XRT_SMI_FAIL", "IRONTUNE_FAKE_XRT_SMI_SLEEP"})
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
