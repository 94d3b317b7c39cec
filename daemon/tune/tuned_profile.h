// TunedProfile: the profile an Autotune writes, built shape by shape.
//
// Entries of the submitted profile covering a shape (its class, every dim
// of the entry equal to the shape's) are replaced by one new entry naming
// NamedDims and the setting taken, their tunables the search does not move
// held; the rest are kept. The diff is DiffProfiles(submitted, tuned) with
// each changed entry's gain (-delta_us) and noise, and the model-level
// gain: each shape's member gains weighted by how many steps run the
// member, summed; noises in quadrature.
//
// Threads: one at a time. Ownership: `calls` and `shapes` are borrowed and
// must outlive the builder.
#ifndef IRONTUNE_DAEMON_TUNE_TUNED_PROFILE_H_
#define IRONTUNE_DAEMON_TUNE_TUNED_PROFILE_H_

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "common/profile.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/time_shape.h"
#include "irontune/v1/profile.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

class TunedProfile {
 public:
  TunedProfile(const v1::Calls& calls, const Profile& submitted,
               const std::vector<Shape>& shapes);

  // Adds shape `s`'s entry, from its search. REQUIRES: s < shapes.size(),
  // each shape added once, result.trials non-empty.
  void Add(size_t s, const ShapeResult& result);

  // The tuned profile and its diff against the submitted one, given every
  // shape's result by index (those added).
  std::pair<Profile, v1::ProfileDiff> Finish(
      const std::vector<ShapeResult>& results) &&;

 private:
  const v1::Calls& calls_;
  const Profile& submitted_;
  const std::vector<Shape>& shapes_;
  Profile out_;
  // Per shape: the submitted entries covering it (their dims), and the
  // tunables they set.
  std::vector<std::vector<std::vector<v1::Field>>> covering_;
  std::vector<std::vector<v1::Field>> held_;
  // The new entries and their shapes, for the diff's gains.
  std::vector<std::pair<v1::ProfileEntry, size_t>> made_;
  double model_gain_ = 0;
  std::vector<std::optional<double>> model_noise_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_TUNED_PROFILE_H_
