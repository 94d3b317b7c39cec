#include "common/profile.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <compare>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/families.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

using Fields = google::protobuf::RepeatedPtrField<v1::Field>;

// Debian's Abseil is built with its own string_view, which std::string_view
// does not convert to.
absl::string_view Absl(std::string_view s) { return {s.data(), s.size()}; }

// ---------------------------------------------------------------------------
// Rendering

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// The shortest text that reads back as the same double, always with a '.'
// or an exponent so that it reads back as a double, not an int. JSON has no
// non-finite numbers; they are written as Python's json module writes them.
void AppendDouble(double d, std::string* out) {
  if (std::isnan(d)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(d)) {
    out->append(d > 0 ? "Infinity" : "-Infinity");
    return;
  }
  char buffer[64];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), d);
  const std::string_view text(buffer, result.ptr - buffer);
  out->append(text);
  if (text.find_first_of(".eE") == std::string_view::npos) out->append(".0");
}

void AppendValue(const v1::Value& v, std::string* out) {
  switch (v.kind_case()) {
    case v1::Value::kIntValue:
      absl::StrAppend(out, v.int_value());
      return;
    case v1::Value::kBoolValue:
      out->append(v.bool_value() ? "true" : "false");
      return;
    case v1::Value::kStringValue:
      AppendJsonString(v.string_value(), out);
      return;
    case v1::Value::kDoubleValue:
      AppendDouble(v.double_value(), out);
      return;
    case v1::Value::KIND_NOT_SET:
      break;
  }
  out->append("null");
}

