// TunedProfile: the profile an Autotune writes, built shape by shape.
//
// Entries of the submitted profile covering a shape (its class, every dim
// of the entry equal to the shape's) are replaced by one new entry naming
// NamedDims and the setting taken, their tunables the search does not move
// held; the rest are kept. The diff is DiffProfiles(submitted, tuned) with
// each changed and added entry's gain against what the submitted profile
// runs (ShapeResult::against_incumbent: the confirmation, or 0 where the
// incumbent stays) and two model-level gains, each shape's member gains
// weighted by how many steps run the member, summed, noises in quadrature:
// against the submitted profile (0 where nothing changed), and against the
// recorded settings (the trials' deltas), labelled per recording. Each
// changed and added entry's gain is also given weighted as the model-level
// one is (its shape's members' gains times their steps). The diff's
// model_time_us is the tuned profile's time per pass over the shapes whose
// recorded setting was timed: the recorded step time times the members'
// mean steps (exact where the members run alike or equally often) plus
// each member's delta times its steps. A shape left untuned (Untuned)
// keeps its submitted entries and is listed in the diff's `untuned`.
//
// Threads: one at a time. Ownership: `calls` and `shapes` are borrowed and
// must outlive the builder.
#ifndef IRONTUNE_DAEMON_TUNE_TUNED_PROFILE_H_
#define IRONTUNE_DAEMON_TUNE_TUNED_PROFILE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/profile.h"
#include "daemon/tune/shape_task.h"
#include "daemon/tune/shapes.h"
#include "irontune/v1/profile.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

class TunedProfile {
 public:
  // REQUIRES: CheckProfileFor(submitted, calls) holds (the request's
  // validation refuses an ambiguous profile); else an ambiguous shape runs
  // its recorded setting.
  TunedProfile(const v1::Calls& calls, const Profile& submitted,
               const std::vector<Shape>& shapes);

  // The setting the submitted profile runs for shape `s`: `recorded` with
  // the tunables its covering entries set. REQUIRES: s < shapes.size().
  TunableValues Incumbent(size_t s, const TunableValues& recorded) const;

  // Whether some entry of the submitted profile covers shape `s` (its
  // class, and dims the shape matches): a decision was made for it.
  // REQUIRES: s < shapes.size().
  bool Covered(size_t s) const { return !covering_[s].empty(); }

  // Adds shape `s`'s entry, from its search. REQUIRES: s < shapes.size(),
  // each shape added once, result.trials non-empty.
  void Add(size_t s, const ShapeResult& result);

  // Leaves shape `s` untuned for `reason`: its submitted entries stay as
  // they are, and the diff lists it in `untuned` (in the order of these
  // calls) with `planned_seconds`, the device time its tuning was planned
  // to take. REQUIRES: s < shapes.size(), not added.
  void Untuned(size_t s, const std::string& reason, double planned_seconds);

  // The tuned profile and its diff against the submitted one, given every
  // shape's result by index (those added).
  std::pair<Profile, v1::ProfileDiff> Finish(
      const std::vector<ShapeResult>& results) &&;

 private:
  // The shape whose new entry has this class and dims, if any.
  std::optional<size_t> MadeFor(
      const std::string& operator_class,
      const google::protobuf::RepeatedPtrField<v1::Field>& dims) const;

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
  std::vector<v1::UntunedShape> untuned_;
  double recording_gain_ = 0;
  std::vector<std::optional<double>> recording_noise_;
  // The tuned profile's time per pass over the shapes timed (PassUs).
  double model_time_ = 0;
  bool timed_ = false;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_TUNED_PROFILE_H_
