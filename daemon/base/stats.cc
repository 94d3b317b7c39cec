#include "daemon/base/stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace irontune {
namespace {

// Ascending, NaN last, so that sorting is well defined on any input.
std::vector<double> Sorted(absl::Span<const double> samples) {
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end(), [](double a, double b) {
    return a < b || (!std::isnan(a) && std::isnan(b));
  });
  return sorted;
}

double MedianOfSorted(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  if (n % 2 == 1) return sorted[n / 2];
  return 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

// P(Binomial(n, x) >= m), which for integer m in [1, n] is the CDF at x of
// Beta(m, n - m + 1), the distribution of the m-th of n uniform order
// statistics. `log_choose[k]` is log C(n, k).
double BetaCdf(int n, int m, double x, const std::vector<double>& log_choose) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_x = std::log(x);
  const double log_1mx = std::log1p(-x);
  // Summing whichever tail is shorter keeps the terms few; each term is
  // computed in logs so that no factor overflows for large n.
  double sum = 0;
  if (m > n / 2) {
    for (int k = m; k <= n; ++k) {
      sum += std::exp(log_choose[k] + k * log_x + (n - k) * log_1mx);
    }
    return std::min(1.0, sum);
  }
  for (int k = 0; k < m; ++k) {
    sum += std::exp(log_choose[k] + k * log_x + (n - k) * log_1mx);
  }
  return std::max(0.0, 1.0 - sum);
}

}  // namespace

double Median(absl::Span<const double> samples) {
  assert(!samples.empty());
  return MedianOfSorted(Sorted(samples));
}

std::optional<double> MedianStandardError(absl::Span<const double> samples) {
  const int n = static_cast<int>(samples.size());
  if (n < 2) return std::nullopt;
  const std::vector<double> x = Sorted(samples);
  const int m = (n + 1) / 2;  // floor(n / 2 + 0.5)

  std::vector<double> log_choose(n + 1);
  for (int k = 0; k <= n; ++k) {
    log_choose[k] =
        std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
  }

  std::vector<double> weights(n);
  double previous_cdf = 0;
  for (int i = 1; i <= n; ++i) {
    const double cdf = BetaCdf(n, m, static_cast<double>(i) / n, log_choose);
    weights[i - 1] = cdf - previous_cdf;
    previous_cdf = cdf;
  }
  // C2 - C1^2 is the weighted variance; it is computed in two passes about a
  // sample near the middle so that a small spread on a large offset (timings
  // of 1000 us that vary by 0.1 us) loses no precision, and equal samples
  // give exactly 0.
  const double origin = x[m - 1];
  double c1 = 0;
  for (int i = 0; i < n; ++i) c1 += weights[i] * (x[i] - origin);
  double variance = 0;
  for (int i = 0; i < n; ++i) {
    const double d = x[i] - origin - c1;
    variance += weights[i] * d * d;
  }
  return std::sqrt(std::max(0.0, variance));
}

Difference PairedDifference(absl::Span<const double> a,
                            absl::Span<const double> b) {
  assert(a.size() == b.size() && !a.empty());
  std::vector<double> differences(a.size());
  for (size_t i = 0; i < a.size(); ++i) differences[i] = a[i] - b[i];
  return Difference{Median(differences), MedianStandardError(differences)};
}

Difference UnpairedDifference(absl::Span<const double> a,
                              absl::Span<const double> b) {
  assert(!a.empty() && !b.empty());
  Difference out{Median(a) - Median(b), std::nullopt};
  const std::optional<double> se_a = MedianStandardError(a);
  const std::optional<double> se_b = MedianStandardError(b);
  if (se_a && se_b) out.noise = std::hypot(*se_a, *se_b);
  return out;
}

std::optional<double> BatchNoise(absl::Span<const double> figures) {
  const size_t n = figures.size();
  if (n < 2) return std::nullopt;
  double mean = 0;
  for (double x : figures) mean += x / n;
  double sum = 0;
  for (double x : figures) sum += (x - mean) * (x - mean);
  return std::sqrt(sum / (n - 1));
}

std::optional<double> Quadrature(
    absl::Span<const std::optional<double>> errors) {
  double sum = 0;
  for (const std::optional<double>& x : errors) {
    if (!x) return std::nullopt;
    sum += *x * *x;
  }
  return std::sqrt(sum);
}

}  // namespace irontune
