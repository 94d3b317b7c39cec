// Profiles in IRON's JSON format:
//   {"entries": [
//   {"operator": "GEMM", "M": 2048, "K": 2048, "N": 2048, "tile_m": 64},
//   ...
//   ]}
// one entry per line. An entry names an operator class, the dims it matches
// (params that must be equal) and the tunables it sets.
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

  // Parses IRON's JSON. Errors are InvalidArgument naming the entry, e.g.
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

  // The JSON text: entries sorted by class, then by their dims; within an
  // entry "operator", then dims, then tunables, each in the family's order
  // (names the family lacks after, by name; all by name for a class not in
  // the registry). One entry per line, ending in
  // a newline, so a rewritten profile diffs line by line. Entries of a
  // class compare dim by dim in that order: the dim's place, then its value
  // (by kind: int, bool, string, double; then by value). An entry whose dims
  // are a prefix of another's comes first; tunables break ties. The
  // empty profile is "{\"entries\": [\n]}\n".
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

  void Add(v1::ProfileEntry entry) { *proto_.add_entries() = std::move(entry); }

  const v1::Profile& proto() const { return proto_; }
  int size() const { return proto_.entries_size(); }

 private:
  v1::Profile proto_;
};

// A one-line rendering of an entry, as in the JSON file.
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
