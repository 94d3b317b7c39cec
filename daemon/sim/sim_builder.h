// SimBuilder: the in-process Builder for the simulated NPU. It checks a
// setting against the sim's limits (sim_limits.h) and refuses what does not
// fit with a reason; otherwise it packages the design as a sim payload
// (daemon/sim/design.h) that SimDevice loads.
//
// Artifact:
//   recipe_hash    sha256 hex of a canonical text of the class, the params
//                  and tunables (sorted by name, typed values), the buffers'
//                  dtypes and shapes, and the generation; independent of
//                  packaging, steps and distinct (the design, not its
//                  runlist).
//   artifact_hash  sha256 hex of the payload.
//   buffers        per step (every step when distinct, else step 0's only),
//                  one per operator buffer, named "s<step>.<buffer name>"
//                  (the buffer's index when it has no unique name).
//   symbols        the operator's CallValue symbols.
//   payload        the operator (tunable domains, pinned and tolerance
//                  stripped: they do not change the design), generation,
//                  packaging, steps and distinct.
//
// Threads: stateless; any thread may call.
#ifndef IRONTUNE_DAEMON_SIM_SIM_BUILDER_H_
#define IRONTUNE_DAEMON_SIM_SIM_BUILDER_H_

#include <string>

#include "daemon/npu/builder.h"

namespace irontune {

class SimBuilder : public Builder {
 public:
  // Refuses (in the outcome) a design that does not fit, and full ELF for
  // a generation without it. InvalidArgument for a bad request: a platform
  // that is not a sim preset's generation, steps outside [1, 65536],
  // unspecified packaging, a buffer of unknown dtype or of absurd size.
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override;
  std::string Environment() const override;
};

// The recipe hash SimBuilder gives `op` on `generation`.
std::string SimRecipeHash(const v1::Operator& op, std::string_view generation);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SIM_SIM_BUILDER_H_
