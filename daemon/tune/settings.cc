#include "daemon/tune/settings.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <unordered_set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/design.h"
#include "common/families.h"
#include "common/profile.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/base/log_safe.h"

namespace irontune {
namespace {

std::vector<v1::Value> RecordedDomain(const v1::Operator& op,
                                      const std::string& tunable) {
  for (const v1::Tunable& t : op.tunables()) {
    if (t.name() == tunable) {
      return std::vector<v1::Value>(t.domain().begin(), t.domain().end());
    }
  }
  return {};
}

// The same values in any order (a rule lists them widest first, a
// recorder may not).
bool SameValues(const std::vector<v1::Value>& a,
                const std::vector<v1::Value>& b) {
  if (a.size() != b.size()) return false;
  for (const v1::Value& v : a) {
    if (std::none_of(b.begin(), b.end(),
                     [&](const v1::Value& u) { return ValuesEqual(u, v); }))
      return false;
  }
  return true;
}

std::string ValuesText(const std::vector<v1::Value>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += ValueToString(values[i]);
  }
  return out + "]";
}

// DefaultSearchSpace's members, plain functions so that a space can be
// told to be the default one (IsDefaultSpace).
std::vector<v1::Value> DefaultDomain(const v1::Operator& op,
                                     const std::string& tunable,
                                     const std::string& generation) {
  // The recorder's domain is IRON's own declaration on the machine that
  // recorded it: it wins; the catalogue's fills in where it has none.
  std::vector<v1::Value> recorded = RecordedDomain(op, tunable);
  const Family* family = FindFamily(op.class_name());
  if (family == nullptr) return recorded;
  std::vector<v1::Value> catalogue = OperatorDomain(op, tunable, generation);
  if (recorded.empty()) return catalogue;
  if (!catalogue.empty() && !SameValues(recorded, catalogue)) {
    spdlog::info(
        "{}.{}: the recording's domain {} differs from the "
        "catalogue's {} for {}; using the recording's",
        LogSafe(op.class_name()), LogSafe(tunable),
        LogSafe(ValuesText(recorded), kLogSafeLongBytes), ValuesText(catalogue),
        generation);
  }
  return recorded;
}

std::string DefaultViolation(const v1::Operator& op, const Platform& platform) {
  return ConstraintViolation(op, platform.generation, platform.columns);
}

std::string DefaultIdentity(const v1::Operator& op,
                            const TunableValues& setting) {
  return ResolvedDesignBytes(WithSetting(op, setting), "", 0);
}

using DomainFn = decltype(&DefaultDomain);
using ViolationFn = decltype(&DefaultViolation);
using IdentityFn = decltype(&DefaultIdentity);

template <typename Fn, typename Signature>
bool Holds(const std::function<Signature>& f, Fn fn) {
  const Fn* target = f.template target<Fn>();
  return target != nullptr && *target == fn;
}

}  // namespace

SearchSpace RecordingSearchSpace() {
  SearchSpace space = DefaultSearchSpace();
  space.domain = [](const v1::Operator& op, const std::string& tunable,
                    const std::string&) { return RecordedDomain(op, tunable); };
  space.violation = [](const v1::Operator&, const Platform&) {
    return std::string();
  };
  return space;
}

SearchSpace DefaultSearchSpace() {
  SearchSpace space;
  space.domain = &DefaultDomain;
  space.violation = &DefaultViolation;
  space.identity = &DefaultIdentity;
  return space;
}

TunableValues RecordedSetting(const v1::Operator& op) {
  TunableValues out;
  for (const v1::Tunable& t : op.tunables()) {
    v1::Field f;
    f.set_name(t.name());
    *f.mutable_value() = t.value();
    out.push_back(std::move(f));
  }
  return out;
}

v1::Operator WithSetting(const v1::Operator& op, const TunableValues& setting) {
  v1::Operator out = op;
  for (v1::Tunable& t : *out.mutable_tunables()) {
    for (const v1::Field& f : setting) {
      if (f.name() == t.name()) *t.mutable_value() = f.value();
    }
  }
  return out;
}

bool SettingsEqual(const TunableValues& a, const TunableValues& b) {
  if (a.size() != b.size()) return false;
  for (const v1::Field& fa : a) {
    auto it = std::find_if(b.begin(), b.end(), [&](const v1::Field& fb) {
      return fb.name() == fa.name();
    });
    if (it == b.end() || !ValuesEqual(it->value(), fa.value())) return false;
  }
  return true;
}

std::string SettingText(const TunableValues& setting) {
  std::string out;
  for (const v1::Field& f : setting) {
    absl::StrAppend(&out, out.empty() ? "" : " ", f.name(), "=",
                    ValueToString(f.value()));
  }
  return out;
}

std::string SettingIdentity(const TunableValues& setting) {
  std::vector<std::pair<std::string, std::string>> parts;
  for (const v1::Field& f : setting) {
    parts.emplace_back(f.name(), ValueKey(f.value()));
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& [name, value] : parts) {
    absl::StrAppend(&out, name.size(), ":", name, "=", value, ";");
  }
  return out;
}

namespace {

// Each tunable's values: the recorded one first, then its domain's others
// (none for a held tunable). Fails past kMaxCombinations combinations.
absl::StatusOr<std::vector<std::vector<v1::Value>>> Domains(
    const v1::Operator& op, const Platform& platform,
    const std::set<std::string>& held, const SearchSpace& space) {
  std::vector<std::vector<v1::Value>> domains;
  int64_t combinations = 1;
  for (const v1::Tunable& t : op.tunables()) {
    std::vector<v1::Value> values = {t.value()};
    if (!held.contains(t.name())) {
      for (v1::Value& v : space.domain(op, t.name(), platform.generation)) {
        const bool seen =
            std::any_of(values.begin(), values.end(),
                        [&](const v1::Value& u) { return ValuesEqual(u, v); });
        if (!seen) values.push_back(std::move(v));
      }
    }
    if (combinations > kMaxCombinations / static_cast<int64_t>(values.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          op.class_name(), ": the tunables' domains give more than ",
          kMaxCombinations, " combinations"));
    }
    combinations *= static_cast<int64_t>(values.size());
    domains.push_back(std::move(values));
  }
  return domains;
}

}  // namespace

