// XrtDevice::Open against the test double of XRT and its xrt-smi: which
// NPU xrt-smi reports on, the names the drivers give, and a power mode the
// driver does not support.
#include <cstdlib>
#include <fstream>
#include <string>

#include "catch2/catch.hpp"
#include "daemon/xrt/xrt_device.h"
#include "tests/fakes/xrt/fake_xrt.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

const std::string kData = IRONTUNE_SOURCE_DIR "/tests/xrt/testdata/";

// Two fake NPUs at 0000:c5:00.1 (NPU Strix, idle) and 0000:c6:00.1 (an
// in-tree driver's RyzenAI-npu6), for one test.
struct TwoNpus {
  explicit TwoNpus(const std::string& tag) : dir(e2e::TempDir(tag)) {
    std::ofstream(dir + "/script.json")
        << R"({"devices": 2, "bdfs": ["0000:c5:00.1", "0000:c6:00.1"]})";
    setenv("IRONTUNE_FAKE_XRT_SCRIPT", (dir + "/script.json").c_str(), 1);
    setenv("IRONTUNE_FAKE_XRT_SMI_DEVICES", "0000:c5:00.1 0000:c6:00.1", 1);
    setenv("IRONTUNE_FAKE_XRT_SMI_PLATFORM_1",
           (kData + "platform_ryzenai_npu6.txt").c_str(), 1);
    setenv("IRONTUNE_FAKE_XRT_SMI_PARTITIONS_1",
           (kData + "aie_partitions_two_holders.json").c_str(), 1);
    setenv("IRONTUNE_FAKE_XRT_SMI_PMODE", (dir + "/pmode").c_str(), 1);
    setenv("IRONTUNE_FAKE_XRT_SMI_LOG", (dir + "/log").c_str(), 1);
    fake_xrt::Reset();
  }
  ~TwoNpus() {
    for (const char* v :
         {"IRONTUNE_FAKE_XRT_SCRIPT", "IRONTUNE_FAKE_XRT_SMI_DEVICES",
          "IRONTUNE_FAKE_XRT_SMI_PLATFORM_1",
          "IRONTUNE_FAKE_XRT_SMI_PARTITIONS_1", "IRONTUNE_FAKE_XRT_SMI_PMODE",
          "IRONTUNE_FAKE_XRT_SMI_LOG", "IRONTUNE_FAKE_XRT_SMI_PLATFORM"})
      unsetenv(v);
    fake_xrt::Reset();
  }
  XrtDeviceOptions Options(unsigned int index) const {
    XrtDeviceOptions o;
    o.index = index;
    o.smi.path = IRONTUNE_FAKE_XRT_SMI;
    o.smi.scratch_file = dir + "/partitions.json";
    o.hygiene.enabled = false;
    o.own_pid = 1;
    return o;
  }
  std::string dir;
};

TEST_CASE("xrt:1 reads NPU 1's reports, through -d with its BDF",
          "[xrt][device][bdf]") {
  TwoNpus npus("xrt-open-bdf");
  absl::StatusOr<std::unique_ptr<XrtDevice>> second =
      XrtDevice::Open(npus.Options(1));
  REQUIRE(second.ok());
  absl::StatusOr<Platform> p = (*second)->GetPlatform();
  REQUIRE(p.ok());
  CHECK(p->name == "NPU Krackan");  // RyzenAI-npu6, not NPU 0's Strix
  CHECK(p->generation == "npu2");
  absl::StatusOr<std::vector<int>> others = (*second)->OtherHolders();
  REQUIRE(others.ok());
  CHECK(*others == std::vector<int>{777, 4242, 5151});
  CHECK_THAT(e2e::ReadFile(npus.dir + "/log"),
             Catch::Contains("examine -d 0000:c6:00.1 -r platform"));

  absl::StatusOr<std::unique_ptr<XrtDevice>> first =
      XrtDevice::Open(npus.Options(0));
  REQUIRE(first.ok());
  CHECK((*first)->GetPlatform()->name == "NPU Strix");
  CHECK((*first)->OtherHolders()->empty());
}

TEST_CASE("an NPU whose power mode is \"not supported\" opens in default",
          "[xrt][device][pmode]") {
  TwoNpus npus("xrt-open-no-pmode");
  setenv("IRONTUNE_FAKE_XRT_SMI_PLATFORM",
         (kData + "platform_pmode_not_supported.txt").c_str(), 1);
  absl::StatusOr<std::unique_ptr<XrtDevice>> d =
      XrtDevice::Open(npus.Options(0));
  REQUIRE(d.ok());
  absl::StatusOr<Platform> p = (*d)->GetPlatform();
  REQUIRE(p.ok());
  CHECK(p->name == "NPU Strix");  // reported as RyzenAI-npu4
  CHECK(p->power_mode == PowerMode::kDefault);
  d->reset();

  XrtDeviceOptions asked = npus.Options(0);
  asked.power_mode = PowerMode::kPerformance;
  d = XrtDevice::Open(asked);
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(d.status().message()),
             Catch::Contains("--power-mode performance: the NPU at "
                             "0000:c5:00.1 reports its power mode as \"not "
                             "supported\""));
}

}  // namespace
}  // namespace irontune
