// The context lengths a call whose work follows its context (attention over
// a KV cache) is timed at, and the share of calls each one stands for.
// Stateless; every function is thread-safe.
#ifndef IRONTUNE_COMMON_CONTEXTS_H_
#define IRONTUNE_COMMON_CONTEXTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace irontune {

struct WeightedContext {
  // The share of contexts uniform in (0, top] nearest this one.
  double weight;
  int64_t context;
};

// At most `count` contexts: `top`, then repeatedly half the last one while
// that half is at least `unit` and a multiple of it. Returned ascending.
// Each is weighted by the trapezoid rule: with edges at 0, the midpoints
// between neighbours and `top`, a context's weight is the width of the
// interval it sits in over `top`. The weights sum to 1 (up to rounding).
//
// E.g. Contexts(8192, 6, 256) gives 256, 512, ..., 8192 weighted
// 384/8192, 384/8192, 768/8192, 1536/8192, 3072/8192, 2048/8192.
//
// REQUIRES (else InvalidArgument naming the argument): top > 0, count >= 1,
// unit >= 1, top % unit == 0.
absl::StatusOr<std::vector<WeightedContext>> Contexts(int64_t top, int count,
                                                      int64_t unit);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_CONTEXTS_H_
