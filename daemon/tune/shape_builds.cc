#include "daemon/tune/shape_builds.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/base/sha256.h"
#include "daemon/base/stats.h"
#include "daemon/store/cache.h"
#include "daemon/tune/cost_model.h"
#include "daemon/tune/measure.h"
#include "daemon/tune/ranking.h"
#include "daemon/tune/verdicts.h"

namespace irontune {

bool MayBeBounded(const Shape& shape, const Platform& platform,
                  const KernelCycles& cycles) {
  return !cycles.empty() && platform.core_mhz > 0 && shape.class_name == "GEMM";
}

namespace {

// FirstTimed of a ranked search (ShapeSearch::FirstRound): the recorded
// setting and the incumbent, and unless the cache knows some other
// setting's figure (a search replayed), the first round the cost model
// picks from what the context's CostKnowledge holds now.
std::vector<bool> RankedFirst(const std::vector<TunableValues>& all,
                              const std::vector<bool>& fits,
                              const std::vector<bool>& known,
                              const ShapeTask& task) {
  std::vector<bool> out(all.size(), false);
  out[0] = true;
  std::vector<int> index;  // into all, of the settings that fit
  std::vector<CostFeatures> features;
  std::vector<int> besides;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!fits[i] && i != 0) continue;
    const bool incumbent =
        task.incumbent != nullptr && SettingsEqual(all[i], *task.incumbent);
    if (incumbent) {
      out[i] = true;
      besides.push_back(static_cast<int>(index.size()));
    }
    if (i != 0 && known[i] && !incumbent) return out;  // replayed
    index.push_back(static_cast<int>(i));
    features.push_back(FeaturesOf(task.shape.dims, all[i]));
  }
  CostKnowledge* costs = task.context.costs();
  Ranking ranking(std::move(features),
                  costs == nullptr
                      ? std::vector<CostSample>()
                      : costs->SamplesOf(task.shape.class_name, task.shape.key),
                  task.options.min_gain);
  ranking.Dropped(0);
  absl::StatusOr<std::vector<int>> first = ranking.Next(kRankBatch, besides);
  if (!first.ok()) return out;  // a forecast: the search will say why
  for (int k : *first) out[index[k]] = true;
  return out;
}

// Which of `all` (ShapeSettings: the recorded setting first) a search
// times first, before any figure can steer it, where it searches those
// that `fits` (the recorded one always): all of those where there are at
// most options.exhaustive and no kernel bound may leave some untimed; else
// the recorded one and, for a coordinate descent, its first Line (the
// first tunable's, through `incumbent` where it is among them, else
// through the recorded setting). Where `fits` holds settings the builder
// refuses, the search's own lists are shorter: then this is a forecast.
std::vector<bool> FirstTimed(const std::vector<TunableValues>& all,
                             const std::vector<bool>& fits,
                             const std::vector<bool>& known,
                             const ShapeTask& task) {
  const TunableValues* incumbent = task.incumbent;
  std::vector<bool> out(all.size(), false);
  if (all.empty()) return out;
  std::vector<TunableValues> found = {all[0]};
  for (size_t i = 1; i < all.size(); ++i) {
    if (fits[i]) found.push_back(all[i]);
  }
  out[0] = true;
  if (task.options.rank && found.size() > kRankBatch + 2) {
    return RankedFirst(all, fits, known, task);
  }
  if (static_cast<int>(found.size()) <= task.options.exhaustive) {
    if (MayBeBounded(task.shape, task.platform, task.cycles)) return out;
    for (size_t i = 1; i < all.size(); ++i) out[i] = fits[i];
    return out;
  }
  if (found[0].empty()) return out;
  const auto index_of = [&all](const TunableValues& s) {
    return std::find_if(
               all.begin(), all.end(),
               [&s](const TunableValues& f) { return SettingsEqual(f, s); }) -
           all.begin();
  };
  TunableValues through = found[0];
  if (incumbent != nullptr) {
    const auto i = index_of(*incumbent);
    if (i < std::ssize(all) && (i == 0 || fits[i])) through = *incumbent;
  }
  for (const TunableValues& s : Line(found, through, found[0][0].name())) {
    const auto i = index_of(s);
    if (i < std::ssize(all)) out[i] = true;
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<bool>> KnownBuilt(
    const std::vector<BuildRequest>& one_step, const std::string& environment,
    Cache* cache) {
  std::vector<bool> out(one_step.size(), false);
  if (cache == nullptr || one_step.empty()) return out;
  std::vector<VerdictKey> ids;
  for (const BuildRequest& r : one_step) {
    ids.push_back(BuiltIdentityKey(r, environment));
  }
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> kept,
                   cache->GetVerdicts(ids));
  for (size_t k = 0; k < kept.size(); ++k) out[k] = kept[k].has_value();
  return out;
}

namespace {

// Which of `settings` settings fit every member: `ops` holds each
// member's design at each setting, setting[k] being ops[k]'s. Where the
// context's builder checks fits without a build they are checked now
// (Refusals: kept in the cache, so the search does not ask again); else
// all are taken to fit (Refusals will build each one to learn).
absl::StatusOr<std::vector<bool>> FitsNow(const std::vector<v1::Operator>& ops,
                                          const std::vector<size_t>& setting,
                                          size_t settings,
                                          const Platform& platform,
                                          v1::Packaging packaging,
                                          TuneContext& context) {
  std::vector<bool> fits(settings, true);
  if (!context.builder().ChecksFit()) return fits;
  ASSIGN_OR_RETURN(
      std::vector<std::string> why,
      Refusals(ops, platform, packaging, context.builder(), context.cache(),
               [&context] { return context.cancelled(); }));
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!why[k].empty()) fits[setting[k]] = false;
  }
  return fits;
}

}  // namespace

