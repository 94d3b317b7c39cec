#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/profile.h"
#include "common/profile_order.h"
#include "common/value.h"

namespace irontune {

absl::StatusOr<const v1::ProfileEntry*> Profile::Match(
    std::string_view class_name, const ProfileFields& params) const {
  auto matches = [&](const v1::ProfileEntry& entry) {
    for (const v1::Field& dim : entry.dims()) {
      auto it = std::find_if(
          params.begin(), params.end(),
          [&](const v1::Field& p) { return p.name() == dim.name(); });
      if (it == params.end() || !ValuesEqual(it->value(), dim.value())) {
        return false;
      }
    }
    return true;
  };
  const v1::ProfileEntry* best = nullptr;
  for (const v1::ProfileEntry& entry : proto_.entries()) {
    if (entry.operator_class() != class_name || !matches(entry)) continue;
    if (best == nullptr || entry.dims_size() > best->dims_size()) {
      best = &entry;
    }
  }
  if (best == nullptr) return best;
  for (const v1::ProfileEntry& entry : proto_.entries()) {
    if (&entry == best || entry.operator_class() != class_name ||
        entry.dims_size() != best->dims_size() || !matches(entry)) {
      continue;
    }
    if (!SameFields(entry.tunables(), best->tunables())) {
      return absl::InvalidArgumentError(absl::StrCat(
          absl::string_view(class_name.data(), class_name.size()),
          ": equally specific profile entries disagree: ", EntryToString(*best),
          " and ", EntryToString(entry)));
    }
  }
  return best;
}

}  // namespace irontune
