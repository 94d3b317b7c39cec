// Profiles in IRON's JSON format (iron/common/declare/profile.py):
//   {"entries": [
//     {"operator": "GEMM", "M": 2048, "K": 2048, "N": 2048, "tile_m": 64},
//     ...
//   ]}
// one entry per line, as IRON's Profile.save writes them. An entry names an
// operator class, the dims it matches (param() fields that must be equal)
// and the tunables it sets. Entries keep their order: a replaced entry
// stays where it was and a new one is appended.
//
// A Profile is a value type; it is thread-compatible.
#ifndef IRONTUNE_COMMON_PROFILE_H_
#define IRONTUNE_COMMON_PROFILE_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/value.h"
#include "irontune/v1/profile.pb.h"

namespace irontune {
namespace v1 {
class Calls;
}  // namespace v1

// Says which keys of an entry of `class_name` are tunables; the rest are
// dims. The default (nullptr) asks the families registry, and for a class it
// does not know treats every key as a dim.
using TunableClassifier =
    std::function<bool(std::string_view class_name, std::string_view key)>;

// Whether `key` is a tunable of `class_name` according to the registry.
bool IsKnownTunable(std::string_view class_name, std::string_view key);

class Profile {
 public:
  Profile() = default;
  explicit Profile(v1::Profile proto) : proto_(std::move(proto)) {}

  // Parses IRON's JSON and applies IRON's load rules to every entry of a
  // class the catalogue knows (common/families.h): a field the class does
  // not declare, a field it derives or fixes, and an entry without a
  // tunable are refused naming the field path (`entries[2].q_shims: ...`);
  // two entries of one class and the same dims that give a tunable
  // different values are refused naming both. An entry of a class the
  // catalogue does not know is kept as it is and reported in notes().
  // With `is_tunable` given, it classifies every key and the load rules are
  // not applied. Errors are InvalidArgument naming the entry, e.g.
  // `entries[3].tile_m: expected a number, bool or string`. The top level
  // must be an object with exactly one key, "entries"; each entry an object
  // of scalars (no null) with a non-empty string "operator". Duplicate keys,
  // integers outside int64 and trailing text are errors. Integers read as
  // int_value, numbers with a '.' or exponent as double_value. Keys keep
  // their order in the text. Never crashes, whatever the input.
  static absl::StatusOr<Profile> FromJson(
      std::string_view text, const TunableClassifier& is_tunable = nullptr);

  // Reads `path`. A missing file is NotFound naming the path; FromJson's
  // errors come prefixed with the path.
  static absl::StatusOr<Profile> Load(
      const std::string& path, const TunableClassifier& is_tunable = nullptr);

  // The JSON text exactly as IRON's Profile.save writes it: entries in
  // their order, each json.dumps({"operator": ..., **dims, **tunables})
  // (Python's separators, float repr and ASCII escapes), joined by ",\n  "
  // inside "{\"entries\": [\n  " ... "\n]}\n". So loading an unchanged
  // IRON profile and saving it gives the same bytes.
  std::string ToJson() const;

  // Writes ToJson() to `path` atomically (a temporary in the same directory,
  // synced, renamed into place; removed on failure). Errors name the file.
  absl::Status Save(const std::string& path) const;

  // The most specific entry of `class_name` whose every dim equals the
  // param of that name in `params`: nullptr when none matches.
  // Specificity is the number of dims. Fails with InvalidArgument naming
  // both entries when two equally specific matching entries set different
  // tunables (as sets of name=value; identical duplicates are fine). An
  // entry dim missing from `params` does not match; values compare by
  // ValuesEqual (an int never equals a double). Where several entries are
  // best, returns the first; the pointer lives as long as this Profile is
  // not modified.
  absl::StatusOr<const v1::ProfileEntry*> Match(
      std::string_view class_name,
      const google::protobuf::RepeatedPtrField<v1::Field>& params) const;

  // IRON's selection rule (Profile.tunables_for): for an operator of
  // `class_name` constructed with `params` (params it leaves out take the
  // catalogue's defaults), each tunable from the most specific matching
  // entry naming it (specificity = number of dims; an entry matches when
  // each of its dims equals the call's). Equally specific entries giving
  // one tunable different values are InvalidArgument naming both. The
  // tunables are in the order entries first name them; call-site values win
  // over these (the caller overlays its own). As IRON, entries are met in
  // order: a tie met before a more specific entry is refused even so.
  absl::StatusOr<std::vector<v1::Field>> TunablesFor(
      std::string_view class_name,
      const google::protobuf::RepeatedPtrField<v1::Field>& params) const;

  // Appends `entry`.
  void Add(v1::ProfileEntry entry) { *proto_.add_entries() = std::move(entry); }
  // Replaces the first entry of the same class and dims in place, else
  // appends.
  void Put(v1::ProfileEntry entry);

  // What loading noticed but kept (entries of classes the catalogue does
  // not know), one sentence each.
  const std::vector<std::string>& notes() const { return notes_; }

  const v1::Profile& proto() const { return proto_; }
  int size() const { return proto_.entries_size(); }

 private:
  v1::Profile proto_;
  std::vector<std::string> notes_;
};

// IRON's selection rule (Profile.TunablesFor) for every operator shape
// `calls` constructs (ShapeDims): InvalidArgument "profile: ..." naming both
// equally specific entries that disagree and the operator, as IRON raises
// when the model makes that operator under `profile`. Each shape is looked
// up once. REQUIRES: calls passed ValidateRecording.
absl::Status CheckProfileFor(const v1::Profile& profile,
                             const v1::Calls& calls);

// One entry as IRON's Profile.save writes it: operator, dims, tunables, each
// in stored order.
std::string IronEntryJson(const v1::ProfileEntry& entry);

// Why IRON's Profile.add refuses `entry` ("<field>: <why>", or a sentence
// for the entry as a whole); empty when it accepts it or the catalogue does
// not know the class.
std::string IronEntryCheck(const v1::ProfileEntry& entry);

// A one-line rendering of an entry, as in the JSON file (IronEntryJson).
std::string EntryToString(const v1::ProfileEntry& entry);

// How `after` differs from `before`. Entries are identified by class and
// dims: one in both with the same tunables is kept, with other tunables
// changed (no gain set), only in `after` added, only in `before` removed.
// Each list is in the stable save order, with fields in canonical order.
// Where one profile holds several entries of one identity, the first in save
// order stands for them.
v1::ProfileDiff DiffProfiles(const Profile& before, const Profile& after);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_PROFILE_H_
