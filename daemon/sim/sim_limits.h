// What the simulated NPU's designs must satisfy before the SimBuilder builds
// them: the families' constraints (common/families.h ConstraintViolation:
// divisibility, MAC shapes, L1, columns), then the sim's physical transfer
// limits (GEMM memtile capacity, shim descriptors). Facts from
// docs/npu-facts.md ("Memory and DMA", "GEMM", "GEMV");
// checks docs/npu-facts.md only implies are marked [inferred] in sim_limits.cc
// and docs/simulated-npu.md.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_SIM_SIM_LIMITS_H_
#define IRONTUNE_DAEMON_SIM_SIM_LIMITS_H_

#include <string>

#include "daemon/sim/design.h"
#include "daemon/sim/presets.h"

namespace irontune::sim {

// Why `op` at its setting does not fit `preset`, as a reason a person can
// act on (e.g. "L1: 2 A + 2 B + 2 C tiles + 3.3 KiB stack need 72.0 KiB of
// 64 KiB"); empty when it fits. Unknown classes are only checked for
// num_aie_columns.
std::string SimRefusal(const OpView& op, const SimPreset& preset);

// Why the simulated NPU cannot run class `cls` at all (it has no kernel,
// CPU reference or model for it: its output would be a copy of its input,
// which no gate can judge), as the tuner reports a shape it leaves
// untuned; "" for a class it runs. Resample and ResampleTaps (IRON's
// bit-exact torchvision resize, iron/operators/resample/op.py).
std::string SimUnsupported(std::string_view cls);

}  // namespace irontune::sim

#endif  // IRONTUNE_DAEMON_SIM_SIM_LIMITS_H_
