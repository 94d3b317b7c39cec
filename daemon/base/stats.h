// Robust summary statistics for timing series.
//
// The standard error of the median is the Maritz-Jarrett estimate: the
// spread of the sample's order statistics weighted by the Beta(m, n-m+1)
// distribution of the m-th order statistic's rank. It assumes nothing about
// the distribution of the samples, which matters for NPU timings: they are
// skewed and have outliers. docs/statistics.md says why and how it is
// checked.
#ifndef IRONTUNE_DAEMON_BASE_STATS_H_
#define IRONTUNE_DAEMON_BASE_STATS_H_

#include <optional>
#include <vector>

#include "absl/types/span.h"

namespace irontune {

// The median; the mean of the middle two for an even count.
// REQUIRES: !samples.empty().
double Median(absl::Span<const double> samples);

// The Maritz-Jarrett standard error of the median; nullopt from fewer than
// two samples.
std::optional<double> MedianStandardError(absl::Span<const double> samples);

struct Difference {
  double delta = 0;  // paired: median(a - b); unpaired: median(a) - median(b)
  std::optional<double> noise;  // its standard error
};

// How much larger `a` is than `b`, with `a[i]` and `b[i]` measured together
// (one round): delta is the median of the paired differences a[i] - b[i]
// and the noise its standard error, so what the two rounds shared cancels
// from both.
// REQUIRES: a.size() == b.size(), both non-empty.
Difference PairedDifference(absl::Span<const double> a,
                            absl::Span<const double> b);

// How much larger `a` is than `b` when they were measured apart: the two
// standard errors combined in quadrature. nullopt noise if either has one
// sample. REQUIRES: both non-empty.
Difference UnpairedDifference(absl::Span<const double> a,
                              absl::Span<const double> b);

// The spread between batches: the sample standard deviation of one figure
// (e.g. a setting's median step time) measured once in each of several
// batches, which holds whatever moved a whole batch (drift, another
// process) besides each batch's own noise. nullopt from fewer than two.
std::optional<double> BatchNoise(absl::Span<const double> figures);

// Independent errors combined: the square root of the sum of squares;
// nullopt where any of them is unknown (0 for none).
std::optional<double> Quadrature(
    absl::Span<const std::optional<double>> errors);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_STATS_H_
