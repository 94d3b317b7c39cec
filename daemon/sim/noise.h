// The simulated NPU's noise: seeded run-to-run jitter, rare outliers, slow
// drift over virtual time, a small CPU wait per call, and scripted
// interference (another process holding the NPU) and CPU waits.
//
// Determinism: every Apply draws the same number of values from one
// std::mt19937_64 seeded with the seed, and turns them into numbers with
// its own arithmetic (not std:: distributions, whose output varies by
// library), so the same seed and the same call sequence give identical
// results.
// Threads: not thread-safe; owned and used by one SimDevice.
#ifndef IRONTUNE_DAEMON_SIM_NOISE_H_
#define IRONTUNE_DAEMON_SIM_NOISE_H_

#include <cstdint>
#include <random>
#include <vector>

namespace irontune::sim {

// [sim assumption] figures, chosen to resemble what IRON's timing sees on a
// quiet NPU box: a few percent of jitter, rare slow calls, ~1% drift.
struct NoiseSettings {
  // Standard deviation of the multiplicative run-to-run jitter.
  double jitter = 0.02;
  // Share of calls that are outliers, and their slow-down range.
  double outlier_probability = 0.005;
  double outlier_min = 1.5;
  double outlier_max = 3.0;
  // Drift: a sinusoid over virtual time, relative amplitude and period.
  double drift_amplitude = 0.01;
  double drift_period_us = 60e6;
  // Every call's CPU wait: exponential with this mean (microseconds).
  double cpu_wait_mean_us = 3;

  // No noise at all: elapsed times equal the model, CPU waits are 0 (but
  // scripted interference and CPU waits still apply).
  static NoiseSettings Off() { return {0, 0, 1, 1, 0, 60e6, 0}; }
};

// Another process holds the NPU from virtual time `start_us` for
// `duration_us`.
struct InterferenceScript {
  double start_us = 0;
  double duration_us = 0;
  int pid = 4242;
};

// Calls number `start_call` .. `start_call + calls - 1` (counting every
// Run on the device from 0) report `wait_us` of CPU wait.
struct CpuWaitScript {
  int64_t start_call = 0;
  int64_t calls = 1;
  double wait_us = 5000;
};

class Noise {
 public:
  Noise(uint64_t seed, const NoiseSettings& settings);

  struct Draw {
    double elapsed_us = 0;
    double cpu_wait_us = 0;
  };
  // Noise for call number `call` whose model time is `model_us`, at virtual
  // time `now_us`.
  Draw Apply(double model_us, double now_us, int64_t call);

  void AddInterference(const InterferenceScript& script);
  void AddCpuWait(const CpuWaitScript& script);
  // The pids of the interference windows holding at `now_us`.
  std::vector<int> HoldersAt(double now_us) const;

  const NoiseSettings& settings() const { return settings_; }

 private:
  double Uniform();  // [0, 1)

  NoiseSettings settings_;
  std::mt19937_64 rng_;
  std::vector<InterferenceScript> interference_;
  std::vector<CpuWaitScript> cpu_waits_;
};

}  // namespace irontune::sim

#endif  // IRONTUNE_DAEMON_SIM_NOISE_H_