absl::StatusOr<std::vector<TunableValues>> ShapeSettings(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const SearchSpace& space,
    const std::function<void(const std::string&)>& log) {
  auto op_of = [&calls](const ShapeMember& m) -> const v1::Operator& {
    return calls.operators(static_cast<int>(m.op));
  };
  if (shape.members.empty()) return std::vector<TunableValues>();
  ASSIGN_OR_RETURN(
      std::vector<TunableValues> found,
      Settings(op_of(shape.members[0]), platform, shape.pinned, space, log));
  for (size_t m = 1; m < shape.members.size(); ++m) {
    ASSIGN_OR_RETURN(
        std::vector<TunableValues> others,
        Settings(op_of(shape.members[m]), platform, shape.pinned, space, log));
    std::vector<TunableValues> shared = {found[0]};
    for (size_t i = 1; i < found.size(); ++i) {
      if (std::any_of(others.begin(), others.end(),
                      [&](const TunableValues& o) {
                        return SettingsEqual(o, found[i]);
                      })) {
        shared.push_back(std::move(found[i]));
      }
    }
    found = std::move(shared);
  }
  return found;
}

absl::StatusOr<std::vector<bool>> SearchedBefore(
    const std::vector<Shape>& shapes, const v1::Calls& calls,
    const Platform& platform, const AutotuneOptions& options,
    TuneContext& context) {
  std::vector<bool> out(shapes.size(), false);
  Cache* cache = context.cache();
  if (cache == nullptr) return out;
  const v1::Packaging packaging = options.packaging;
  const std::string environment = context.builder().Environment();
  // The first member's recorded design: the shape's own (WithSetting of
  // its recorded setting is the operator as it is).
  std::vector<BuildRequest> recorded;
  std::vector<size_t> shape_of;
  for (size_t s = 0; s < shapes.size(); ++s) {
    if (shapes[s].members.empty()) continue;
    const v1::Operator& op =
        calls.operators(static_cast<int>(shapes[s].members[0].op));
    recorded.push_back(MeasureRequest(op, op, platform, 1, packaging));
    shape_of.push_back(s);
  }
  ASSIGN_OR_RETURN(const std::vector<bool> built,
                   KnownBuilt(recorded, environment, cache));
  for (size_t k = 0; k < built.size(); ++k) out[shape_of[k]] = built[k];
  return out;
}