// ---------------------------------------------------------------------------
// The canonical order

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
std::vector<const v1::Field*> Ordered(const Fields& fields,
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

// A total order on values: by kind, then by value (doubles by
// std::strong_order, which agrees with ValuesEqual).
std::strong_ordering CompareValues(const v1::Value& a, const v1::Value& b) {
  if (a.kind_case() != b.kind_case()) {
    return static_cast<int>(a.kind_case()) <=> static_cast<int>(b.kind_case());
  }
  switch (a.kind_case()) {
    case v1::Value::kIntValue:
      return a.int_value() <=> b.int_value();
    case v1::Value::kBoolValue:
      return a.bool_value() <=> b.bool_value();
    case v1::Value::kStringValue:
      return a.string_value() <=> b.string_value();
    case v1::Value::kDoubleValue:
      return std::strong_order(a.double_value(), b.double_value());
    case v1::Value::KIND_NOT_SET:
      break;
  }
  return std::strong_ordering::equal;
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

// The save order: class, dims, then tunables (so that even duplicates and
// conflicting entries have one order).
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

// `entry` with its dims and tunables in canonical order.
v1::ProfileEntry Canonical(const v1::ProfileEntry& entry) {
  v1::ProfileEntry out;
  out.set_operator_class(entry.operator_class());
  for (const v1::Field* f : OrderedDims(entry)) *out.add_dims() = *f;
  for (const v1::Field* f : OrderedTunables(entry)) *out.add_tunables() = *f;
  return out;
}

// The entries of `profile` in save order.
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

// Whether two field lists hold the same names and values, in any order.
bool SameFields(const Fields& a, const Fields& b) {
  if (a.size() != b.size()) return false;
  auto by_name = [](const Fields& fields) {
    std::vector<const v1::Field*> out;
    for (const v1::Field& f : fields) out.push_back(&f);
    std::sort(out.begin(), out.end(),
              [](const v1::Field* x, const v1::Field* y) {
                if (x->name() != y->name()) return x->name() < y->name();
                return CompareValues(x->value(), y->value()) < 0;
              });
    return out;
  };
  const std::vector<const v1::Field*> sa = by_name(a);
  const std::vector<const v1::Field*> sb = by_name(b);
  for (size_t i = 0; i < sa.size(); ++i) {
    if (sa[i]->name() != sb[i]->name() ||
        !ValuesEqual(sa[i]->value(), sb[i]->value())) {
      return false;
    }
  }
  return true;
}

// A string that identifies an entry's class and set of dims.
std::string IdentityKey(const v1::ProfileEntry& entry) {
  std::vector<const v1::Field*> dims;
  for (const v1::Field& f : entry.dims()) dims.push_back(&f);
  std::sort(dims.begin(), dims.end(),
            [](const v1::Field* x, const v1::Field* y) {
              if (x->name() != y->name()) return x->name() < y->name();
              return CompareValues(x->value(), y->value()) < 0;
            });
  std::string key;
  AppendJsonString(entry.operator_class(), &key);
  for (const v1::Field* f : dims) {
    key.push_back(' ');
    AppendJsonString(f->name(), &key);
    key.push_back(':');
    AppendValue(f->value(), &key);
  }
  return key;
}

// ---------------------------------------------------------------------------
// Parsing

// A SAX handler accepting exactly {"entries": [{scalar members}, ...]}. It
// stops at the first problem, so it never descends deeper than an entry.
class ProfileSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit ProfileSax(const TunableClassifier& is_tunable)
      : is_tunable_(is_tunable) {}

  absl::Status status() const { return status_; }
  bool saw_entries() const { return saw_entries_; }
  v1::Profile TakeProfile() { return std::move(profile_); }

  bool null() override { return Scalar(std::nullopt); }
  bool boolean(bool b) override {
    v1::Value v;
    v.set_bool_value(b);
    return Scalar(v);
  }
  bool number_integer(number_integer_t i) override {
    v1::Value v;
    v.set_int_value(i);
    return Scalar(v);
  }
  bool number_unsigned(number_unsigned_t u) override {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return OutOfRange(absl::StrCat(u));
    }
    v1::Value v;
    v.set_int_value(static_cast<int64_t>(u));
    return Scalar(v);
  }
  bool number_float(number_float_t d, const string_t& text) override {
    // nlohmann reads an integer too large for 64 bits as a double.
    if (text.find_first_of(".eE") == std::string::npos) {
      return OutOfRange(text);
    }
    v1::Value v;
    v.set_double_value(d);
    return Scalar(v);
  }
  bool string(string_t& s) override {
    v1::Value v;
    v.set_string_value(std::move(s));
    return Scalar(v);
  }
  bool binary(binary_t&) override { return Scalar(std::nullopt); }

  bool start_object(std::size_t) override {
    switch (where_) {
      case Where::kTop:
        where_ = Where::kRoot;
        return true;
      case Where::kRoot:
        return Fail("entries", "expected an array");
      case Where::kEntries:
        where_ = Where::kEntry;
        entry_keys_.clear();
        entry_ = Pending{};
        return true;
      case Where::kEntry:
        return Fail(KeyPath(), kExpectedScalar);
      case Where::kDone:
        break;
    }
    return Fail("", "unexpected object");
  }

  bool key(string_t& k) override {
    if (where_ == Where::kRoot) {
      if (k != "entries") {
        return Fail(k, "unknown key (a profile has only \"entries\")");
      }
      if (saw_entries_) return Fail("entries", "duplicate key");
      saw_entries_ = true;
      return true;
    }
    if (!entry_keys_.insert(k).second) {
      pending_key_ = std::move(k);
      return Fail(KeyPath(), "duplicate key");
    }
    pending_key_ = std::move(k);
    return true;
  }

  bool end_object() override {
    if (where_ == Where::kRoot) {
      where_ = Where::kDone;
      return true;
    }
    where_ = Where::kEntries;
    const bool ok = FinishEntry();
    ++index_;
    return ok;
  }

  bool start_array(std::size_t) override {
    switch (where_) {
      case Where::kTop:
        return Fail("", "expected a JSON object");
      case Where::kRoot:
        where_ = Where::kEntries;
        return true;
      case Where::kEntries:
        return Fail(EntryPath(), "expected an object");
      case Where::kEntry:
        return Fail(KeyPath(), kExpectedScalar);
      case Where::kDone:
        break;
    }
    return Fail("", "unexpected array");
  }

  bool end_array() override {
    where_ = Where::kRoot;
    return true;
  }

  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::json::exception& e) override {
    std::string_view what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag.
    if (!what.empty() && what.front() == '[') {
      const size_t end = what.find("] ");
      if (end != std::string_view::npos) what.remove_prefix(end + 2);
    }
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("invalid JSON: ", Absl(what)));
    }
    return false;
  }

 private:
  static constexpr char kExpectedScalar[] = "expected a number, bool or string";

  enum class Where { kTop, kRoot, kEntries, kEntry, kDone };

  struct Pending {
    std::vector<std::pair<std::string, v1::Value>> members;
  };

  bool Scalar(std::optional<v1::Value> value) {
    switch (where_) {
      case Where::kTop:
      case Where::kDone:
        return Fail("", "expected a JSON object");
      case Where::kRoot:
        return Fail("entries", "expected an array");
      case Where::kEntries:
        return Fail(EntryPath(), "expected an object");
      case Where::kEntry:
        if (!value.has_value()) return Fail(KeyPath(), kExpectedScalar);
        entry_.members.emplace_back(pending_key_, std::move(*value));
        return true;
    }
    return false;
  }

  bool OutOfRange(std::string_view text) {
    if (where_ != Where::kEntry) return Scalar(std::nullopt);
    return Fail(KeyPath(),
                absl::StrCat(Absl(text), " is out of the int64 range"));
  }

  bool FinishEntry() {
    const v1::Value* class_name = nullptr;
    for (const auto& [name, value] : entry_.members) {
      if (name == "operator") class_name = &value;
    }
    if (class_name == nullptr) return Fail(EntryPath(), "no \"operator\"");
    if (class_name->kind_case() != v1::Value::kStringValue) {
      return Fail(absl::StrCat(EntryPath(), ".operator"), "expected a string");
    }
    if (class_name->string_value().empty()) {
      return Fail(absl::StrCat(EntryPath(), ".operator"), "empty");
    }
    v1::ProfileEntry* entry = profile_.add_entries();
    entry->set_operator_class(class_name->string_value());
    for (auto& [name, value] : entry_.members) {
      if (name == "operator") continue;
      const bool tunable = is_tunable_
                               ? is_tunable_(entry->operator_class(), name)
                               : IsKnownTunable(entry->operator_class(), name);
      v1::Field* field = tunable ? entry->add_tunables() : entry->add_dims();
      field->set_name(name);
      *field->mutable_value() = std::move(value);
    }
    return true;
  }

  std::string EntryPath() const {
    return absl::StrCat("entries[", index_, "]");
  }
  std::string KeyPath() const {
    return absl::StrCat(EntryPath(), ".", pending_key_);
  }

  bool Fail(std::string_view path, std::string_view message) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          path.empty() ? std::string(message)
                       : absl::StrCat(Absl(path), ": ", Absl(message)));
    }
    return false;
  }

  const TunableClassifier& is_tunable_;
  absl::Status status_;
  Where where_ = Where::kTop;
  bool saw_entries_ = false;
  int index_ = 0;
  absl::flat_hash_set<std::string> entry_keys_;
  std::string pending_key_;
  Pending entry_;
  v1::Profile profile_;
};

