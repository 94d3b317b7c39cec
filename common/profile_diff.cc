#include "common/profile_diff.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
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

absl::StatusOr<CheckMinGain> ParseCheckMinGain(std::string_view text) {
  absl::string_view rest(text.data(), text.size());
  CheckMinGain out;
  double scale = 1;
  if (absl::ConsumeSuffix(&rest, "%")) {
    scale = 0.01;
  } else if (absl::ConsumeSuffix(&rest, "us") ||
             absl::ConsumeSuffix(&rest, "µs")) {
    out.unit = CheckMinGain::Unit::kMicros;
  }
  double value = 0;
  const auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--check-min-gain \"", std::string(text), "\": ", why,
        " (a share of the model's time per pass, e.g. 0.1% or 0.001, or "
        "microseconds per pass, e.g. 25us)"));
  };
  if (rest.empty() || !absl::SimpleAtod(rest, &value) ||
      !std::isfinite(value)) {
    return bad("not a number");
  }
  out.value = value * scale;
  if (out.value < 0) return bad("negative");
  if (out.unit == CheckMinGain::Unit::kShare && out.value >= 1) {
    return bad("a share must be below 1 (100%)");
  }
  return out;
}

std::string CheckMinGainText(const CheckMinGain& min_gain) {
  if (min_gain.unit == CheckMinGain::Unit::kMicros) {
    return absl::StrFormat("%g µs", min_gain.value);
  }
  return absl::StrFormat("%g%%", 100 * min_gain.value);
}

namespace {

// `gain`'s weighted figure into `entry`, counted against `threshold_us`.
void Weigh(const v1::EntryGain& gain, double threshold_us,
           CheckedEntry& entry) {
  entry.has_gain = gain.has_weighted_gain();
  entry.gain_us = gain.weighted_gain_us();
  entry.noise_us = gain.weighted_noise_us();
  entry.counts = !entry.has_gain ||
                 entry.gain_us - kCheckGainZ * entry.noise_us > threshold_us;
}

// Why the entries of `diff` cannot be weighed against `min_gain`; "" where
// they can.
std::string CannotWeigh(const v1::ProfileDiff& diff,
                        const CheckMinGain& min_gain) {
  // A daemon that knows the fields sets has_weighted_gain with has_gain,
  // and the model's time once it timed anything.
  bool weighted = false;
  bool unweighted = false;
  const auto see = [&](bool has_gain, bool has_weighted) {
    weighted = weighted || has_weighted;
    unweighted = unweighted || (has_gain && !has_weighted);
  };
  for (const v1::EntryChange& c : diff.changed()) {
    see(c.has_gain(), c.has_weighted_gain());
  }
  for (const v1::EntryGain& g : diff.added_gains()) {
    see(g.has_gain(), g.has_weighted_gain());
  }
  if (unweighted || (!weighted && !diff.has_model_time())) {
    return "irontuned sent no weighted gains (a daemon older than this "
           "client, or nothing it timed)";
  }
  if (min_gain.unit == CheckMinGain::Unit::kShare &&
      !(diff.has_model_time() && diff.model_time_us() > 0)) {
    return "irontuned sent no model time to take a share of (nothing "
           "timed)";
  }
  return "";
}

}  // namespace

CheckVerdict WeighCheck(const v1::ProfileDiff& diff,
                        const CheckMinGain& min_gain) {
  CheckVerdict out;
  out.fallback = CannotWeigh(diff, min_gain);
  out.weighed = out.fallback.empty();
  if (out.weighed) {
    const bool share = min_gain.unit == CheckMinGain::Unit::kShare;
    out.model_time_us = share ? diff.model_time_us() : 0;
    out.threshold_us =
        share ? min_gain.value * diff.model_time_us() : min_gain.value;
  }
  const auto add = [&](CheckedEntry::Kind kind, int index,
                       const v1::EntryGain* gain) {
    CheckedEntry& e = out.entries.emplace_back();
    e.kind = kind;
    e.index = index;
    if (gain != nullptr) Weigh(*gain, out.threshold_us, e);
    e.counts = e.counts || gain == nullptr || !out.weighed;
    out.fails = out.fails || e.counts;
  };
  for (int i = 0; i < diff.changed_size(); ++i) {
    const v1::EntryChange& c = diff.changed(i);
    v1::EntryGain gain;
    gain.set_has_weighted_gain(c.has_weighted_gain());
    gain.set_weighted_gain_us(c.weighted_gain_us());
    gain.set_weighted_noise_us(c.weighted_noise_us());
    add(CheckedEntry::Kind::kChanged, i, &gain);
  }
  for (int i = 0; i < diff.added_size(); ++i) {
    add(CheckedEntry::Kind::kAdded, i,
        i < diff.added_gains_size() ? &diff.added_gains(i) : nullptr);
  }
  for (int i = 0; i < diff.removed_size(); ++i) {
    add(CheckedEntry::Kind::kRemoved, i, nullptr);
  }
  return out;
}

}  // namespace irontune
