// The stack's versions from what XRT and the driver write
// (daemon/xrt/stack_versions.h), on text as they write it.
#include "daemon/xrt/stack_versions.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "catch2/catch.hpp"
#include "tests/testing/process.h"

namespace irontune {
namespace {

// get_info<host>() as XRT master writes it through boost's write_json, on
// a box with the out-of-tree driver's DKMS package.
constexpr char kOutOfTree[] = R"({
    "version": "2.26.0",
    "branch": "master",
    "hash": "963c58ee224491e191b3be78d76f51e55e152177",
    "build_hash_date": "Thu, 20 Aug 2026 14:58:47 -0700",
    "drivers": [
        {
            "name": "amdxdna",
            "version": "2.21.0_20260821",
            "hash": "856409cafc23cee55976ebcaa0a073ab4ec6dfe2"
        }
    ]
}
)";

TEST_CASE("XRT's host info gives XRT's and the driver's versions",
          "[xrt][versions]") {
  absl::StatusOr<XrtHostVersions> v = ParseXrtHostInfo(kOutOfTree, "6.11.0");
  REQUIRE(v.ok());
  CHECK(v->xrt == "2.26.0, 963c58ee224491e191b3be78d76f51e55e152177");
  CHECK(v->driver ==
        "2.21.0_20260821, 856409cafc23cee55976ebcaa0a073ab4ec6dfe2");
}

TEST_CASE("the in-tree driver is named by its kernel", "[xrt][versions]") {
  // 2.19 names the date build_date; the in-tree module has no version.
  constexpr char kInTree[] = R"({
    "version": "2.19.194",
    "branch": "2025.1",
    "hash": "7d8151e6ee73c6ec2e99501a58c9c2eca6cc68ce",
    "build_date": "Sun, 18 May 2025 17:01:38 +0530",
    "drivers": [
        {
            "name": "xocl",
            "version": "2.19.194",
            "hash": "7d8151e6ee73c6ec2e99501a58c9c2eca6cc68ce"
        },
        {
            "name": "amdxdna",
            "version": "unknown",
            "hash": "unknown"
        }
    ]
})";
  absl::StatusOr<XrtHostVersions> v =
      ParseXrtHostInfo(kInTree, "6.14.0-27-generic");
  REQUIRE(v.ok());
  CHECK(v->xrt == "2.19.194, 7d8151e6ee73c6ec2e99501a58c9c2eca6cc68ce");
  CHECK(v->driver == "in-tree (Linux 6.14.0-27-generic)");
  CHECK(ParseXrtHostInfo(kInTree, "")->driver.empty());
}

TEST_CASE("what XRT's host info lacks is unknown", "[xrt][versions]") {
  // boost writes an empty list as "": no driver has a version.
  absl::StatusOr<XrtHostVersions> v =
      ParseXrtHostInfo(R"({"version": "2.19.0", "drivers": ""})", "6.11.0");
  REQUIRE(v.ok());
  CHECK(v->xrt == "2.19.0");
  CHECK(v->driver.empty());
  // A hand-built module's MODULE_VERSION("0.1"), no hash.
  v = ParseXrtHostInfo(
      R"({"version": "N/A", "hash": "x", "drivers": [{"name": "amdxdna",
          "version": " 0.1 ", "hash": "unknown"}]})",
      "6.11.0");
  REQUIRE(v.ok());
  CHECK(v->xrt.empty());
  CHECK(v->driver == "0.1");
  CHECK_FALSE(ParseXrtHostInfo("", "6.11.0").ok());
  CHECK_FALSE(ParseXrtHostInfo("[1, 2]", "6.11.0").ok());
  CHECK_FALSE(ParseXrtHostInfo(R"({"version": )", "6.11.0").ok());
}

TEST_CASE("the firmware's version is the driver's four numbers",
          "[xrt][versions]") {
  CHECK(ParseFirmwareVersion("1.5.2.380\n").value() == "1.5.2.380");
  CHECK(ParseFirmwareVersion("0.0.0.0\n").value().empty());
  for (const char* bad : {"", "1.5.2", "1.5.2.380.1", "1.5.x.380", "1..2.3",
                          "-1.5.2.380", "N/A"}) {
    INFO(bad);
    CHECK(ParseFirmwareVersion(bad).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("the firmware's version is read from the NPU's sysfs directory",
          "[xrt][versions]") {
  const std::string root = e2e::TempDir("fw-version");
  const std::string dev = root + "/bus/pci/devices/0000:c5:00.1";
  std::filesystem::create_directories(dev);
  std::ofstream(dev + "/fw_version") << "1.5.2.380\n";
  CHECK(ReadFirmwareVersion(root, "0000:c5:00.1").value() == "1.5.2.380");
  CHECK(ReadFirmwareVersion(root, "0000:c6:00.1").status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(ReadFirmwareVersion(root, "").status().code() ==
        absl::StatusCode::kNotFound);
  std::ofstream(dev + "/fw_version") << "garbage";
  absl::StatusOr<std::string> bad = ReadFirmwareVersion(root, "0000:c5:00.1");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad.status().message()),
             Catch::Contains(dev + "/fw_version"));
}

}  // namespace
}  // namespace irontune