SearchSpace CompleteSearchSpace(const SearchSpace& space) {
  SearchSpace out = DefaultSearchSpace();
  if (space.domain) out.domain = space.domain;
  if (space.violation) out.violation = space.violation;
  if (space.identity) out.identity = space.identity;
  return out;
}

bool IsDefaultSpace(const SearchSpace& space) {
  return Holds(space.domain, &DefaultDomain) &&
         Holds(space.violation, &DefaultViolation) &&
         Holds(space.identity, &DefaultIdentity);
}

namespace {

// Settings' list, and its line about dropped combinations ("" for none).
struct Enumerated {
  std::vector<TunableValues> settings;
  std::string dropped;
};

// Settings without the memo.
absl::StatusOr<Enumerated> Enumerate(const v1::Operator& op,
                                     const Platform& platform,
                                     const std::set<std::string>& pinned,
                                     const SearchSpace& space) {
  std::set<std::string> held = pinned;
  held.insert(op.pinned().begin(), op.pinned().end());
  const TunableValues recorded = RecordedSetting(op);
  ASSIGN_OR_RETURN(const std::vector<std::vector<v1::Value>> domains,
                   Domains(op, platform, held, space));
  int64_t combinations = 1;
  for (const auto& values : domains) {
    combinations *= static_cast<int64_t>(values.size());
  }
  // A setting's identity is taken after IRON's resolve on this platform
  // (ResolvedDesign), so two that resolve to one design are timed once.
  auto identity = [&](const v1::Operator& moved) {
    const v1::Operator resolved =
        ResolvedDesign(moved, platform.generation, platform.columns);
    return space.identity(resolved, RecordedSetting(resolved));
  };
  Enumerated out;
  out.settings = {recorded};
  std::unordered_set<std::string> designs = {identity(op)};
  int64_t dropped = 0;
  std::string first_reason;
  // Odometer over the domains, index 0 everywhere being the recorded setting.
  std::vector<size_t> at(domains.size(), 0);
  for (int64_t n = 1; n < combinations; ++n) {
    for (size_t i = domains.size(); i-- > 0;) {
      if (++at[i] < domains[i].size()) break;
      at[i] = 0;
    }
    TunableValues setting = recorded;
    for (size_t i = 0; i < domains.size(); ++i) {
      *setting[i].mutable_value() = domains[i][at[i]];
    }
    const v1::Operator moved = WithSetting(op, setting);
    if (std::string why = space.violation(moved, platform); !why.empty()) {
      if (dropped++ == 0) first_reason = std::move(why);
      continue;
    }
    if (designs.insert(identity(moved)).second) {
      out.settings.push_back(std::move(setting));
    }
  }
  if (dropped > 0) {
    out.dropped =
        absl::StrCat(op.class_name(), ": ", dropped, " of ", combinations,
                     " settings dropped (first: ", first_reason, ")");
  }
  return out;
}

// What Settings gave in the default space, by operator, platform and pins:
// a function of those alone (the catalogue is constant), so an Autotune's
// admission, its search and the next job's ask it once. Holds at most
// kSettingsMemoSize settings in all; when full, it starts afresh.
// Thread-safe (admission runs on gRPC threads, the search on the worker).
class SettingsMemo {
 public:
  static SettingsMemo& Get() {
    static SettingsMemo* const memo = new SettingsMemo();
    return *memo;
  }

  static std::string Key(const v1::Operator& op, const Platform& platform,
                         const std::set<std::string>& pinned) {
    std::string key = absl::StrCat(platform.generation.size(), ":",
                                   platform.generation, "/", platform.columns);
    for (const std::string& p : pinned) {
      absl::StrAppend(&key, "/", p.size(), ":", p);
    }
    absl::StrAppend(&key, "\n", DeterministicBytes(op));
    return key;
  }

  std::optional<Enumerated> Find(const std::string& key) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }

  void Keep(std::string key, const Enumerated& e) {
    absl::MutexLock lock(&mu_);
    if (size_ + e.settings.size() > kSettingsMemoSize) {
      entries_.clear();
      size_ = 0;
    }
    if (e.settings.size() > kSettingsMemoSize) return;
    if (entries_.emplace(std::move(key), e).second) size_ += e.settings.size();
  }

 private:
  static constexpr size_t kSettingsMemoSize = size_t{1} << 16;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Enumerated> entries_ ABSL_GUARDED_BY(mu_);
  size_t size_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

absl::StatusOr<std::vector<TunableValues>> Settings(
    const v1::Operator& op, const Platform& platform,
    const std::set<std::string>& pinned, const SearchSpace& given,
    const std::function<void(const std::string&)>& log) {
  const bool memo = IsDefaultSpace(given);
  const std::string key =
      memo ? SettingsMemo::Key(op, platform, pinned) : std::string();
  std::optional<Enumerated> found;
  if (memo) found = SettingsMemo::Get().Find(key);
  if (!found) {
    ASSIGN_OR_RETURN(
        found, Enumerate(op, platform, pinned, CompleteSearchSpace(given)));
    if (memo) SettingsMemo::Get().Keep(key, *found);
  }
  if (!found->dropped.empty() && log) log(found->dropped);
  return std::move(found->settings);
}

}  // namespace irontune
