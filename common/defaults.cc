#include "common/defaults.h"

#include <algorithm>

namespace irontune {

ResolvedTiming::ResolvedTiming(const v1::Timing& timing) {
  if (timing.rounds() != 0) rounds_ = timing.rounds();
  if (timing.calls() != 0) calls_ = timing.calls();
  if (timing.settle() != 0) settle_ = timing.settle();
  if (timing.cutoff() > 0) cutoff_ = timing.cutoff();
}

ResolvedTiming ResolvedTiming::WithRounds(uint32_t rounds) const {
  ResolvedTiming out = *this;
  out.rounds_ = std::max<uint32_t>(1, rounds);
  return out;
}

ResolvedTiming ResolvedTiming::WithCalls(uint32_t calls) const {
  ResolvedTiming out = *this;
  out.calls_ = std::max<uint32_t>(1, calls);
  return out;
}

v1::Timing ResolvedTiming::proto() const {
  v1::Timing out;
  out.set_rounds(rounds_);
  out.set_calls(calls_);
  out.set_settle(settle_);
  out.set_cutoff(cutoff_);
  return out;
}

}  // namespace irontune
