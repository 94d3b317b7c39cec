// The stack under a real NPU (Device::GetStackVersions), read from what
// XRT and the amdxdna driver report:
//   - XRT's build and the driver's version from
//     xrt::device::get_info<xrt::info::device::host>(), JSON text of
//     XRT's `version` and `hash` and of its `drivers` (each `name`,
//     `version`, `hash` from /sys/module/NAME/version, "unknown" where the
//     module has none: Xilinx/XRT src/runtime_src/core/common/sysinfo.cpp
//     get_xrt_info, core/pcie/linux/system_linux.cpp driver_version
//     @963c58ee). xrt-smi prints the same as "Version", "Hash" and
//     "amdxdna Version" (core/tools/common/XBUtilities.cpp,
//     fill_xrt_versions), and for a driver of unknown version, which the
//     in-tree driver is (it declares no MODULE_VERSION), the kernel's
//     release: the in-tree driver is the kernel's.
//   - the NPU firmware's version from the driver's sysfs file
//     SYS/bus/pci/devices/BDF/fw_version, "MAJOR.MINOR.PATCH.BUILD" of
//     the version the driver asked the firmware for as it started it
//     (amd/xdna-driver drivers/accel/amdxdna/amdxdna_sysfs.c
//     fw_version_show, aie2_pci.c aie2_mgmt_fw_query @856409ca; in-tree
//     the same file). XRT's public API has no firmware
//     version; xrt-smi's "NPU Firmware Version" is the same struct, read
//     by the DRM_AMDXDNA_QUERY_FIRMWARE_VERSION ioctl (xdna-driver
//     src/shim/device.cpp, firmware_version), and is "N/A" for 0.0.0.0.
//
// The parsers are pure and tested on captured text (tests/xrt/).
// Threads: thread-safe.
#ifndef IRONTUNE_DAEMON_XRT_STACK_VERSIONS_H_
#define IRONTUNE_DAEMON_XRT_STACK_VERSIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace irontune {

// What get_info<host>() says of XRT and the amdxdna driver, each "" when
// it does not say.
struct XrtHostVersions {
  std::string xrt;     // "VERSION, HASH" ("2.19.194, 7d8151e6..."), or VERSION
  std::string driver;  // "VERSION, HASH" of the amdxdna module, or VERSION;
                       // "in-tree (Linux RELEASE)" where it has none
};

// Parses get_info<host>()'s JSON. `kernel_release` names the in-tree
// driver ("" leaves it unknown). Values are trimmed; "unknown", "N/A"
// and "" are unknown. InvalidArgument for text that is not a JSON object.
absl::StatusOr<XrtHostVersions> ParseXrtHostInfo(
    absl::string_view json, absl::string_view kernel_release);

// The firmware version in a sysfs fw_version file's text
// ("1.5.2.380\n" -> "1.5.2.380"); "" for 0.0.0.0 (no version, as xrt-smi
// says N/A). InvalidArgument for anything but four dotted numbers.
absl::StatusOr<std::string> ParseFirmwareVersion(absl::string_view text);

// Reads and parses `sys_root`/bus/pci/devices/`bdf`/fw_version. NotFound
// when there is no such file (no amdxdna device at that BDF, or a driver
// before February 2024), InvalidArgument as ParseFirmwareVersion.
absl::StatusOr<std::string> ReadFirmwareVersion(absl::string_view sys_root,
                                                absl::string_view bdf);

// This machine's kernel release (uname -r), "" if uname fails.
std::string KernelRelease();

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_STACK_VERSIONS_H_
