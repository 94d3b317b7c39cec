#include "daemon/tune/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/families.h"
#include "common/op_access.h"
#include "common/profile.h"
#include "common/recording.h"
#include "common/shape.h"
#include "common/status_macros.h"
#include "daemon/base/stats.h"

namespace irontune {
namespace {

CallValues ToCallValues(const google::protobuf::Map<std::string, int64_t>& m) {
  CallValues out;
  for (const auto& [name, value] : m) out.emplace(name, value);
  return out;
}

// A label of bound-member values; nullopt where no binding sets the member.
using Label = std::vector<std::optional<int64_t>>;

const v1::Value* Find(const TunableValues& setting, const std::string& name) {
  for (const v1::Field& f : setting) {
    if (f.name() == name) return &f.value();
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<CallValues> OpValues(const v1::Timed& call, uint32_t op,
                                    const CallValues* at) {
  const v1::Recording& rec = call.recording();
  // Addresses the call does not give read 0 (IRON's op_values).
  const CallValues graph =
      WithAddresses(rec, at == nullptr ? ToCallValues(call.values()) : *at);
  at = &graph;
  CallValues out;
  for (int b = 0; b < rec.bindings_size(); ++b) {
    const v1::Binding& binding = rec.bindings(b);
    if (binding.op() != op) continue;
    absl::StatusOr<int64_t> value =
        EvaluateExpression(binding.expression(), *at);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("recording.bindings[", b,
                       "].expression: ", value.status().message()));
    }
    out.insert_or_assign(binding.member(), *value);
  }
  return out;
}

absl::StatusOr<std::vector<WeightedValues>> OpPoints(
    const v1::Timed& call, uint32_t op, const v1::Operator& design) {
  std::set<std::string> bound;
  for (const v1::CallValue& v : design.values()) {
    if (!v.bounds().empty()) bound.insert(v.name());
  }
  std::vector<std::pair<Label, WeightedValues>> groups;
  for (const v1::Point& point : call.points()) {
    CallValues at = ToCallValues(point.values());
    ASSIGN_OR_RETURN(CallValues values, OpValues(call, op, &at));
    Label label;
    for (const std::string& name : bound) {
      auto it = values.find(name);
      label.push_back(it == values.end() ? std::nullopt
                                         : std::optional<int64_t>(it->second));
    }
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == label; });
    if (group == groups.end()) {
      groups.emplace_back(std::move(label),
                          WeightedValues{point.weight(), std::move(values)});
    } else {
      group->second.weight += point.weight();
    }
  }
  std::vector<WeightedValues> out;
  if (groups.size() > 1) {
    for (auto& [label, weighted] : groups) out.push_back(std::move(weighted));
    return out;
  }
  ASSIGN_OR_RETURN(CallValues values, OpValues(call, op));
  out.push_back(WeightedValues{1.0, std::move(values)});
  return out;
}

std::map<std::string, std::string> OpInputs(const v1::Timed& call, uint32_t op,
                                            const v1::Operator& design) {
  return CallBuffers(call).OpInputs(op, design);
}

CallBuffers::CallBuffers(const v1::Timed& call) {
  const v1::Recording& rec = call.recording();
  for (const v1::GraphBuffer& b : rec.buffers()) {
    nbytes_.emplace(b.name(), b.nbytes());
  }
  for (const v1::Content& c : call.contents()) {
    contents_.emplace(c.buffer(), &c.data());
  }
  for (const v1::Step& step : rec.steps()) steps_[step.op()].push_back(&step);
}

std::map<std::string, std::string> CallBuffers::OpInputs(
    uint32_t op, const v1::Operator& design) const {
  std::map<std::string, std::string> out;
  auto steps = steps_.find(op);
  if (steps == steps_.end()) return out;
  for (const v1::Step* step : steps->second) {
    const int n = std::min(step->refs_size(), design.buffers_size());
    for (int r = 0; r < n; ++r) {
      const v1::BufferRef& ref = step->refs(r);
      auto size = nbytes_.find(ref.buffer());
      auto content = contents_.find(ref.buffer());
      if (size == nbytes_.end() || content == contents_.end()) continue;
      std::optional<uint64_t> own = BufferBytes(design.buffers(r));
      const bool whole = ref.offset() == 0 && own == size->second &&
                         (ref.length() == 0 || ref.length() == size->second);
      if (!whole) continue;
      out.insert_or_assign(design.buffers(r).name(), *content->second);
    }
  }
  return out;
}

