// The defaults of a Measure or Autotune request: IRON's Timing and runlist
// length. The daemon fills them in at its wire boundary (ResolvedTiming,
// RepeatsOf in daemon/server/requests.h); the client quotes them in its
// help. One home, so the two never disagree.
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

// A Timing with every default applied: what the method times by. It is
// made from a request's Timing, whose zero fields (and a cutoff that is
// not positive) take the defaults above, once, at the wire boundary; it
// has no field that means "the default", so nothing past the boundary
// resolves it again. Rounds and calls are at least 1. A value type;
// thread-compatible.
class ResolvedTiming {
 public:
  // IRON's defaults.
  ResolvedTiming() = default;
  // `timing` with its defaults applied. Explicit: a raw Timing is never
  // taken for a resolved one.
  explicit ResolvedTiming(const v1::Timing& timing);

  uint32_t rounds() const { return rounds_; }
  uint32_t calls() const { return calls_; }
  uint32_t settle() const { return settle_; }
  double cutoff() const { return cutoff_; }

  // This Timing with `rounds` rounds, or `calls` calls a round, in place of
  // its own (at least 1: a 0 is taken as 1, never as the default); the
  // other fields kept.
  ResolvedTiming WithRounds(uint32_t rounds) const;
  ResolvedTiming WithCalls(uint32_t calls) const;

  // As a Timing with every field set: its bytes name it in keys.
  v1::Timing proto() const;

 private:
  uint32_t rounds_ = kDefaultRounds;
  uint32_t calls_ = kDefaultCalls;
  uint32_t settle_ = kDefaultSettle;
  double cutoff_ = kDefaultCutoff;
};

}  // namespace irontune

#endif  // IRONTUNE_COMMON_DEFAULTS_H_
