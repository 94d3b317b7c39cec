// SimDevice: the simulated NPU, irontune's embedded default device
// (`--device sim:npu2`, `sim:npu1`). It loads SimBuilder's artifacts, times
// their runs with the performance model (perf_model.h) plus seeded noise
// (noise.h), and computes their outputs on the CPU (kernels.h).
// docs/simulated-npu.md describes the model, its constants and its sources.
//
// Clocks: on SimOptions::Clock::kVirtual a Run returns at once; on
// kRealTime it waits until its simulated time has passed, so wall time
// follows simulated time: sleeping, then spinning a window learned from
// how late its sleeps end (sim::PreciseWait). A real-time device made on
// a thread that may use two CPUs or more reserves the last of them as its
// timing CPU (thread_roles.h): each run's wait is pinned there, helper
// threads keep off it, and runs up to kSpinWholeRun are spun whole. The
// device keeps a virtual clock (now_us) that drives drift and scripted
// interference: on kVirtual it advances by every run's elapsed time and by
// holders_query_us per OtherHolders() query (so a caller polling for the NPU
// to come free sees the script end); on kRealTime it is the wall time since
// the device was made.
//
// Ownership: the device must outlive every image it loads (images hold a
// pointer to it to release their hardware context and share its clock,
// noise and power mode).
// Threads: not thread-safe; a device and its images are used by one thread
// at a time (the Device seam's rule).
// Determinism: the same options (seed) and the same sequence of calls give
// the same elapsed times, CPU waits and outputs.
#ifndef IRONTUNE_DAEMON_SIM_SIM_DEVICE_H_
#define IRONTUNE_DAEMON_SIM_SIM_DEVICE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/npu/device.h"
#include "daemon/sim/design.h"
#include "daemon/sim/noise.h"
#include "daemon/sim/perf_model.h"
#include "daemon/sim/precise_wait.h"
#include "daemon/sim/presets.h"

namespace irontune {

// On kRealTime with a timing CPU, runs this short are spun whole: the
// timing CPU is kept for them, and a sleep there could end a scheduler
// tick late.
inline constexpr std::chrono::milliseconds kSpinWholeRun{2};

// The simulated NPU's stack, as GetStackVersions reports it: firmware
// "sim-<kSimStackVersion>", driver and XRT "sim"; the same on every run
// and every preset (the preset is the platform). Raise it when the
// simulation changes what a design times, so a fleet of simulated boxes
// keys the new figures apart from the old (daemon/fleet/fleet_toolchain.h).
inline constexpr int kSimStackVersion = 1;

struct SimOptions {
  enum class Clock { kVirtual, kRealTime };

  uint64_t seed = 1;
  Clock clock = Clock::kVirtual;
  // sim::NoiseSettings::Off() for times equal to the model.
  sim::NoiseSettings noise;
  PowerMode power_mode = PowerMode::kDefault;
  // Virtual time one OtherHolders() query takes on kVirtual [sim
  // assumption: about what `xrt-smi examine` takes].
  double holders_query_us = 100'000;
  // Tests: from run number `hang_after_runs` on (counting every run from
  // 0) a run never returns, as on an NPU that hangs; the process must be
  // killed. Negative: never.
  int64_t hang_after_runs = -1;
};

class SimDevice : public Device {
 public:
  // Use MakeSimDevice. `preset` is static (presets.h).
  SimDevice(const sim::SimPreset& preset, const SimOptions& options);
  ~SimDevice() override;
  SimDevice(const SimDevice&) = delete;
  SimDevice& operator=(const SimDevice&) = delete;

  absl::StatusOr<Platform> GetPlatform() override;
  // {"sim-<kSimStackVersion>", "sim", "sim"}.
  StackVersions GetStackVersions() override;
  // InvalidArgument for a payload SimBuilder did not make, an artifact of
  // another generation, a packaging this preset lacks (npu1 full ELF) or
  // buffers that disagree with the design; ResourceExhausted past the
  // preset's hardware contexts.
  absl::StatusOr<std::unique_ptr<Image>> Load(
      const Artifact& artifact) override;
  // The scripted interference holding at the virtual clock's now (on
  // kVirtual, after advancing it by holders_query_us).
  absl::StatusOr<std::vector<int>> OtherHolders() override;

  // Changes the power mode (and so the core clock) at any time.
  // FailedPrecondition for turbo while any image holds a context
  // (docs/npu-facts.md "Power modes").
  absl::Status SetPowerMode(PowerMode mode);

  // Scripting, for tests and demos.
  void ScriptInterference(const sim::InterferenceScript& script);
  void ScriptCpuWait(const sim::CpuWaitScript& script);

  // Ground truth: the noise-free step and run times of `artifact` at the
  // present power mode, with per-call `values` by symbol. InvalidArgument as
  // Load, except contexts.
  absl::StatusOr<double> TrueStepUs(const Artifact& artifact,
                                    const sim::CallValues& values = {}) const;
  absl::StatusOr<double> TrueRunUs(
      const Artifact& artifact, const sim::CallValues& values = {},
      sim::Switching switching = sim::Switching::kSameDesign) const;

  double now_us() const;                    // the virtual clock
  int64_t calls() const { return calls_; }  // Runs so far, every image
  int live_images() const { return live_images_; }
  const sim::SimPreset& preset() const { return preset_; }
  PowerMode power_mode() const { return mode_; }
  int core_mhz() const { return sim::CoreMhz(preset_, mode_); }
  // The CPUs its runs wait on (kRealTime; empty: any).
  const std::vector<int>& timing_cpus() const { return timing_cpus_; }

 private:
  friend class SimImage;

  absl::StatusOr<sim::SimDesign> CheckedDesign(const Artifact& artifact) const;
  // One call of image `image_id`: its noisy elapsed time and CPU wait; waits
  // on kRealTime. Advances the clock and the call count.
  RunResult TimeRun(int64_t image_id, const sim::SimDesign& design,
                    const sim::CallValues& values,
                    std::chrono::steady_clock::time_point started);
  void Release() { --live_images_; }

  const sim::SimPreset& preset_;
  const SimOptions options_;
  sim::Noise noise_;
  PowerMode mode_;
  int live_images_ = 0;
  int64_t next_image_id_ = 1;
  int64_t last_image_id_ = 0;  // the image that ran last
  int64_t calls_ = 0;
  double virtual_us_ = 0;
  std::chrono::steady_clock::time_point created_;
  std::vector<int> timing_cpus_;
  sim::PreciseWait wait_;  // kRealTime's runs
};

// Makes the simulated NPU `spec` ("sim:npu2" or "sim:npu1").
// InvalidArgument naming the spec and the known ones otherwise.
absl::StatusOr<std::unique_ptr<SimDevice>> MakeSimDevice(
    std::string_view spec, SimOptions options = {});

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SIM_SIM_DEVICE_H_
