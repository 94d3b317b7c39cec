// XrtDevice: a real Ryzen AI NPU behind the Device seam (daemon/npu/
// device.h), driven through XRT (2.19 or later, with the amdxdna driver).
// `--device xrt:N`. docs/npu-box.md says how to build and run it.
//
// Load takes an artifact whose payload is an XRT artifact manifest
// (artifact_manifest.h) and makes one hardware context for it:
//   xclbin chain: xrt::xclbin, its kernel (the manifest's, or the xclbin's
//     first), device.register_xclbin, hw_context(device, uuid),
//     xrt::kernel(ctx, kernel); the instruction buffer cacheable in
//     group_id(1), data buffers host_only in group_id(3..), no more than
//     the kernel declares; a step is a run of (opcode 3, instructions, word
//     count, buffers...) ended by wait(timeout), whose ert_cmd_state must be
//     COMPLETED.
//   full ELF: xrt::elf, hw_context(device, elf), xrt::ext::kernel(ctx,
//     "main:sequence"); one host-only xrt::ext::bo per arena (input,
//     output, scratch[, feedback]) bound as arguments 0.. and nothing else
//     (as many as the ELF declares, where the headers tell); each buffer a
//     view (arena, offset) of one; per-call values in the run's ctrl
//     scratchpad (xrt::run::get_ctrl_scratchpad_bo), encoded by kind; one
//     run of the fused sequence (every step) per call: start, wait2(timeout).
// Per-call values are written where the manifest's symbols say (an int32
// instruction word, or a ctrl scratchpad word: a core's value << 2).
// Buffers and scratchpads are synced to the device when written and from it
// when read, a buffer's range only: never inside the timed span, which is
// steady-clock time around start + wait of every run (SpanClockNow,
// span_clock.h). A run whose wait times out is aborted before it is
// started again or destroyed (XRT's contract), and the call fails
// Unavailable.
//
// The host around it: the platform and power mode from `xrt-smi examine -r
// platform`, the stack's versions at open (stack_versions.h: XRT's and the
// driver's from xrt::device::get_info<host>, the firmware's from the
// driver's sysfs fw_version), the other holders from `xrt-smi examine -r
// aie-partitions`,
// an optional power mode set at open, and timing hygiene
// (timing_hygiene.h): the thread pinned to the completion CPUs during a
// Run, spinners on their SMT siblings while any image is loaded, and the
// CPU wait of each Run from schedstat.
//
// Ownership: the device must outlive its images. Threads: one thread at a
// time (the Device seam's rule). Failure: Status; no XRT exception escapes.
#ifndef IRONTUNE_DAEMON_XRT_XRT_DEVICE_H_
#define IRONTUNE_DAEMON_XRT_XRT_DEVICE_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "daemon/npu/device.h"
#include "daemon/xrt/timing_hygiene.h"
#include "daemon/xrt/xrt_smi.h"

namespace irontune {

struct XrtDeviceOptions {
  unsigned int index = 0;  // xrt:N
  XrtSmiOptions smi;
  HygieneOptions hygiene;
  // Set with `xrt-smi configure --pmode` at open; nullopt leaves it.
  std::optional<PowerMode> power_mode;
  int own_pid = 0;  // 0: getpid(); excluded from OtherHolders
  // The longest a step may run before the call fails (Unavailable).
  std::chrono::milliseconds run_timeout{10'000};
  // Where sysfs is: the NPU's fw_version is read under it.
  std::string sys_root = "/sys";
};

// "xrt:0" -> 0. InvalidArgument naming the spec otherwise.
absl::StatusOr<unsigned int> ParseXrtSpec(absl::string_view spec);

class XrtDevice : public Device {
 public:
  // Opens NPU `options.index`, sets the power mode when asked, and reads
  // the platform. FailedPrecondition when the NPU cannot be opened (naming
  // it and XRT's reason), when the power mode cannot be set (turbo while
  // contexts are active), or when xrt-smi's report is unusable.
  static absl::StatusOr<std::unique_ptr<XrtDevice>> Open(
      XrtDeviceOptions options);
  ~XrtDevice() override;
  XrtDevice(const XrtDevice&) = delete;
  XrtDevice& operator=(const XrtDevice&) = delete;

  // The platform as xrt-smi reports it now.
  absl::StatusOr<Platform> GetPlatform() override;
  // As read at open (stack_versions.h); what could not be read is "", and
  // Open logged a warning saying why.
  StackVersions GetStackVersions() override;
  // InvalidArgument for a payload that is no manifest (format /1 included),
  // a packaging the platform lacks, files that are missing or malformed,
  // symbols the manifest does not place, buffers the kernel's arguments do
  // not match, or a design wider than the NPU (the driver's ENOSPC);
  // ResourceExhausted when no hardware context (the driver's ENOENT,
  // ENODEV, EINVAL, EBUSY) or buffer can be had, saying how many contexts
  // irontuned holds.
  absl::StatusOr<std::unique_ptr<Image>> Load(
      const Artifact& artifact) override;
  absl::StatusOr<std::vector<int>> OtherHolders() override;

  // Hardware contexts held now (live images).
  int contexts_held() const;
  const TimingHygiene& hygiene() const;

  struct Impl;

 private:
  explicit XrtDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_XRT_DEVICE_H_
