#include "daemon/base/stats.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

namespace irontune {
namespace {

TEST_CASE("Median of odd and even counts", "[stats]") {
  CHECK(Median(std::vector<double>{5}) == 5);
  CHECK(Median(std::vector<double>{3, 1, 2}) == 2);
  CHECK(Median(std::vector<double>{4, 1, 3, 2}) == 2.5);
  CHECK(Median(std::vector<double>{1, 1, 100, 1000, -5}) == 1);
}

TEST_CASE("MedianStandardError needs two samples", "[stats]") {
  CHECK_FALSE(MedianStandardError(std::vector<double>{}).has_value());
  CHECK_FALSE(MedianStandardError(std::vector<double>{7}).has_value());
  CHECK(MedianStandardError(std::vector<double>{7, 8}).has_value());
}

TEST_CASE("Equal samples have no spread", "[stats]") {
  CHECK(*MedianStandardError(std::vector<double>{2.5, 2.5}) == 0);
  CHECK(*MedianStandardError(std::vector<double>(9, 1234.125)) == 0);
}

TEST_CASE("Three samples, worked by hand", "[stats]") {
  // n = 3, m = 2: the weights are increments of the Beta(2, 2) CDF
  // 3x^2 - 2x^3 over thirds: 7/27, 13/27, 7/27. For {1, 2, 4}:
  // C1 = 61/27, C2 = 171/27, C2 - C1^2 = 896/729.
  const double expected = std::sqrt(896.0 / 729.0);
  CHECK(*MedianStandardError(std::vector<double>{4, 1, 2}) ==
        Approx(expected).epsilon(1e-12));
}

// The Maritz-Jarrett standard error by another route: the weights as
// integrals of the Beta(m, n - m + 1) density by composite Simpson's rule.
double QuadratureStandardError(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const int n = static_cast<int>(x.size());
  const int m = static_cast<int>(std::floor(n / 2.0 + 0.5));
  const double a = m;
  const double b = n - m + 1;
  const double log_beta = std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b);
  const double beta = std::exp(log_beta);
  auto density = [&](double t) {
    return std::pow(t, a - 1) * std::pow(1 - t, b - 1) / beta;
  };
  double c1 = 0;
  double c2 = 0;
  for (int i = 1; i <= n; ++i) {
    const double lo = (i - 1.0) / n;
    const double hi = static_cast<double>(i) / n;
    const int steps = 2000;  // even
    const double h = (hi - lo) / steps;
    double sum = density(lo) + density(hi);
    for (int k = 1; k < steps; ++k) {
      sum += (k % 2 == 1 ? 4 : 2) * density(lo + k * h);
    }
    const double w = sum * h / 3;
    c1 += w * x[i - 1];
    c2 += w * x[i - 1] * x[i - 1];
  }
  return std::sqrt(c2 - c1 * c1);
}

TEST_CASE("Small samples agree with numeric integration of Beta", "[stats]") {
  const std::vector<std::vector<double>> series = {
      {10, 12},
      {3, 9, 4, 1},
      {101.5, 99.25, 100, 250, 100.75, 98, 100.5},  // an outlier
      {5, 6, 7, 8, 9, 10, 11, 12, 13, 40},
  };
  for (const std::vector<double>& x : series) {
    CAPTURE(x);
    CHECK(*MedianStandardError(x) ==
          Approx(QuadratureStandardError(x)).epsilon(1e-7));
  }
}

TEST_CASE("The standard error follows the scale of the samples", "[stats]") {
  const std::vector<double> x = {3, 9, 4, 1, 7};
  std::vector<double> scaled;
  for (double v : x) scaled.push_back(1000 + 2.5 * v);
  CHECK(*MedianStandardError(scaled) ==
        Approx(2.5 * *MedianStandardError(x)).epsilon(1e-9));
}

TEST_CASE("Large normal samples approach the asymptotic standard error",
          "[stats]") {
  // SE of the median of n normal samples ~ sqrt(pi / 2) sigma / sqrt(n). One
  // sample of n = 2001 estimates it only to about +-25% (seeds 1..40 gave
  // ratios 0.75..1.28), so the test averages 40 seeded samples (measured
  // mean ratio 0.98).
  const int n = 2001;
  const double sigma = 3;
  const double asymptotic = 1.2533 * sigma / std::sqrt(n);
  double sum = 0;
  const int samples = 40;
  for (int seed = 1; seed <= samples; ++seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(100, sigma);
    std::vector<double> x(n);
    for (double& v : x) v = normal(rng);
    const double ratio = *MedianStandardError(x) / asymptotic;
    CHECK(ratio > 0.5);
    CHECK(ratio < 1.5);
    sum += ratio;
  }
  CHECK(sum / samples == Approx(1).epsilon(0.10));
}

enum class Shape { kNormal, kLogNormal };

// The fraction of `trials` seeded samples of `n` whose median lies within
// 1.96 standard errors of the true median.
double Coverage(Shape shape, int n, int trials, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  const double true_median = shape == Shape::kNormal ? 0 : 1;
  int covered = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x(n);
    for (double& v : x) {
      v = shape == Shape::kNormal ? normal(rng) : std::exp(normal(rng));
    }
    if (std::abs(Median(x) - true_median) <= 1.96 * *MedianStandardError(x)) {
      ++covered;
    }
  }
  return static_cast<double>(covered) / trials;
}

