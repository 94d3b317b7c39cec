// The canonical order of profile entries and of their fields, which
// Profile::ToJson writes and DiffProfiles lists in (profile.h):
//
//   fields   an entry's dims (and tunables) in the family's order, then the
//            rest by name; all by name for a class not in the registry.
//   entries  by class, then dim by dim (the dim's place, then its value by
//            CompareValues; a prefix first), then tunables likewise.
//
// Thread-safe (pure functions). Returned pointers point into the arguments
// and live as long as they are not modified.
#ifndef IRONTUNE_COMMON_PROFILE_ORDER_H_
#define IRONTUNE_COMMON_PROFILE_ORDER_H_

#include <compare>
#include <string>
#include <vector>

#include "irontune/v1/profile.pb.h"

namespace irontune {

using ProfileFields = google::protobuf::RepeatedPtrField<v1::Field>;

// The entry's dims (tunables) in canonical order; stable for equal names.
std::vector<const v1::Field*> OrderedDims(const v1::ProfileEntry& entry);
std::vector<const v1::Field*> OrderedTunables(const v1::ProfileEntry& entry);

// The save order: class, dims, then tunables (so that even duplicate and
// conflicting entries have one order).
std::strong_ordering CompareEntries(const v1::ProfileEntry& a,
                                    const v1::ProfileEntry& b);

// `entry` with its dims and tunables in canonical order.
v1::ProfileEntry CanonicalEntry(const v1::ProfileEntry& entry);

// The entries of `profile` in save order (stable for equal entries).
std::vector<const v1::ProfileEntry*> SortedEntries(const v1::Profile& profile);

// Whether two field lists hold the same names and values (by ValuesEqual),
// in any order.
bool SameFields(const ProfileFields& a, const ProfileFields& b);

// A text that identifies an entry's class and set of dims (in any order):
// equal for two entries exactly when they cover the same operators.
std::string EntryIdentity(const v1::ProfileEntry& entry);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_PROFILE_ORDER_H_
