// XrtDevice::Open against the test double of XRT and its xrt-smi: which
// NPU xrt-smi reports on, the names the drivers give, a power mode the
// driver does not support, and the versions of the stack under it.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "catch2/catch.hpp"
#include "daemon/xrt/stack_versions.h"
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

// Writes `text` as the fw_version of the NPU at `bdf` under `sys_root`.
void WriteFirmware(const std::string& sys_root, const std::string& bdf,
                   const std::string& text) {
  const std::string dir = sys_root + "/bus/pci/devices/" + bdf;
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/fw_version") << text;
}

TEST_CASE("xrt:N reports the stack XRT and its NPU's sysfs say",
          "[xrt][device][versions]") {
  TwoNpus npus("xrt-open-stack");
  WriteFirmware(npus.dir + "/sys", "0000:c6:00.1", "1.5.2.380\n");
  XrtDeviceOptions o = npus.Options(1);
  o.sys_root = npus.dir + "/sys";
  absl::StatusOr<std::unique_ptr<XrtDevice>> second = XrtDevice::Open(o);
  REQUIRE(second.ok());
  const StackVersions stack = (*second)->GetStackVersions();
  CHECK(stack.firmware == "1.5.2.380");
  CHECK(stack.driver ==
        "2.21.0_20260821, 856409cafc23cee55976ebcaa0a073ab4ec6dfe2");
  CHECK(stack.xrt == "2.26.0, 963c58ee224491e191b3be78d76f51e55e152177");

  // NPU 0 has no fw_version there: its firmware is unknown, the rest not.
  o = npus.Options(0);
  o.sys_root = npus.dir + "/sys";
  absl::StatusOr<std::unique_ptr<XrtDevice>> first = XrtDevice::Open(o);
  REQUIRE(first.ok());
  CHECK((*first)->GetStackVersions().firmware.empty());
  CHECK((*first)->GetStackVersions().xrt == stack.xrt);
}

TEST_CASE("XRT 2.19 over the in-tree driver: the kernel names the driver",
          "[xrt][device][versions]") {
  const std::string dir = e2e::TempDir("xrt-open-in-tree");
  std::ofstream(dir + "/script.json")
      << R"({"driver": "in-tree", "xrt": "2.19"})";
  setenv("IRONTUNE_FAKE_XRT_SCRIPT", (dir + "/script.json").c_str(), 1);
  fake_xrt::Reset();
  WriteFirmware(dir + "/sys", "0000:c5:00.1", "0.0.0.0\n");
  XrtDeviceOptions o;
  o.smi.path = IRONTUNE_FAKE_XRT_SMI;
  o.smi.scratch_file = dir + "/partitions.json";
  o.hygiene.enabled = false;
  o.sys_root = dir + "/sys";
  absl::StatusOr<std::unique_ptr<XrtDevice>> d = XrtDevice::Open(o);
  unsetenv("IRONTUNE_FAKE_XRT_SCRIPT");
  fake_xrt::Reset();
  REQUIRE(d.ok());
  const StackVersions stack = (*d)->GetStackVersions();
  CHECK(stack.firmware.empty());  // 0.0.0.0: the driver has none
  REQUIRE_FALSE(KernelRelease().empty());
  CHECK(stack.driver == "in-tree (Linux " + KernelRelease() + ")");
  CHECK(stack.xrt == "2.19.194, 7d8151e6ee73c6ec2e99501a58c9c2eca6cc68ce");
}

}  // namespace
}  // namespace irontune
