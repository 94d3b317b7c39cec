// The simulated NPUs' hardware facts: one preset per `sim:` device spec.
// Every figure comes from docs/npu-facts.md (cited per constant in
// presets.cc); figures docs/npu-facts.md does not give are marked
// [sim assumption] and documented in docs/simulated-npu.md.
//
// Immutable; every function is thread-safe.
#ifndef IRONTUNE_DAEMON_SIM_PRESETS_H_
#define IRONTUNE_DAEMON_SIM_PRESETS_H_

#include <array>
#include <string>
#include <string_view>

#include "common/families.h"
#include "daemon/npu/device.h"

namespace irontune::sim {

// The kernel's MAC shape, as common/families.h has it per generation.
using ::irontune::MacShape;

struct SimPreset {
  std::string spec;              // "sim:npu2"
  std::string name;              // platform name, as xrt-smi prints it
  std::string generation;        // "npu1" / "npu2"
  int columns = 0;               // usable columns
  int core_rows = 4;             // core rows per column
  int hw_contexts = 0;           // hwctx_limit
  bool full_elf = false;         // full-ELF packaging available
  int col_opc = 0;               // peak (int8) ops per cycle per column
  std::array<int, 8> dpm_mhz{};  // DPM H-clock table, lowest first
  int default_dpm_level = 6;     // the level pmode "default" runs at
  int balanced_dpm_level = 3;    // pmode "balanced"
  MacShape bf16_mac;             // bf16 kernel MAC shape

  // Memory (bytes).
  int l1_bytes = 64 * 1024;
  int memtile_bytes = 512 * 1024;
  int l1_stack_bytes = 3380;  // ~3.3 KiB of stack within L1

  // Bandwidth.
  double ddr_gbps = 0;                // DDR bandwidth the NPU gets, GB/s
  double shim_col_gbps = 0;           // per column shim DMA, GB/s
  double stream_bytes_per_cycle = 4;  // per core input stream channel

  // Per-call costs (microseconds).
  double dispatch_us = 0;      // submit + wait of a call
  double run_base_us = 0;      // a run's fixed base
  double reconfigure_us = 0;   // full ELF: configuring the array, per call
  double chain_step_us = 0;    // xclbin chain: each step's own dispatch
  double switch_us = 0;        // xclbin chain: switching, one core's design
  double switch_all_us = 0;    // xclbin chain: switching, every core's
  double step_sync_us = 0;     // every step: host-visible sync
  double column_setup_us = 0;  // every step: per used column (DMA setup)
};

// The preset for `spec` ("sim:npu2", "sim:npu1"), or nullptr.
const SimPreset* FindSimPreset(std::string_view spec);
// The preset whose generation is `generation`, or nullptr.
const SimPreset* FindSimPresetByGeneration(std::string_view generation);

// The core (H) clock the preset runs at in `mode`.
int CoreMhz(const SimPreset& preset, PowerMode mode);

}  // namespace irontune::sim

#endif  // IRONTUNE_DAEMON_SIM_PRESETS_H_