namespace {

// Every member of a shape at every setting found (setting by setting), with
// its recorded design (at found[0]) and the setting's index.
struct MemberDesigns {
  std::vector<v1::Operator> ops, recorded;
  std::vector<size_t> setting;
};

MemberDesigns AtEverySetting(const Shape& shape, const v1::Calls& calls,
                             const std::vector<TunableValues>& found) {
  MemberDesigns out;
  for (size_t i = 0; i < found.size(); ++i) {
    for (const ShapeMember& m : shape.members) {
      const v1::Operator& op = calls.operators(static_cast<int>(m.op));
      out.ops.push_back(WithSetting(op, found[i]));
      out.recorded.push_back(WithSetting(op, found[0]));
      out.setting.push_back(i);
    }
  }
  return out;
}

// MeasureRequest of each of `ops` (against recorded[k]) at `steps`.
std::vector<BuildRequest> Requests(const std::vector<v1::Operator>& ops,
                                   const std::vector<v1::Operator>& recorded,
                                   const Platform& platform, int steps,
                                   v1::Packaging packaging) {
  std::vector<BuildRequest> out;
  for (size_t k = 0; k < ops.size(); ++k) {
    out.push_back(
        MeasureRequest(ops[k], recorded[k], platform, steps, packaging));
  }
  return out;
}

// Of `settings` settings, those whose first member's 1-step design the
// cache knows as built (`built[k]` of the design of setting[k]): their
// figures are found without a build.
std::vector<bool> FirstMemberBuilt(const std::vector<bool>& built,
                                   const std::vector<size_t>& setting,
                                   const Shape& shape, size_t settings) {
  std::vector<bool> out(settings, false);
  for (size_t k = 0; k < built.size(); k += shape.members.size()) {
    out[setting[k]] = built[k];
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<BuildRequest>> ShapeBuilds(
    const ShapeTask& task, std::vector<BuildRequest>* rest) {
  const auto& [shape, calls, platform, options, cycles, context, stats, index,
               incumbent] = task;
  ASSIGN_OR_RETURN(std::vector<TunableValues> found,
                   ShapeSettings(shape, calls, platform, options.space));
  if (found.empty()) return std::vector<BuildRequest>();
  const v1::Packaging packaging = options.packaging;
  const std::string environment = context.builder().Environment();
  const auto [ops, recorded, setting] = AtEverySetting(shape, calls, found);
  ASSIGN_OR_RETURN(
      std::vector<std::optional<std::string>> verdicts,
      KeptRefusals(ops, platform, packaging, environment, context.cache()));
  for (size_t k = 0; k < ops.size() && setting[k] == 0; ++k) {
    // The recorded setting refused: the search builds nothing.
    if (verdicts[k] && !verdicts[k]->empty())
      return std::vector<BuildRequest>();
  }
  // Where fits are known without a build only the settings that fit are
  // listed; otherwise Refusals builds every 1-step design.
  const bool checks_fit = context.builder().ChecksFit();
  ASSIGN_OR_RETURN(
      const std::vector<bool> fits,
      FitsNow(ops, setting, found.size(), platform, packaging, context));
  if (!fits[0]) return std::vector<BuildRequest>();
  std::vector<BuildRequest> one_step =
      Requests(ops, recorded, platform, 1, packaging);
  ASSIGN_OR_RETURN(const std::vector<bool> built,
                   KnownBuilt(one_step, environment, context.cache()));
  const bool ranked = options.rank && found.size() > kRankBatch + 2;
  const std::vector<bool> timed = FirstTimed(
      found, fits, FirstMemberBuilt(built, setting, shape, found.size()), task);
  // Each setting timed first's 1-step design with its many-step one behind
  // (as Measure waits for them); then the 1-step ones only Refusals builds.
  std::vector<BuildRequest> first, refusals;
  for (size_t k = 0; k < ops.size(); ++k) {
    // Known to the cache: built (its figure is found without a build), or
    // refused; without fit checks, a kept verdict was a build's.
    const bool known = built[k] || (!checks_fit && verdicts[k]);
    if (known || !fits[setting[k]]) continue;
    if (timed[setting[k]]) {
      first.push_back(std::move(one_step[k]));
    } else if (!checks_fit && !ranked) {
      // A ranked search learns refusals as it builds.
      refusals.push_back(std::move(one_step[k]));
    }
    if (found.size() > 1 && timed[setting[k]]) {
      first.push_back(MeasureRequest(ops[k], recorded[k], platform,
                                     options.repeats, packaging));
    } else if (rest != nullptr && found.size() > 1 && !ranked) {
      // A ranked search's later rounds follow its figures: no guess.
      // Without fit checks its 1-step design is listed above.
      if (checks_fit) rest->push_back(std::move(one_step[k]));
      rest->push_back(MeasureRequest(ops[k], recorded[k], platform,
                                     options.repeats, packaging));
    }
  }
  first.insert(first.end(), refusals.begin(), refusals.end());
  return first;
}

}  // namespace irontune
