#include "daemon/sim/noise.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace irontune::sim {
namespace {

constexpr double kMaxSigmas = 4;  // jitter beyond 4 sd is clipped
constexpr double kMinJitterFactor = 0.5;

}  // namespace

Noise::Noise(uint64_t seed, const NoiseSettings& settings)
    : settings_(settings), rng_(seed) {}

double Noise::Uniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

Noise::Draw Noise::Apply(double model_us, double now_us, int64_t call) {
  // Always five draws, whatever the settings, so a call's position in the
  // sequence alone decides its numbers.
  const double u1 = Uniform(), u2 = Uniform(), u3 = Uniform(), u4 = Uniform(),
               u5 = Uniform();
  // Box-Muller.
  double z =
      std::sqrt(-2 * std::log(1 - u1)) * std::cos(2 * std::numbers::pi * u2);
  z = std::clamp(z, -kMaxSigmas, kMaxSigmas);

  double factor = std::max(kMinJitterFactor, 1 + settings_.jitter * z);
  if (u3 < settings_.outlier_probability) {
    factor *= settings_.outlier_min +
              (settings_.outlier_max - settings_.outlier_min) * u4;
  }
  if (settings_.drift_amplitude != 0 && settings_.drift_period_us > 0) {
    factor *=
        1 + settings_.drift_amplitude * std::sin(2 * std::numbers::pi * now_us /
                                                 settings_.drift_period_us);
  }
  Draw draw;
  draw.elapsed_us = model_us * factor;
  draw.cpu_wait_us = -settings_.cpu_wait_mean_us * std::log(1 - u5);
  for (const CpuWaitScript& s : cpu_waits_) {
    if (call >= s.start_call && call < s.start_call + s.calls) {
      draw.cpu_wait_us = std::max(draw.cpu_wait_us, s.wait_us);
    }
  }
  return draw;
}

void Noise::AddInterference(const InterferenceScript& script) {
  interference_.push_back(script);
}

void Noise::AddCpuWait(const CpuWaitScript& script) {
  cpu_waits_.push_back(script);
}

std::vector<int> Noise::HoldersAt(double now_us) const {
  std::vector<int> pids;
  for (const InterferenceScript& s : interference_) {
    if (now_us >= s.start_us && now_us < s.start_us + s.duration_us &&
        std::find(pids.begin(), pids.end(), s.pid) == pids.end()) {
      pids.push_back(s.pid);
    }
  }
  return pids;
}

}  // namespace irontune::sim
