// What a cached measurement's time follows, and the digest it is stored
// under.
//
// A measurement is reused only when every part of its key is equal:
//   - recipe_hash, artifact_hash: the design as built (its recipe and the
//     sources, tools and device it is compiled with) and the bytes the
//     builder produced for one step of it. Editing how a design is generated
//     changes these, so the old figure misses rather than being reused.
//   - values: the per-call values it ran at, by name.
//   - input_sha256: the sha256 of each input buffer given explicitly (where
//     seeded random bytes would not be representative), by buffer name.
//   - packaging: one full ELF, or an xclbin per step.
//   - repeats: how many back-to-back steps the long run holds. IRON leaves it
//     out of its key; irontune keeps it, because the long run is another
//     artifact (with distinct buffers, `repeats` times the working set), so
//     its per-step excess may differ. A miss costs a rerun; a wrong figure
//     costs a wrong profile.
//   - distinct: whether every step runs on buffers of its own, for the same
//     reason (SoC cache hits between steps change the step's time).
// Deliberately NOT in the key: the Timing (rounds, calls, settle, cutoff).
// They decide how precise the figure is, not what it estimates, as in IRON.
// The cache keeps a figure of each key per FigureTiming (below), side by
// side, and a lookup takes the most precise that is precise enough.
//
// Digest(): the first 32 hex digits of the sha256 of a canonical encoding:
// a version tag, then every part length-prefixed (strings) or fixed-width
// (integers), maps in name order with their counts. Two different keys
// cannot encode alike, whatever bytes their names hold. Changing what the
// key holds changes the tag, so old rows are never found under new keys.
//
// Thread-safe (values only).
#ifndef IRONTUNE_DAEMON_STORE_CACHE_KEY_H_
#define IRONTUNE_DAEMON_STORE_CACHE_KEY_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/defaults.h"
#include "irontune/v1/measurement.pb.h"

namespace irontune {

// The number of hex digits in a cache key digest (as IRON's keys).
inline constexpr int kCacheKeyDigits = 32;

struct CacheKey {
  std::string recipe_hash;
  std::string artifact_hash;
  std::map<std::string, int64_t> values;
  // sha256 hex of each given input's bytes; see InputDigest.
  std::map<std::string, std::string> input_sha256;
  v1::Packaging packaging = v1::PACKAGING_UNSPECIFIED;
  int repeats = kDefaultRepeats;
  bool distinct = true;
  // Non-empty: a figure kept apart from the untagged one of the same design,
  // under the batch that timed it (a confirmation batch's; see
  // daemon/tune/shape_search.h), so that a run without remeasure replays that
  // batch. Encoded only when non-empty: untagged digests are unchanged.
  std::string tag;

  // The canonical encoding the digest is taken of.
  std::string Encode() const;
  // kCacheKeyDigits lower-case hex digits.
  std::string Digest() const;
};

// How precisely a figure was taken: the rounds and calls a round of the
// Timing its Measure call was given (a setting the cutoff stopped early
// keeps its call's Timing: a repeat would stop it alike). Settle and
// cutoff are left out: they decide which settings are timed in full, not
// how precise a full figure is. {0, 0} is unknown: a figure stored before
// the cache kept Timings (schema version 4), or given without one.
// docs/statistics.md, "Which figure a lookup returns", says how figures
// of one key at several Timings rank.
struct FigureTiming {
  uint32_t rounds = 0;
  uint32_t calls = 0;

  static FigureTiming Of(const ResolvedTiming& timing) {
    return {timing.rounds(), timing.calls()};
  }
  bool known() const { return rounds > 0 && calls > 0; }
  // The calls a round timed, over all rounds: what ranks figures.
  uint64_t calls_timed() const { return uint64_t{rounds} * calls; }
  // At least as precise as `asked` in both parts: as many rounds or more
  // (the median and its noise from fewer rounds are rougher whatever the
  // calls) and as many calls a round or more (each round's jitter). Every
  // known Timing covers an unknown ask. REQUIRES: known().
  bool Covers(const FigureTiming& asked) const {
    return rounds >= asked.rounds && calls >= asked.calls;
  }
  friend bool operator==(const FigureTiming& a, const FigureTiming& b) {
    return a.rounds == b.rounds && a.calls == b.calls;
  }
};

// The sha256 hex of an input buffer's bytes, as CacheKey::input_sha256
// holds it.
std::string InputDigest(std::string_view bytes);

// True for exactly kCacheKeyDigits lower-case hex digits.
bool IsCacheKeyDigest(std::string_view text);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_STORE_CACHE_KEY_H_