TEST_CASE("1.96 standard errors cover the true median about 95% of the time",
          "[stats]") {
  // Measured on libstdc++ 12 (docs/statistics.md): normal n=8 0.929,
  // n=20 0.943; lognormal n=8 0.935, n=20 0.929. With 2000 trials the
  // binomial noise is about 0.006.
  struct Case {
    Shape shape;
    int n;
  };
  for (const Case& c :
       {Case{Shape::kNormal, 8}, Case{Shape::kNormal, 20},
        Case{Shape::kLogNormal, 8}, Case{Shape::kLogNormal, 20}}) {
    const double coverage = Coverage(c.shape, c.n, 2000, 1000 + c.n);
    CAPTURE(static_cast<int>(c.shape), c.n, coverage);
    CHECK(coverage > 0.90);
    CHECK(coverage < 0.97);
  }
}

TEST_CASE("Pairing cancels what the rounds shared", "[stats]") {
  // Each round drifts by up to +-50 (another process, a clock change); a is
  // 2 slower than b with noise 0.5 of its own.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> drift(-50, 50);
  std::normal_distribution<double> jitter(0, 0.5);
  std::vector<double> a;
  std::vector<double> b;
  for (int round = 0; round < 15; ++round) {
    const double shared = drift(rng);
    a.push_back(102 + shared + jitter(rng));
    b.push_back(100 + shared + jitter(rng));
  }
  const Difference paired = PairedDifference(a, b);
  const Difference unpaired = UnpairedDifference(a, b);
  REQUIRE(paired.noise.has_value());
  REQUIRE(unpaired.noise.has_value());
  std::vector<double> differences;
  for (size_t i = 0; i < a.size(); ++i) differences.push_back(a[i] - b[i]);
  CHECK(paired.delta == Median(differences));
  CHECK(unpaired.delta == Median(a) - Median(b));
  // The paired delta is within a few of its noises of the truth.
  CHECK(std::abs(paired.delta - 2) < 3 * *paired.noise);
  CHECK(*paired.noise < 1);
  CHECK(*unpaired.noise > 10);
  CHECK(*paired.noise * 20 < *unpaired.noise);
}

TEST_CASE("Differences of single samples have no noise", "[stats]") {
  const std::vector<double> one_a = {5};
  const std::vector<double> one_b = {3};
  const std::vector<double> two = {1, 2};
  CHECK(PairedDifference(one_a, one_b).delta == 2);
  CHECK_FALSE(PairedDifference(one_a, one_b).noise.has_value());
  CHECK_FALSE(UnpairedDifference(one_a, two).noise.has_value());
  CHECK_FALSE(UnpairedDifference(two, one_b).noise.has_value());
}

TEST_CASE("The unpaired noise combines both in quadrature", "[stats]") {
  const std::vector<double> a = {1, 5, 2, 8, 3};
  const std::vector<double> b = {10, 11, 30, 12};
  const Difference d = UnpairedDifference(a, b);
  CHECK(d.delta == 3 - 11.5);
  REQUIRE(d.noise.has_value());
  CHECK(*d.noise ==
        Approx(std::hypot(*MedianStandardError(a), *MedianStandardError(b))));
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

TEST_CASE("BatchNoise is the sample standard deviation of the batches",
          "[stats]") {
  CHECK_FALSE(BatchNoise(std::vector<double>{}).has_value());
  CHECK_FALSE(BatchNoise(std::vector<double>{5}).has_value());
  CHECK(*BatchNoise(std::vector<double>{4, 4, 4}) == 0);
  // {1, 2, 3, 4}: mean 2.5, squares 2.25 + 0.25 + 0.25 + 2.25 = 5 over 3.
  CHECK(*BatchNoise(std::vector<double>{1, 2, 3, 4}) ==
        Approx(std::sqrt(5.0 / 3)));
  // A shift of every batch moves no spread.
  CHECK(*BatchNoise(std::vector<double>{1001, 1002, 1003, 1004}) ==
        Approx(std::sqrt(5.0 / 3)));
}

}  // namespace
}  // namespace irontune
