// Seeded input data for timing runs: random values a buffer of each dtype
// could really hold (no NaN or infinity bit patterns), the same for every
// setting of a design, so their outputs compare.
#ifndef IRONTUNE_DAEMON_TUNE_INPUTS_H_
#define IRONTUNE_DAEMON_TUNE_INPUTS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
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
// designs of one job, share one copy of each (images keep the pointer where
// they can: Image::ShareBuffer). The inputs of each user's last MakeAll
// (what the batch it times holds anyway, and what its next batch will
// ask for again; a user is a shape searched at once with others,
// TuneContext::lane) are always kept; besides them it keeps at most
// `max_bytes`, dropping the oldest first, so what it holds is at most
// max(max_bytes, the users' last MakeAll's inputs). An input larger than
// the cap that no user's last MakeAll asked for is made but not kept.
// Threads: one thread at a time (the device worker's); MakeAll uses helper
// threads of its own inside the call.
class InputCache {
 public:
  // What a job keeps beyond the inputs in use: enough for the small inputs
  // its shapes have in common (a vector, an activation), not for a large
  // weight that only its own shape reads. Admission counts it
  // (daemon/server/admission.h).
  static constexpr uint64_t kDefaultBytes = 256ull << 20;
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
  // Get would, whatever their size; they stay kept until `user`'s next
  // MakeAll or its Release. Returns when all are made. Memory: at most the
  // kept inputs plus those being made; inputs kept beyond the cap, other
  // than those the users' last MakeAll asked for, are dropped.
  void MakeAll(const std::vector<Want>& wants, int threads, int user = 0);
  // `user` has ended: its last MakeAll's inputs are kept as any others.
  void Release(int user);

  // Bytes kept now.
  uint64_t bytes() const { return bytes_; }

 private:
  using Key = std::tuple<int, uint64_t, uint64_t>;
  // Keeps `made` under `key` (unless larger than the cap and not in use),
  // dropping the oldest beyond it; returns it.
  std::shared_ptr<const std::string> Keep(
      const Key& key, std::shared_ptr<const std::string> made);
  // Drops the oldest kept inputs not in use until `more` bytes fit under
  // the cap, or none but those in use is left.
  void Trim(uint64_t more);
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  // Whether a user's last MakeAll asked for `key`.
  bool InUse(const Key& key) const;
  std::map<int, std::set<Key>> in_use_;  // by user: its last MakeAll's
  std::map<Key, std::shared_ptr<const std::string>> entries_;
  std::deque<Key> order_;  // oldest first
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_INPUTS_H_
