// The nearest-rank percentile the benchmarks print.
#ifndef IRONTUNE_BENCH_PERCENTILE_H_
#define IRONTUNE_BENCH_PERCENTILE_H_

#include <algorithm>
#include <cstddef>
#include <vector>

namespace irontune {

// Nearest-rank percentile of `v`, p in [0, 100]; 0 for no samples.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(p / 100.0 * v.size() + 0.999999);
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

}  // namespace irontune

#endif  // IRONTUNE_BENCH_PERCENTILE_H_
