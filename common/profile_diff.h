// What `irontune-client submit --check` gates on: which entries of a
// profile diff (DiffProfiles, common/profile.h, with the daemon's gains)
// matter to the model. An entry counts when its gain weighted over the
// model's calls (EntryChange.weighted_gain_us), less kCheckGainZ of its
// noise, is above a threshold the user sets (--check-min-gain): a share of
// the model's time per pass (ProfileDiff.model_time_us) or microseconds per
// pass. docs/client.md ("submit --check") says why.
//
// Pure functions; thread-safe.
#ifndef IRONTUNE_COMMON_PROFILE_DIFF_H_
#define IRONTUNE_COMMON_PROFILE_DIFF_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "irontune/v1/profile.pb.h"

namespace irontune {

// The least weighted gain for which a changed entry fails `--check`.
struct CheckMinGain {
  enum class Unit {
    kShare,   // of the model's time per pass (ProfileDiff.model_time_us)
    kMicros,  // microseconds per pass of the model's calls
  };
  Unit unit = Unit::kShare;
  double value = 0;
};

// --check-min-gain's default: 0.1% of the model's time per pass. A model
// whose step is 0.1% faster is below what its users can measure end to end,
// while a stale entry of any operator that holds a few percent of the model
// and got a few percent slower clears it.
inline constexpr double kCheckMinGainShare = 0.001;
inline constexpr CheckMinGain kDefaultCheckMinGain{CheckMinGain::Unit::kShare,
                                                   kCheckMinGainShare};

// How many standard errors an entry's weighted gain must clear the
// threshold by: the daemon's own z for taking a setting (kGainZ), so an
// entry whose true gain is at the threshold fails the check in about 2% of
// runs, not half of them.
inline constexpr double kCheckGainZ = 2.0;

// Reads "0.1%" or "0.001" (a share, in [0, 1)) or "25us" / "25µs"
// (microseconds per pass, >= 0). Fails with InvalidArgument naming the text.
absl::StatusOr<CheckMinGain> ParseCheckMinGain(std::string_view text);

// "0.1%" or "25 µs": how a threshold is written back.
std::string CheckMinGainText(const CheckMinGain& min_gain);

// One entry the diff lists as moved, weighed.
struct CheckedEntry {
  enum class Kind { kChanged, kAdded, kRemoved };
  Kind kind = Kind::kChanged;
  int index = 0;  // into the diff's changed, added or removed
  // The weighted gain and its noise, where the daemon sent them.
  bool has_gain = false;
  double gain_us = 0;
  double noise_us = 0;
  // Whether it fails the check: its gain less kCheckGainZ noises is above
  // the threshold, or its gain is unknown (a removed entry, or one the
  // daemon could not measure), which is never taken to be small.
  bool counts = false;
};

struct CheckVerdict {
  // Whether the entries were weighed. false where the diff cannot say
  // (`fallback` says why): a daemon older than the weighted gains, or a
  // share asked for without the model's time; then every moved entry
  // counts, as a plain comparison of the profiles would have it.
  bool weighed = false;
  std::string fallback;
  // The threshold in microseconds per pass (0 where not weighed), and the
  // model's time it is a share of (0 for microseconds, or not weighed).
  double threshold_us = 0;
  double model_time_us = 0;
  // Every changed, added and removed entry, in that order.
  std::vector<CheckedEntry> entries;
  // Whether some entry counts: --check fails.
  bool fails = false;
};

// Weighs every entry `diff` lists as moved against `min_gain`. An added
// entry's gain is its added_gains element (unknown where there is none).
CheckVerdict WeighCheck(const v1::ProfileDiff& diff,
                        const CheckMinGain& min_gain);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_PROFILE_DIFF_H_
