#include "daemon/sim/presets.h"

namespace irontune::sim {
namespace {

// Figures marked "facts:" come from docs/npu-facts.md: column counts,
// hwctx_limit, packaging, col_opc, DPM tables and names from "Devices" and
// "Power modes", memory sizes from "Memory and DMA", per-call costs from
// "Call costs".
SimPreset MakeNpu2() {
  SimPreset p;
  p.spec = "sim:npu2";
  p.name = "NPU Strix";  // facts: xrt-smi name
  p.generation = "npu2";
  p.columns = 8;       // facts: 8 columns x 4 core rows
  p.hw_contexts = 16;  // facts: hwctx_limit 16
  p.full_elf = true;   // facts: full ELF or xclbin chain
  p.col_opc = 4096;    // facts: col_opc 4096
  p.dpm_mhz = {792, 1056, 1152, 1267, 1267, 1408, 1584, 1800};  // npu4 DPM
  // [inferred] npu2 bf16 MAC shape (4, 8, 8): docs/npu-facts.md gives npu1's
  // only.
  p.bf16_mac = {4, 8, 8};
  // [sim assumption] docs/npu-facts.md gives no DDR figure: a share of Strix's
  // LPDDR5X-7500 x128 (120 GB/s) and a shim column's two MM2S channels.
  p.ddr_gbps = 60;
  p.shim_col_gbps = 10;
  p.dispatch_us = 52;     // facts: dispatch 49-56 us
  p.run_base_us = 38;     // facts: a run's base 37-40 us
  p.reconfigure_us = 45;  // facts: configuring the array 43-47 us
  // facts (Strix micro-benchmark): one submit + wait 66-117 us p50.
  p.chain_step_us = 90;
  // facts: reconfiguring 1 tile 82 us, all 32 tiles 302 us (the sim
  // interpolates by cores used; this is the 1-tile figure).
  p.switch_us = 82;
  p.switch_all_us = 302;
  // [sim assumption] sized so a 2048-element add step is ~3 us
  // (facts: "a 2048-element add step about 3 us").
  p.step_sync_us = 1.0;
  p.column_setup_us = 0.35;
  return p;
}

SimPreset MakeNpu1() {
  SimPreset p;
  p.spec = "sim:npu1";
  p.name = "NPU Phoenix";  // facts: xrt-smi name
  p.generation = "npu1";
  p.columns = 4;       // facts: 4 usable columns
  p.hw_contexts = 6;   // facts: hwctx_limit 6
  p.full_elf = false;  // facts: xclbin chain only
  p.col_opc = 2048;    // facts: col_opc 2048
  p.dpm_mhz = {800, 1024, 1024, 1024, 1024, 1309, 1309, 1600};  // npu1 DPM
  p.bf16_mac = {4, 8, 4};  // facts: npu1 bf16 (4, 8, 4)
  // [sim assumption] a share of Phoenix's LPDDR5-6400 x128 (102 GB/s).
  p.ddr_gbps = 40;
  p.shim_col_gbps = 8;
  p.dispatch_us = 0;  // the chain's steps carry their own dispatch
  p.run_base_us = 0;
  p.reconfigure_us = 0;     // no full ELF on npu1
  p.chain_step_us = 270;    // facts: each step about 250-300 us
  p.switch_us = 120;        // facts: switching design 117-130 us
  p.switch_all_us = 120;    // one figure: no dependence on cores used
  p.step_sync_us = 1.5;     // [sim assumption]
  p.column_setup_us = 0.5;  // [sim assumption]
  return p;
}

const SimPreset& Npu2() {
  static const SimPreset* p = new SimPreset(MakeNpu2());
  return *p;
}
const SimPreset& Npu1() {
  static const SimPreset* p = new SimPreset(MakeNpu1());
  return *p;
}

}  // namespace

const SimPreset* FindSimPreset(std::string_view spec) {
  if (spec == Npu2().spec) return &Npu2();
  if (spec == Npu1().spec) return &Npu1();
  return nullptr;
}

const SimPreset* FindSimPresetByGeneration(std::string_view generation) {
  if (generation == Npu2().generation) return &Npu2();
  if (generation == Npu1().generation) return &Npu1();
  return nullptr;
}

int CoreMhz(const SimPreset& preset, PowerMode mode) {
  // docs/npu-facts.md "Power modes": powersaver lowest, balanced level 3,
  // performance and turbo top. "default" is dynamic on hardware; the sim
  // takes default_dpm_level [sim assumption: one light context's QoS].
  switch (mode) {
    case PowerMode::kPowersaver:
      return preset.dpm_mhz.front();
    case PowerMode::kBalanced:
      return preset.dpm_mhz[preset.balanced_dpm_level];
    case PowerMode::kPerformance:
    case PowerMode::kTurbo:
      return preset.dpm_mhz.back();
    case PowerMode::kDefault:
      break;
  }
  return preset.dpm_mhz[preset.default_dpm_level];
}

}  // namespace irontune::sim
