#include "common/profile.h"

#include <algorithm>
#include <compare>
#include <limits>
#include <string_view>

#include "common/families.h"
#include "common/profile_order.h"
#include "common/value.h"

namespace irontune {
namespace {

// Where `name` goes among an entry's dims (or tunables): the family's order
// first, then the rest by name.
struct FieldRank {
  size_t position;
  std::string_view name;
  auto operator<=>(const FieldRank&) const = default;
};

size_t PositionIn(const std::vector<std::string>& order,
                  std::string_view name) {
  auto it = std::find(order.begin(), order.end(), name);
  return it == order.end() ? std::numeric_limits<size_t>::max()
                           : static_cast<size_t>(it - order.begin());
}

size_t DimPosition(const Family* family, std::string_view name) {
  if (family == nullptr) return std::numeric_limits<size_t>::max();
  for (size_t i = 0; i < family->dims.size(); ++i) {
    if (family->dims[i].name == name) return i;
  }
  return std::numeric_limits<size_t>::max();
}

size_t TunablePosition(const Family* family, std::string_view name) {
  if (family == nullptr) return std::numeric_limits<size_t>::max();
  return PositionIn(family->tunables, name);
}

// Pointers into `fields`, in canonical order (stable for equal names).
template <typename PositionFn>
std::vector<const v1::Field*> Ordered(const ProfileFields& fields,
                                      PositionFn position) {
  std::vector<const v1::Field*> out;
  out.reserve(fields.size());
  for (const v1::Field& f : fields) out.push_back(&f);
  std::stable_sort(out.begin(), out.end(),
                   [&](const v1::Field* a, const v1::Field* b) {
                     return FieldRank{position(a->name()), a->name()} <
                            FieldRank{position(b->name()), b->name()};
                   });
  return out;
}

// Compares two canonically ordered field lists position by position (rank,
// name, then value); a list that is a prefix of the other comes first.
template <typename PositionFn>
std::strong_ordering CompareFieldLists(const std::vector<const v1::Field*>& a,
                                       const std::vector<const v1::Field*>& b,
                                       PositionFn position) {
  const size_t shared = std::min(a.size(), b.size());
  for (size_t i = 0; i < shared; ++i) {
    const FieldRank ra{position(a[i]->name()), a[i]->name()};
    const FieldRank rb{position(b[i]->name()), b[i]->name()};
    if (auto c = ra <=> rb; c != 0) return c;
    if (auto c = CompareValues(a[i]->value(), b[i]->value()); c != 0) return c;
  }
  return a.size() <=> b.size();
}

// Pointers into `fields`, sorted by name, then by value.
std::vector<const v1::Field*> ByNameThenValue(const ProfileFields& fields) {
  std::vector<const v1::Field*> out;
  for (const v1::Field& f : fields) out.push_back(&f);
  std::sort(out.begin(), out.end(), [](const v1::Field* x, const v1::Field* y) {
    if (x->name() != y->name()) return x->name() < y->name();
    return CompareValues(x->value(), y->value()) < 0;
  });
  return out;
}

}  // namespace

bool IsKnownTunable(std::string_view class_name, std::string_view key) {
  const Family* family = FindFamily(class_name);
  return family != nullptr && PositionIn(family->tunables, key) !=
                                  std::numeric_limits<size_t>::max();
}

std::vector<const v1::Field*> OrderedDims(const v1::ProfileEntry& entry) {
  const Family* family = FindFamily(entry.operator_class());
  return Ordered(entry.dims(),
                 [&](std::string_view n) { return DimPosition(family, n); });
}

std::vector<const v1::Field*> OrderedTunables(const v1::ProfileEntry& entry) {
  const Family* family = FindFamily(entry.operator_class());
  return Ordered(entry.tunables(), [&](std::string_view n) {
    return TunablePosition(family, n);
  });
}

std::strong_ordering CompareEntries(const v1::ProfileEntry& a,
                                    const v1::ProfileEntry& b) {
  if (auto c = a.operator_class() <=> b.operator_class(); c != 0) return c;
  const Family* family = FindFamily(a.operator_class());
  auto dim_position = [&](std::string_view n) {
    return DimPosition(family, n);
  };
  if (auto c = CompareFieldLists(OrderedDims(a), OrderedDims(b), dim_position);
      c != 0) {
    return c;
  }
  auto tunable_position = [&](std::string_view n) {
    return TunablePosition(family, n);
  };
  return CompareFieldLists(OrderedTunables(a), OrderedTunables(b),
                           tunable_position);
}

v1::ProfileEntry CanonicalEntry(const v1::ProfileEntry& entry) {
  v1::ProfileEntry out;
  out.set_operator_class(entry.operator_class());
  for (const v1::Field* f : OrderedDims(entry)) *out.add_dims() = *f;
  for (const v1::Field* f : OrderedTunables(entry)) *out.add_tunables() = *f;
  return out;
}

std::vector<const v1::ProfileEntry*> SortedEntries(const v1::Profile& profile) {
  std::vector<const v1::ProfileEntry*> out;
  out.reserve(profile.entries_size());
  for (const v1::ProfileEntry& e : profile.entries()) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(),
                   [](const v1::ProfileEntry* a, const v1::ProfileEntry* b) {
                     return CompareEntries(*a, *b) < 0;
                   });
  return out;
}

bool SameFields(const ProfileFields& a, const ProfileFields& b) {
  if (a.size() != b.size()) return false;
  const std::vector<const v1::Field*> sa = ByNameThenValue(a);
  const std::vector<const v1::Field*> sb = ByNameThenValue(b);
  for (size_t i = 0; i < sa.size(); ++i) {
    if (sa[i]->name() != sb[i]->name() ||
        !ValuesEqual(sa[i]->value(), sb[i]->value())) {
      return false;
    }
  }
  return true;
}

std::string EntryIdentity(const v1::ProfileEntry& entry) {
  std::string key;
  AppendJsonString(entry.operator_class(), &key);
  for (const v1::Field* f : ByNameThenValue(entry.dims())) {
    key.push_back(' ');
    AppendJsonString(f->name(), &key);
    key.push_back(':');
    AppendValueText(f->value(), &key);
  }
  return key;
}

}  // namespace irontune
