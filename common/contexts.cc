#include "common/contexts.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace irontune {

absl::StatusOr<std::vector<WeightedContext>> Contexts(int64_t top, int count,
                                                      int64_t unit) {
  if (top <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("contexts: top must be positive, got ", top));
  }
  if (count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("contexts: count must be at least 1, got ", count));
  }
  if (unit < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("contexts: unit must be at least 1, got ", unit));
  }
  if (top % unit != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "contexts: top ", top, " is not a multiple of unit ", unit));
  }

  std::vector<int64_t> found = {top};
  while (static_cast<int>(found.size()) < count) {
    const int64_t half = found.back() / 2;
    if (half < unit || half % unit != 0) break;
    found.push_back(half);
  }
  std::reverse(found.begin(), found.end());

  // Interval edges: 0, the midpoint of each neighbouring pair, then top.
  std::vector<double> edges = {0.0};
  for (size_t i = 0; i + 1 < found.size(); ++i) {
    edges.push_back(
        (static_cast<double>(found[i]) + static_cast<double>(found[i + 1])) /
        2.0);
  }
  edges.push_back(static_cast<double>(top));

  std::vector<WeightedContext> out;
  out.reserve(found.size());
  for (size_t i = 0; i < found.size(); ++i) {
    out.push_back(WeightedContext{
        (edges[i + 1] - edges[i]) / static_cast<double>(top), found[i]});
  }
  return out;
}

}  // namespace irontune
