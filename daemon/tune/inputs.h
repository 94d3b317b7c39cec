// Seeded input data for timing runs: random values a buffer of each dtype
// could really hold (no NaN or infinity bit patterns), the same for every
// setting of a design, so their outputs compare.
#ifndef IRONTUNE_DAEMON_TUNE_INPUTS_H_
#define IRONTUNE_DAEMON_TUNE_INPUTS_H_

#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/npu/device.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// The seed for operator buffer `op_buffer` of step `step`, from the
// request's seed.
uint64_t InputSeed(uint64_t seed, int step, int op_buffer);

// The seed of the values operator buffer `op_buffer` is filled with in every
// step of a runlist, from the plan's seed. Each step of a distinct runlist
// has buffers of its own, but a cache finds the later steps' inputs at
// other addresses all the same, and only the 1-step image's outputs are
// read, so every step reads one copy of the values (docs/npu-facts.md,
// "Step time").
uint64_t OperatorInputSeed(uint64_t seed, int op_buffer);

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
// max(max_bytes, the users' last MakeAll's and Prefetch's inputs). An
// input larger than the cap that no user's last MakeAll asked for is made
// but not kept.
// Threads: one thread at a time (the device worker's, or a shape's holding
// the job's turn); MakeAll uses helper threads of its own inside the call,
// and each Prefetch'd input is made on a thread that touches nothing else.
class InputCache {
 public:
  // What a job keeps beyond the inputs in use: enough for the small inputs
  // its shapes have in common (a vector, an activation), not for a large
  // weight that only its own shape reads. Admission counts it
  // (daemon/scheduler/admission.h).
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
  // `user` has ended: its last MakeAll's and Prefetch's inputs are kept as
  // any others.
  void Release(int user);

  // Starts making those of `wants` neither kept nor being made, each on a
  // thread of its own, for `user` to ask for later: a shape's first
  // batch, whose inputs can be made while its designs are built. They are
  // `user`'s in use (as its last MakeAll's) until its next MakeAll, which,
  // as Get does, waits for one still being made instead of making it
  // again. Memory: the prefetched inputs, until that MakeAll (or Release)
  // and the cap decide as for any others. The destructor waits for those
  // still being made.
  void Prefetch(const std::vector<Want>& wants, int user);
  // Inputs Prefetch started that no Get or MakeAll has taken yet, and of
  // those the ones made already.
  int prefetched() const { return static_cast<int>(pending_.size()); }
  int prefetched_ended() const;
  // Bytes of inputs made (or being made) so far, all told.
  uint64_t made_bytes() const { return made_bytes_; }

  // Bytes kept now.
  uint64_t bytes() const { return bytes_; }

 private:
  using Key = std::tuple<int, uint64_t, uint64_t>;
  using Made = std::shared_ptr<const std::string>;
  // Waits for `key`'s prefetch and keeps what it made (as Get would).
  // REQUIRES: pending_ holds `key`.
  Made TakePrefetched(const Key& key);
  // Keeps the prefetches that have ended, so none holds memory unseen.
  void TakeEnded();
  // Whether a prefetch's thread has made its input.
  static bool Ended(const std::shared_future<Made>& made);
  // Makes each of `todo` (MakeAll's) on up to `threads` threads and keeps it.
  void MakeEach(const std::vector<Key>& todo, int threads);
  // Keeps `made` under `key` (unless larger than the cap and not in use),
  // dropping the oldest beyond it; returns it.
  std::shared_ptr<const std::string> Keep(
      const Key& key, std::shared_ptr<const std::string> made);
  // Drops the oldest kept inputs not in use until `more` bytes fit under
  // the cap, or none but those in use is left.
  void Trim(uint64_t more);
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  uint64_t made_bytes_ = 0;
  // Whether a user's last MakeAll asked for `key`.
  bool InUse(const Key& key) const;
  std::map<int, std::set<Key>> in_use_;  // by user: its last MakeAll's
  std::map<Key, std::shared_ptr<const std::string>> entries_;
  std::deque<Key> order_;  // oldest first
  // Being made by Prefetch (or made, not taken yet); each future is
  // std::async's, whose last copy waits for its thread as it goes.
  std::map<Key, std::shared_future<Made>> pending_;
};

// The seeded inputs PrepareImage (measure.cc) hands the images of
// `artifact`, a design of `op`: one for each buffer it fills that `given`
// (buffers given by name) does not name, per step that has buffers of
// its own.
void AddArtifactWants(const v1::Operator& op, const Artifact& artifact,
                      const std::map<std::string, std::string>& given,
                      uint64_t seed, std::vector<InputCache::Want>& wants);

// The same guessed before any design of `op` is built: each operator buffer
// marked `fills` at its declared size (Buffer.shape), as a builder lays
// them out (the simulated NPU's does). A buffer whose size overflows is
// left out.
void AddDeclaredWants(const v1::Operator& op,
                      const std::map<std::string, std::string>& given,
                      uint64_t seed, std::vector<InputCache::Want>& wants);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_INPUTS_H_