bool Comparison::Gains(double z) const {
  return refused.empty() && delta_us < 0 && noise_us.has_value() &&
         -delta_us > z * *noise_us;
}

int ChangedTunables(const TunableValues& a, const TunableValues& b) {
  int changed = 0;
  for (const v1::Field& f : a) {
    auto it = std::find_if(b.begin(), b.end(), [&](const v1::Field& g) {
      return g.name() == f.name();
    });
    if (it == b.end() || !ValuesEqual(it->value(), f.value())) ++changed;
  }
  return changed;
}

namespace {

// A challenger's gain over the incumbent (both timed against the recorded
// setting) and the two noises in quadrature; nullopt where the challenger
// is refused or a noise is unknown.
struct Gain {
  double us;
  double noise_us;
};
std::optional<Gain> GainOver(const Comparison& challenger,
                             const Comparison& incumbent,
                             bool incumbent_recorded) {
  if (!challenger.refused.empty() || !challenger.noise_us) return std::nullopt;
  const std::optional<double> incumbent_noise =
      incumbent_recorded ? std::optional<double>(0) : incumbent.noise_us;
  if (!incumbent_noise) return std::nullopt;
  const double base = incumbent_recorded ? 0 : incumbent.delta_us;
  return Gain{base - challenger.delta_us,
              std::hypot(*challenger.noise_us, *incumbent_noise)};
}

}  // namespace

bool Beats(const Comparison& challenger, const Comparison& incumbent,
           bool incumbent_recorded, double z, double practical_us) {
  const std::optional<Gain> g =
      GainOver(challenger, incumbent, incumbent_recorded);
  return g && g->us > z * g->noise_us && g->us > practical_us;
}

int Pick(const std::vector<Comparison>& trials, int incumbent, double z,
         double practical_us) {
  const Comparison& held = trials[incumbent];
  std::vector<int> winners;
  for (int i = 0; i < static_cast<int>(trials.size()); ++i) {
    if (i != incumbent &&
        Beats(trials[i], held, incumbent == 0, z, practical_us)) {
      winners.push_back(i);
    }
  }
  if (winners.empty()) return incumbent;
  int fastest = winners[0];
  for (int w : winners) {
    if (trials[w].delta_us < trials[fastest].delta_us) fastest = w;
  }
  const Comparison& f = trials[fastest];
  int pick = -1;
  int fewest = 0;
  for (int w : winners) {
    const Comparison& t = trials[w];
    const double margin =
        std::max(z * std::hypot(*t.noise_us, *f.noise_us), practical_us);
    if (t.delta_us - f.delta_us > margin) continue;
    const int changed = ChangedTunables(t.tunables, held.tunables);
    if (pick < 0 || changed < fewest) {
      pick = w;
      fewest = changed;
    }
  }
  return pick;
}

bool Contends(const Comparison& challenger, const Comparison& incumbent,
              bool incumbent_recorded, double z, double practical_us) {
  const std::optional<Gain> g =
      GainOver(challenger, incumbent, incumbent_recorded);
  return g && g->us > 0 && g->us + z * g->noise_us > practical_us;
}

std::vector<int> Contenders(const std::vector<Comparison>& trials,
                            int incumbent, double z, double practical_us,
                            int most) {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(trials.size()); ++i) {
    if (i != incumbent && Contends(trials[i], trials[incumbent], incumbent == 0,
                                   z, practical_us)) {
      out.push_back(i);
    }
  }
  if (static_cast<int>(out.size()) > most) {
    std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
      return trials[a].delta_us < trials[b].delta_us;
    });
    out.resize(std::max(most, 0));
    std::sort(out.begin(), out.end());
  }
  return out;
}

bool Reaches(const Comparison& screened, const Comparison& best, double z,
             double practical_us) {
  if (!screened.refused.empty()) return false;
  if (!screened.noise_us || !best.noise_us) return true;
  const double noise = std::hypot(*screened.noise_us, *best.noise_us);
  return screened.delta_us - z * noise <= best.delta_us + practical_us;
}

