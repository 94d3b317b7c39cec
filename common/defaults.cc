#include "common/defaults.h"

namespace irontune {

v1::Timing WithDefaults(v1::Timing timing) {
  if (timing.rounds() == 0) timing.set_rounds(kDefaultRounds);
  if (timing.calls() == 0) timing.set_calls(kDefaultCalls);
  if (timing.settle() == 0) timing.set_settle(kDefaultSettle);
  if (!(timing.cutoff() > 0)) timing.set_cutoff(kDefaultCutoff);
  return timing;
}

}  // namespace irontune
