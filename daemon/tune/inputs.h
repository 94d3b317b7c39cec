// Seeded input data for timing runs: random values a buffer of each dtype
// could really hold (no NaN or infinity bit patterns), the same for every
// setting of a design, so their outputs compare.
#ifndef IRONTUNE_DAEMON_TUNE_INPUTS_H_
#define IRONTUNE_DAEMON_TUNE_INPUTS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "irontune/v1/recording.pb.h"

namespace irontune {

// The seed for operator buffer `op_buffer` of step `step`, from the
// request's seed.
uint64_t InputSeed(uint64_t seed, int step, int op_buffer);

// `nbytes` bytes of values of `dtype` drawn from `seed`: floats uniform in
// in (-1, 1) with magnitudes of at least 2^-7
// (bf16) or 2^-4 (f16), f32 uniform in [-1, 1); integers small (within [-8, 8]
// or [0, 16]). A trailing partial element is zero. Deterministic for a given
// (dtype, nbytes, seed).
std::string SeededInput(v1::DType dtype, uint64_t nbytes, uint64_t seed);

// Seeded inputs kept for reuse, so the settings of a design, and the
// designs of one job, share one copy of each (images may keep the pointer:
// Image::ShareBuffer). Holds at most `max_bytes`, dropping the oldest first;
// an input larger than that is made but not kept.
// Threads: one thread at a time (the device worker's); MakeAll uses helper
// threads of its own inside the call.
class InputCache {
 public:
  static constexpr uint64_t kDefaultBytes = 1ull << 30;
  explicit InputCache(uint64_t max_bytes = kDefaultBytes)
      : max_bytes_(max_bytes) {}

  // SeededInput(dtype, nbytes, seed), made once while kept.
  std::shared_ptr<const std::string> Get(v1::DType dtype, uint64_t nbytes,
                                         uint64_t seed);

  // What Get would make, `dtype`, `nbytes` and `seed`.
  struct Want {
    v1::DType dtype;
    uint64_t nbytes;
    uint64_t seed;
  };
  // Makes those of `wants` not kept yet at once, on up to `threads` helper
  // threads (each buffer on one; the values are Get's), and keeps them as
  // Get would. Returns when all are made. Memory: at most the kept inputs
  // plus those being made.
  void MakeAll(const std::vector<Want>& wants, int threads);

 private:
  using Key = std::tuple<int, uint64_t, uint64_t>;
  // Keeps `made` under `key` (unless larger than the cap), dropping the
  // oldest beyond it; returns it.
  std::shared_ptr<const std::string> Keep(
      const Key& key, std::shared_ptr<const std::string> made);
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  std::map<Key, std::shared_ptr<const std::string>> entries_;
  std::deque<Key> order_;  // oldest first
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_INPUTS_H_