Comparison Pooled(const std::vector<Comparison>& figures) {
  Comparison out;
  out.tunables = figures.front().tunables;
  std::vector<double> deltas;
  std::vector<double> noises;
  double sum = 0;
  double squares = 0;
  bool known = true;
  for (const Comparison& f : figures) {
    deltas.push_back(f.delta_us);
    sum += f.delta_us;
    if (f.noise_us) {
      noises.push_back(*f.noise_us);
      squares += *f.noise_us * *f.noise_us;
    } else {
      known = false;
    }
    if (out.refused.empty()) out.refused = f.refused;
  }
  const double n = static_cast<double>(figures.size());
  if (static_cast<int>(figures.size()) < kSpreadBatches) {
    out.delta_us = sum / n;
    if (known) out.noise_us = std::sqrt(squares) / n;
    return out;
  }
  out.delta_us = Median(deltas);
  if (!known) return out;
  const double typical = Median(noises) / std::sqrt(n);
  out.noise_us = std::max(MedianStandardError(deltas).value_or(0), typical);
  return out;
}

Evidence Weigh(const Comparison& against_incumbent, double z,
               double practical_us) {
  const Comparison& c = against_incumbent;
  if (!c.refused.empty() || !c.noise_us) return Evidence::kFallsShort;
  const double gain = -c.delta_us;
  if (gain - z * *c.noise_us > practical_us) return Evidence::kClears;
  if (gain + z * *c.noise_us <= practical_us) return Evidence::kFallsShort;
  return Evidence::kOpen;
}

double PracticalFor(const Confirmation& c, int held, double incumbent_us,
                    double min_gain) {
  return min_gain *
         std::max(0.0, incumbent_us + c.against_incumbent[held].delta_us);
}

double MostAnotherGains(const Confirmation& c, const std::vector<int>& winners,
                        int held, double z) {
  double most = -std::numeric_limits<double>::infinity();
  for (int q : winners) {
    if (q == held) continue;
    const Comparison& f = c.versus[q][held];
    if (!f.refused.empty() || !f.noise_us) {
      return std::numeric_limits<double>::infinity();
    }
    most = std::max(most, -f.delta_us + z * *f.noise_us);
  }
  return most;
}

namespace {

// The challengers of `c` whose gain against the incumbent clears the
// practical margin (Weigh's kClears), in order.
std::vector<int> Winners(const Confirmation& c, double incumbent_us,
                         double min_gain, double z) {
  const double practical = min_gain * std::max(0.0, incumbent_us);
  std::vector<int> winners;
  for (int i = 0; i < static_cast<int>(c.against_incumbent.size()); ++i) {
    if (Weigh(c.against_incumbent[i], z, practical) == Evidence::kClears) {
      winners.push_back(i);
    }
  }
  return winners;
}

}  // namespace

int PickConfirmed(const Confirmation& c, const TunableValues& incumbent,
                  double incumbent_us, double min_gain, double z) {
  const std::vector<int> winners = Winners(c, incumbent_us, min_gain, z);
  int pick = -1;
  int fewest = 0;
  bool settled = false;
  double least = std::numeric_limits<double>::infinity();
  for (int w : winners) {
    const double most = MostAnotherGains(c, winners, w, z);
    const bool is_settled = most <= PracticalFor(c, w, incumbent_us, min_gain);
    const int changed =
        ChangedTunables(c.against_incumbent[w].tunables, incumbent);
    bool better;
    if (pick < 0 || is_settled != settled) {
      better = pick < 0 || is_settled;
    } else if (settled) {
      better = changed < fewest;
    } else {
      better = most < least;
    }
    if (better) {
      pick = w;
      fewest = changed;
      settled = is_settled;
      least = most;
    }
  }
  return pick;
}

namespace {

// Which challengers of `c` PickConfirmed could no longer take, whatever
// more batches show of them: a winner that is settled now comes before
// them (fewer ChangedTunables from `incumbent`, then the first).
std::vector<bool> Outranked(const Confirmation& c,
                            const TunableValues& incumbent, double incumbent_us,
                            double min_gain, double z) {
  const int n = static_cast<int>(c.against_incumbent.size());
  const std::vector<int> winners = Winners(c, incumbent_us, min_gain, z);
  std::vector<int> changed(n);
  for (int i = 0; i < n; ++i) {
    changed[i] = ChangedTunables(c.against_incumbent[i].tunables, incumbent);
  }
  std::vector<bool> out(n, false);
  for (int k : winners) {
    if (MostAnotherGains(c, winners, k, z) >
        PracticalFor(c, k, incumbent_us, min_gain)) {
      continue;
    }
    for (int j = 0; j < n; ++j) {
      if (changed[k] < changed[j] || (changed[k] == changed[j] && k < j)) {
        out[j] = true;
      }
    }
  }
  return out;
}

}  // namespace

