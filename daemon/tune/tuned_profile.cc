#include "daemon/tune/tuned_profile.h"

#include <algorithm>
#include <cmath>

#include "common/families.h"
#include "common/value.h"
#include "daemon/base/stats.h"
#include "daemon/tune/search.h"
#include "daemon/tune/settings.h"

namespace irontune {
namespace {

bool DimsMatch(const std::vector<v1::Field>& entry_dims,
               const std::vector<v1::Field>& shape_dims) {
  for (const v1::Field& d : entry_dims) {
    auto it =
        std::find_if(shape_dims.begin(), shape_dims.end(),
                     [&](const v1::Field& s) { return s.name() == d.name(); });
    if (it == shape_dims.end() || !ValuesEqual(it->value(), d.value())) {
      return false;
    }
  }
  return true;
}

// `fields` with `over`'s fields replacing those of the same name, new names
// appended.
void Overlay(std::vector<v1::Field>& fields,
             const google::protobuf::RepeatedPtrField<v1::Field>& over) {
  for (const v1::Field& f : over) {
    auto it =
        std::find_if(fields.begin(), fields.end(),
                     [&](const v1::Field& g) { return g.name() == f.name(); });
    if (it == fields.end()) {
      fields.push_back(f);
    } else {
      *it = f;
    }
  }
}

}  // namespace

TunedProfile::TunedProfile(const v1::Calls& calls, const Profile& submitted,
                           const std::vector<Shape>& shapes)
    : calls_(calls),
      submitted_(submitted),
      shapes_(shapes),
      covering_(shapes.size()),
      held_(shapes.size()) {
  // IRON keeps a profile's entries in order: every submitted entry stays,
  // a tuned one replaces the entry of its class and dims in place (Put).
  for (const v1::ProfileEntry& entry : submitted.proto().entries()) {
    out_.Add(entry);
    const std::vector<v1::Field> dims(entry.dims().begin(), entry.dims().end());
    for (size_t s = 0; s < shapes.size(); ++s) {
      if (shapes[s].class_name == entry.operator_class() &&
          DimsMatch(dims, shapes[s].dims)) {
        covering_[s].push_back(dims);
      }
    }
  }
  // What the submitted profile gives each shape, by IRON's selection rule
  // (the request's profile passed CheckProfileFor, so no lookup is
  // ambiguous).
  for (size_t s = 0; s < shapes.size(); ++s) {
    google::protobuf::RepeatedPtrField<v1::Field> params(shapes[s].dims.begin(),
                                                         shapes[s].dims.end());
    absl::StatusOr<std::vector<v1::Field>> chosen =
        submitted.TunablesFor(shapes[s].class_name, params);
    if (chosen.ok()) held_[s] = *std::move(chosen);
  }
}

TunableValues TunedProfile::Incumbent(size_t s,
                                      const TunableValues& recorded) const {
  TunableValues out = recorded;
  for (v1::Field& f : out) {
    for (const v1::Field& h : held_[s]) {
      if (h.name() == f.name()) *f.mutable_value() = h.value();
    }
  }
  return out;
}

namespace {

// Adds `trial`'s member gains (-delta), weighted by each member's steps, to
// `gain`, and their noises to `noises`.
void AddGains(const Shape& shape, const ShapeTrial& trial, double& gain,
              std::vector<std::optional<double>>& noises) {
  for (size_t m = 0; m < shape.members.size(); ++m) {
    const double steps = static_cast<double>(shape.members[m].steps);
    gain += -steps * trial.member_delta_us[m];
    const std::optional<double>& noise = trial.member_noise_us[m];
    noises.push_back(noise ? std::optional<double>(steps * *noise)
                           : std::nullopt);
  }
}

// The time of one pass of the calls over `shape` with the setting taken:
// the recorded setting's step time, its members alike, times their mean
// steps, plus each member's delta times its steps. nullopt where the
// recorded setting was not timed.
std::optional<double> PassUs(const Shape& shape, const ShapeResult& result) {
  if (!(result.recorded_us > 0) || shape.members.empty()) return std::nullopt;
  const ShapeTrial& best = result.trials[result.best];
  double steps = 0;
  double delta = 0;
  for (size_t m = 0; m < shape.members.size(); ++m) {
    const double n = static_cast<double>(shape.members[m].steps);
    steps += n;
    delta += n * best.member_delta_us[m];
  }
  return std::max(0.0, result.recorded_us * steps /
                               static_cast<double>(shape.members.size()) +
                           delta);
}

}  // namespace

void TunedProfile::Add(size_t s, const ShapeResult& result) {
  const Shape& shape = shapes_[s];
  const ShapeTrial& best = result.trials[result.best];
  AddGains(shape, result.against_incumbent, model_gain_, model_noise_);
  if (result.best != 0) {
    AddGains(shape, best, recording_gain_, recording_noise_);
  }
  if (std::optional<double> pass = PassUs(shape, result)) {
    model_time_ += *pass;
    timed_ = true;
  }
  v1::ProfileEntry entry;
  entry.set_operator_class(shape.class_name);
  for (v1::Field& d :
       NamedDims(calls_.operators(static_cast<int>(shape.members[0].op)),
                 covering_[s])) {
    *entry.add_dims() = std::move(d);
  }
  std::vector<v1::Field> tunables = held_[s];
  google::protobuf::RepeatedPtrField<v1::Field> chosen(
      best.trial.tunables.begin(), best.trial.tunables.end());
  Overlay(tunables, chosen);
  // Only fields the class declares (docs/operators.md): IRON refuses others.
  const Family* family = FindFamily(shape.class_name);
  for (v1::Field& f : tunables) {
    if (family == nullptr || IsTunable(*family, f.name()))
      *entry.add_tunables() = std::move(f);
  }
  if (family != nullptr && entry.tunables_size() == 0) return;
  made_.emplace_back(entry, s);
  out_.Put(std::move(entry));
}

void TunedProfile::Untuned(size_t s, const std::string& reason,
                           double planned_seconds) {
  v1::UntunedShape& u = untuned_.emplace_back();
  u.set_shape(shapes_[s].key);
  u.set_reason(reason);
  u.set_planned_device_seconds(planned_seconds);
}

namespace {

// The gain of the new entry made for `shape` (its search `result`): the
// confirmation against the incumbent, or 0 where the incumbent stays; per
// step, and weighted by the steps that run each member.
v1::EntryGain GainOf(const Shape& shape, const ShapeResult& result) {
  const ShapeTrial& against = result.against_incumbent;
  const Comparison& t = against.trial;
  v1::EntryGain gain;
  gain.set_has_gain(t.noise_us.has_value());
  gain.set_gain_us(t.noise_us && t.delta_us != 0 ? -t.delta_us : 0);
  gain.set_noise_us(t.noise_us.value_or(0));
  double weighted = 0;
  std::vector<std::optional<double>> noises;
  AddGains(shape, against, weighted, noises);
  const std::optional<double> noise = Quadrature(noises);
  gain.set_has_weighted_gain(gain.has_gain() && noise.has_value());
  if (gain.has_weighted_gain()) {
    gain.set_weighted_gain_us(weighted != 0 ? weighted : 0);
    gain.set_weighted_noise_us(*noise);
  }
  return gain;
}

}  // namespace

std::optional<size_t> TunedProfile::MadeFor(
    const std::string& operator_class,
    const google::protobuf::RepeatedPtrField<v1::Field>& dims) const {
  const std::vector<v1::Field> want(dims.begin(), dims.end());
  for (const auto& [entry, s] : made_) {
    const std::vector<v1::Field> own(entry.dims().begin(), entry.dims().end());
    if (entry.operator_class() == operator_class && SettingsEqual(own, want)) {
      return s;
    }
  }
  return std::nullopt;
}

std::pair<Profile, v1::ProfileDiff> TunedProfile::Finish(
    const std::vector<ShapeResult>& results) && {
  v1::ProfileDiff diff = DiffProfiles(submitted_, out_);
  for (v1::EntryChange& change : *diff.mutable_changed()) {
    const std::optional<size_t> s =
        MadeFor(change.operator_class(), change.dims());
    if (!s) continue;
    const v1::EntryGain gain = GainOf(shapes_[*s], results[*s]);
    change.set_has_gain(gain.has_gain());
    change.set_gain_us(gain.gain_us());
    change.set_noise_us(gain.noise_us());
    change.set_has_weighted_gain(gain.has_weighted_gain());
    change.set_weighted_gain_us(gain.weighted_gain_us());
    change.set_weighted_noise_us(gain.weighted_noise_us());
  }
  for (const v1::ProfileEntry& added : diff.added()) {
    v1::EntryGain* gain = diff.add_added_gains();
    const std::optional<size_t> s =
        MadeFor(added.operator_class(), added.dims());
    if (s) *gain = GainOf(shapes_[*s], results[*s]);
  }
  const std::optional<double> noise = Quadrature(model_noise_);
  diff.set_has_model_gain(noise.has_value());
  diff.set_model_gain_us(noise ? model_gain_ : 0);
  diff.set_model_noise_us(noise.value_or(0));
  const std::optional<double> recording = Quadrature(recording_noise_);
  diff.set_has_recording_gain(recording.has_value());
  diff.set_recording_gain_us(recording ? recording_gain_ : 0);
  diff.set_recording_noise_us(recording.value_or(0));
  diff.set_has_model_time(timed_);
  diff.set_model_time_us(model_time_);
  for (v1::UntunedShape& u : untuned_) *diff.add_untuned() = std::move(u);
  return {std::move(out_), std::move(diff)};
}

}  // namespace irontune
