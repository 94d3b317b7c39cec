#include <map>
#include <string>
#include <vector>

#include "common/profile.h"
#include "common/profile_order.h"

namespace irontune {

v1::ProfileDiff DiffProfiles(const Profile& before, const Profile& after) {
  // Where a profile holds several entries of one identity, the first in save
  // order stands for them.
  auto index = [](const std::vector<const v1::ProfileEntry*>& sorted) {
    std::map<std::string, const v1::ProfileEntry*> out;
    for (const v1::ProfileEntry* e : sorted) out.emplace(EntryIdentity(*e), e);
    return out;
  };
  const std::vector<const v1::ProfileEntry*> old_sorted =
      SortedEntries(before.proto());
  const std::vector<const v1::ProfileEntry*> new_sorted =
      SortedEntries(after.proto());
  const std::map<std::string, const v1::ProfileEntry*> old_index =
      index(old_sorted);
  const std::map<std::string, const v1::ProfileEntry*> new_index =
      index(new_sorted);

  v1::ProfileDiff diff;
  for (const v1::ProfileEntry* e : new_sorted) {
    const std::string key = EntryIdentity(*e);
    if (new_index.at(key) != e) continue;
    auto old_it = old_index.find(key);
    if (old_it == old_index.end()) {
      *diff.add_added() = CanonicalEntry(*e);
    } else if (SameFields(old_it->second->tunables(), e->tunables())) {
      *diff.add_kept() = CanonicalEntry(*e);
    } else {
      const v1::ProfileEntry old_entry = CanonicalEntry(*old_it->second);
      const v1::ProfileEntry new_entry = CanonicalEntry(*e);
      v1::EntryChange* change = diff.add_changed();
      change->set_operator_class(new_entry.operator_class());
      *change->mutable_dims() = new_entry.dims();
      *change->mutable_old_tunables() = old_entry.tunables();
      *change->mutable_new_tunables() = new_entry.tunables();
    }
  }
  for (const v1::ProfileEntry* e : old_sorted) {
    const std::string key = EntryIdentity(*e);
    if (old_index.at(key) == e && !new_index.contains(key)) {
      *diff.add_removed() = CanonicalEntry(*e);
    }
  }
  return diff;
}

}  // namespace irontune