bool ConfirmationOpen(const Confirmation& c, const TunableValues& incumbent,
                      double incumbent_us, double min_gain, double z,
                      std::vector<int>& still) {
  const int n = static_cast<int>(c.against_incumbent.size());
  const double practical = min_gain * std::max(0.0, incumbent_us);
  std::vector<bool> open(n, false);
  std::vector<bool> may_win(n, false);
  for (int i = 0; i < n; ++i) {
    const Evidence e = Weigh(c.against_incumbent[i], z, practical);
    open[i] = e == Evidence::kOpen;
    may_win[i] = e != Evidence::kFallsShort;
  }
  // A contender another clears against can no longer be settled.
  std::vector<bool> may_settle = may_win;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j || !may_win[i] || !may_win[j]) continue;
      const double margin = PracticalFor(c, j, incumbent_us, min_gain);
      if (Weigh(c.versus[i][j], z, margin) == Evidence::kClears) {
        may_settle[j] = false;
      }
    }
  }
  // Whether j is settled matters only while j may still be taken.
  const std::vector<bool> outranked =
      Outranked(c, incumbent, incumbent_us, min_gain, z);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j || !may_settle[i] || !may_settle[j] || outranked[j]) continue;
      const double margin = PracticalFor(c, j, incumbent_us, min_gain);
      if (Weigh(c.versus[i][j], z, margin) == Evidence::kOpen) {
        open[i] = true;
        open[j] = true;
      }
    }
  }
  still.clear();
  for (int i = 0; i < n; ++i) {
    if (open[i]) still.push_back(i);
  }
  return !still.empty();
}

std::vector<TunableValues> Line(const std::vector<TunableValues>& found,
                                const TunableValues& through,
                                const std::string& name) {
  // Per distinct value of `name`, in first-seen order: the settings that
  // move the fewest other tunables so far, and how many they move.
  struct Best {
    const v1::Value* value;
    std::vector<const TunableValues*> settings;
    int moved;
  };
  std::vector<Best> best;
  for (const TunableValues& s : found) {
    const v1::Value* value = Find(s, name);
    if (value == nullptr) continue;
    int moved = 0;
    for (const v1::Field& f : s) {
      if (f.name() == name) continue;
      const v1::Value* there = Find(through, f.name());
      if (there == nullptr || !ValuesEqual(*there, f.value())) ++moved;
    }
    auto it = std::find_if(best.begin(), best.end(), [&](const Best& b) {
      return ValuesEqual(*b.value, *value);
    });
    if (it == best.end()) {
      best.push_back(Best{value, {&s}, moved});
    } else if (moved < it->moved) {
      it->settings = {&s};
      it->moved = moved;
    } else if (moved == it->moved) {
      it->settings.push_back(&s);
    }
  }
  std::vector<TunableValues> out;
  for (const Best& b : best) {
    for (const TunableValues* s : b.settings) out.push_back(*s);
  }
  return out;
}

std::vector<v1::Field> NamedDims(
    const v1::Operator& op,
    const std::vector<std::vector<v1::Field>>& covering) {
  std::set<std::string, std::less<>> names;
  for (const std::vector<v1::Field>& entry : covering) {
    for (const v1::Field& f : entry) names.insert(f.name());
  }
  const Family* family = FindFamily(op.class_name());
  std::vector<v1::Field> out;
  for (v1::Field& dim : ShapeDims(op)) {
    const Dim* known = nullptr;
    if (family != nullptr) {
      for (const Dim& d : family->dims) {
        if (d.name == dim.name()) known = &d;
      }
    }
    const bool has_default =
        known != nullptr &&
        known->default_value.kind_case() != v1::Value::KIND_NOT_SET;
    if (names.contains(dim.name()) || !has_default ||
        !ValuesEqual(dim.value(), known->default_value)) {
      out.push_back(std::move(dim));
    }
  }
  return out;
}

}  // namespace irontune
