// The defaults of a Measure or Autotune request: IRON's Timing and runlist
// length. The daemon fills them in at its wire boundary; the client quotes
// them in its help. One home, so the two never disagree.
#ifndef IRONTUNE_COMMON_DEFAULTS_H_
#define IRONTUNE_COMMON_DEFAULTS_H_

#include <cstdint>

#include "irontune/v1/measurement.pb.h"

namespace irontune {

// IRON's Timing defaults (its probe module): interleaved rounds, calls per
// round, rounds before slow settings are cut, and the cut's ratio to the
// fastest.
inline constexpr uint32_t kDefaultRounds = 8;
inline constexpr uint32_t kDefaultCalls = 50;
inline constexpr uint32_t kDefaultSettle = 2;
inline constexpr double kDefaultCutoff = 1.5;

// Steps in the many-step runlist a step's time is taken from (IRON's
// REPEATS); a request's 0 means this.
inline constexpr int kDefaultRepeats = 9;

// `timing` with zero fields (and a cutoff that is not positive) replaced by
// the defaults above.
v1::Timing WithDefaults(v1::Timing timing);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_DEFAULTS_H_
