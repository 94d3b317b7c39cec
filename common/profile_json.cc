#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/families.h"
#include "common/profile.h"
#include "common/profile_order.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

// Debian's Abseil is built with its own string_view, which std::string_view
// does not convert to.
absl::string_view Absl(std::string_view s) { return {s.data(), s.size()}; }

// A SAX handler accepting exactly {"entries": [{scalar members}, ...]}. It
// stops at the first problem, so it never descends deeper than an entry.
class ProfileSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit ProfileSax(const TunableClassifier& is_tunable)
      : is_tunable_(is_tunable) {}

  absl::Status status() const { return status_; }
  bool saw_entries() const { return saw_entries_; }
  v1::Profile TakeProfile() { return std::move(profile_); }
  std::vector<std::string> TakeNotes() { return std::move(notes_); }

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
    const Family* family = FindFamily(entry->operator_class());
    if (!is_tunable_ && family == nullptr) {
      notes_.push_back(absl::StrCat(EntryPath(), ": no operator \"",
                                    entry->operator_class(),
                                    "\" in the catalogue; kept as it is"));
    }
    for (auto& [name, value] : entry_.members) {
      if (name == "operator") continue;
      const bool tunable = is_tunable_
                               ? is_tunable_(entry->operator_class(), name)
                               : IsKnownTunable(entry->operator_class(), name);
      v1::Field* field = tunable ? entry->add_tunables() : entry->add_dims();
      field->set_name(name);
      *field->mutable_value() = std::move(value);
    }
    if (is_tunable_) return true;
    const std::string why = IronEntryCheck(*entry);
    if (why.empty()) return true;
    const bool on_field =
        why.find(": ") != std::string::npos && why.find(' ') > why.find(':');
    return Fail(
        on_field ? absl::StrCat(EntryPath(), ".", why.substr(0, why.find(':')))
                 : EntryPath(),
        on_field ? why.substr(why.find(": ") + 2) : why);
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
  std::vector<std::string> notes_;
};

// Two entries of one class and the same dims that give one tunable
// different values: IRON could never pick between them.
absl::Status CheckConflicts(const v1::Profile& profile) {
  std::map<std::string, int> first;  // identity -> entry index
  for (int i = 0; i < profile.entries_size(); ++i) {
    const v1::ProfileEntry& e = profile.entries(i);
    auto [it, fresh] = first.emplace(EntryIdentity(e), i);
    if (fresh) continue;
    const v1::ProfileEntry& o = profile.entries(it->second);
    for (const v1::Field& t : e.tunables()) {
      for (const v1::Field& u : o.tunables()) {
        if (t.name() == u.name() && !ValuesEqual(t.value(), u.value())) {
          return absl::InvalidArgumentError(
              absl::StrCat("entries[", i, "] and entries[", it->second,
                           "] are equally specific and disagree on ", t.name(),
                           ": ", EntryToString(e), " and ", EntryToString(o)));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ErrnoError(int error, std::string_view what,
                        const std::string& path) {
  return absl::ErrnoToStatus(error, absl::StrCat(path, ": ", Absl(what)));
}

}  // namespace

std::string EntryToString(const v1::ProfileEntry& entry) {
  return IronEntryJson(entry);
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
  Profile profile(sax.TakeProfile());
  if (!is_tunable) RETURN_IF_ERROR(CheckConflicts(profile.proto_));
  profile.notes_ = sax.TakeNotes();
  return profile;
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
  std::string out = "{\"entries\": [\n  ";
  for (int i = 0; i < proto_.entries_size(); ++i) {
    if (i > 0) out.append(",\n  ");
    out.append(IronEntryJson(proto_.entries(i)));
  }
  out.append("\n]}\n");
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

}  // namespace irontune