absl::Status ErrnoError(int error, std::string_view what,
                        const std::string& path) {
  return absl::ErrnoToStatus(error, absl::StrCat(path, ": ", Absl(what)));
}

}  // namespace

bool IsKnownTunable(std::string_view class_name, std::string_view key) {
  const Family* family = FindFamily(class_name);
  return family != nullptr && PositionIn(family->tunables, key) !=
                                  std::numeric_limits<size_t>::max();
}

std::string ValueToString(const v1::Value& v) {
  std::string out;
  AppendValue(v, &out);
  return out;
}

std::string EntryToString(const v1::ProfileEntry& entry) {
  std::string out = "{\"operator\": ";
  AppendJsonString(entry.operator_class(), &out);
  auto append_fields = [&](const std::vector<const v1::Field*>& fields) {
    for (const v1::Field* f : fields) {
      out.append(", ");
      AppendJsonString(f->name(), &out);
      out.append(": ");
      AppendValue(f->value(), &out);
    }
  };
  append_fields(OrderedDims(entry));
  append_fields(OrderedTunables(entry));
  out.push_back('}');
  return out;
}

absl::StatusOr<Profile> Profile::FromJson(std::string_view text,
                                          const TunableClassifier& is_tunable) {
  ProfileSax sax(is_tunable);
  bool ok = false;
  try {
    ok =
        nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &sax);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON: ", e.what()));
  }
  RETURN_IF_ERROR(sax.status());
  if (!ok) return absl::InvalidArgumentError("invalid JSON");
  if (!sax.saw_entries()) return absl::InvalidArgumentError("no \"entries\"");
  return Profile(sax.TakeProfile());
}

