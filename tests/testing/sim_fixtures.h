// The simulated NPU's side of the test fixtures: platforms, builds that
// return their outcome (artifact or refusal) instead of failing, and bf16
// data. The operators themselves come from operator_fixtures.h, included
// here. Header-only, no state; safe from any thread.
#ifndef IRONTUNE_TESTS_TESTING_SIM_FIXTURES_H_
#define IRONTUNE_TESTS_TESTING_SIM_FIXTURES_H_

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "daemon/npu/device.h"
#include "daemon/sim/kernels.h"
#include "daemon/sim/sim_builder.h"
#include "irontune/v1/recording.pb.h"
#include "tests/testing/operator_fixtures.h"

namespace irontune::testing {

// `values` as the raw bytes of an f32 buffer, and back.
inline std::string F32(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

inline std::vector<float> AsF32(const std::string& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

// The platform of sim:`generation` ("npu1" Phoenix, else Strix), as the
// sim device reports it.
inline Platform PlatformOf(const std::string& generation) {
  Platform p;
  p.generation = generation;
  p.name = generation == "npu1" ? "NPU Phoenix" : "NPU Strix";
  p.columns = generation == "npu1" ? 4 : 8;
  p.core_mhz = generation == "npu1" ? 1309 : 1584;
  p.full_elf = generation != "npu1";
  return p;
}

// SimBuilder's outcome for `op` on `generation`; a failed Build comes back
// as an outcome without artifact, its message as the refusal.
inline BuildOutcome BuildOrDie(const v1::Operator& op,
                               const std::string& generation, int steps = 1,
                               v1::Packaging packaging = v1::PACKAGING_FULL_ELF,
                               bool distinct = true) {
  SimBuilder builder;
  BuildRequest request;
  request.op = op;
  request.platform = PlatformOf(generation);
  request.steps = steps;
  request.packaging = packaging;
  request.distinct = distinct;
  absl::StatusOr<BuildOutcome> outcome = builder.Build(request);
  if (!outcome.ok())
    return BuildOutcome{std::nullopt, std::string(outcome.status().message())};
  return *std::move(outcome);
}

// `count` bf16 values in [-1, 1), seeded.
inline std::string RandomBf16(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(count * 2, '\0');
  for (size_t i = 0; i < count; ++i) {
    const float v = static_cast<float>(
        static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2 - 1);
    const uint16_t bits = sim::FloatToBf16(v);
    out[2 * i] = static_cast<char>(bits & 0xff);
    out[2 * i + 1] = static_cast<char>(bits >> 8);
  }
  return out;
}

// The bf16 value at element `i` of little-endian `bytes`, as a float.
inline float Bf16At(const std::string& bytes, size_t i) {
  const uint16_t bits = static_cast<uint16_t>(
      static_cast<unsigned char>(bytes[2 * i]) |
      (static_cast<unsigned char>(bytes[2 * i + 1]) << 8));
  return sim::Bf16ToFloat(bits);
}

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_TESTING_SIM_FIXTURES_H_