absl::StatusOr<Profile> Profile::Load(const std::string& path,
                                      const TunableClassifier& is_tunable) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    return ErrnoError(error, "cannot open", path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ErrnoError(errno, "cannot read", path);
  absl::StatusOr<Profile> profile = FromJson(text.str(), is_tunable);
  if (!profile.ok()) {
    return absl::Status(profile.status().code(),
                        absl::StrCat(path, ": ", profile.status().message()));
  }
  return profile;
}

std::string Profile::ToJson() const {
  std::string out = "{\"entries\": [\n";
  bool first = true;
  for (const v1::ProfileEntry* entry : SortedEntries(proto_)) {
    if (!first) out.append(",\n");
    first = false;
    out.append(EntryToString(*entry));
  }
  if (!first) out.push_back('\n');
  out.append("]}\n");
  return out;
}

absl::Status Profile::Save(const std::string& path) const {
  static std::atomic<int> counter{0};
  const std::string text = ToJson();
  const std::string temp =
      absl::StrCat(path, ".tmp.", getpid(), ".", counter.fetch_add(1));
  const int fd =
      open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return ErrnoError(errno, "cannot create", temp);
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      close(fd);
      unlink(temp.c_str());
      return ErrnoError(error, "cannot write", temp);
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    const int error = errno;
    unlink(temp.c_str());
    return ErrnoError(error, "cannot write", temp);
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(temp.c_str());
    return ErrnoError(error, "cannot rename into place", path);
  }
  return absl::OkStatus();
}

absl::StatusOr<const v1::ProfileEntry*> Profile::Match(
    std::string_view class_name, const Fields& params) const {
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
          Absl(class_name), ": equally specific profile entries disagree: ",
          EntryToString(*best), " and ", EntryToString(entry)));
    }
  }
  return best;
}

v1::ProfileDiff DiffProfiles(const Profile& before, const Profile& after) {
  // Where a profile holds several entries of one identity, the first in save
  // order stands for them.
  auto index = [](const std::vector<const v1::ProfileEntry*>& sorted) {
    std::map<std::string, const v1::ProfileEntry*> out;
    for (const v1::ProfileEntry* e : sorted) out.emplace(IdentityKey(*e), e);
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
    const std::string key = IdentityKey(*e);
    if (new_index.at(key) != e) continue;
    auto old_it = old_index.find(key);
    if (old_it == old_index.end()) {
      *diff.add_added() = Canonical(*e);
    } else if (SameFields(old_it->second->tunables(), e->tunables())) {
      *diff.add_kept() = Canonical(*e);
    } else {
      const v1::ProfileEntry old_entry = Canonical(*old_it->second);
      const v1::ProfileEntry new_entry = Canonical(*e);
      v1::EntryChange* change = diff.add_changed();
      change->set_operator_class(new_entry.operator_class());
      *change->mutable_dims() = new_entry.dims();
      *change->mutable_old_tunables() = old_entry.tunables();
      *change->mutable_new_tunables() = new_entry.tunables();
    }
  }
  for (const v1::ProfileEntry* e : old_sorted) {
    const std::string key = IdentityKey(*e);
    if (old_index.at(key) == e && !new_index.contains(key)) {
      *diff.add_removed() = Canonical(*e);
    }
  }
  return diff;
}

}  // namespace irontune
