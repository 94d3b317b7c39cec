#include "daemon/tune/shape_choice.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/defaults.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/base/sha256.h"
#include "daemon/base/stats.h"
#include "daemon/store/cache.h"

namespace irontune {

double PracticalUs(const AutotuneOptions& options,
                   std::optional<double> recorded_us,
                   const ShapeTrial& incumbent) {
  // The recorded setting's own trial has delta 0.
  return options.min_gain *
         std::max(0.0, recorded_us.value_or(0) + incumbent.trial.delta_us);
}

ShapeChoice::ShapeChoice(const ShapeTask& task, TuneStats& stats,
                         Searched searched, ConfirmTimer timer, IdentityOf id)
    : task_(task),
      options_(task.options),
      stats_(stats),
      searched_(std::move(searched)),
      timer_(std::move(timer)),
      id_(std::move(id)) {}

absl::Status ShapeChoice::Choose(ShapeResult& out) {
  std::vector<Comparison> screened;
  for (const ShapeTrial& t : out.trials) screened.push_back(t.trial);
  const ShapeTrial& incumbent = out.trials[out.incumbent];
  const double practical =
      PracticalUs(options_, searched_.recorded_us, incumbent);
  const int screen_pick = Pick(screened, out.incumbent, kGainZ, practical);
  const std::vector<int> contenders =
      searched_.nominated ? NominatedOf(out)
                          : ContendersOf(out, screened, screen_pick, practical);
  if (contenders.empty()) return absl::OkStatus();
  stats_.confirmations += static_cast<int64_t>(contenders.size());
  const double incumbent_us = std::max(
      0.0, searched_.recorded_us.value_or(0) + incumbent.trial.delta_us);
  ASSIGN_OR_RETURN(Confirmed confirmed, Confirm(out, contenders, incumbent_us));
  // A confirmation that ended open is decided on its point estimates
  // (z 0) against the practical margin where no profile entry decided
  // the incumbent; an incumbent an entry gives keeps an open call (the
  // noises stay in), so a re-tune of a tuned profile moves only on a
  // gain that clears. Without a practical margin the noises stay in.
  const bool estimate =
      confirmed.open && options_.min_gain > 0 && task_.incumbent == nullptr;
  const double z = estimate ? 0.0 : kGainZ;
  const int pick = PickConfirmed(confirmed.figures, incumbent.trial.tunables,
                                 incumbent_us, options_.min_gain, z);
  if (pick < 0) {
    if (screen_pick != out.incumbent) out.unconfirmed = screen_pick;
    task_.context.Log(absl::StrFormat("    the incumbent %s stays",
                                      SettingText(incumbent.trial.tunables)));
    task_.context.OnPick(task_.index, nullptr);
    return absl::OkStatus();
  }
  ++stats_.confirmed;
  out.best = contenders[pick];
  out.against_incumbent = std::move(confirmed.trials[pick]);
  task_.context.OnPick(task_.index, &out.trials[out.best].trial);
  return absl::OkStatus();
}

std::vector<int> ShapeChoice::NominatedOf(const ShapeResult& out) const {
  std::vector<int> out_indices;
  for (size_t i = 0; i < out.trials.size(); ++i) {
    const Comparison& t = out.trials[i].trial;
    if (static_cast<int>(i) != out.incumbent && t.refused.empty() &&
        absl::c_linear_search(*searched_.nominated, id_(t.tunables))) {
      out_indices.push_back(static_cast<int>(i));
    }
  }
  return out_indices;
}

int MostContenders(const Platform& platform, bool incumbent_apart) {
  const int room =
      std::max(1, platform.hw_contexts / 2 - 1) - (incumbent_apart ? 1 : 0);
  return std::max(1, std::min(room, kMostContenders));
}

std::vector<int> ShapeChoice::ContendersOf(
    const ShapeResult& out, const std::vector<Comparison>& screened,
    int screen_pick, double practical) const {
  const int most = MostContenders(task_.platform, out.incumbent != 0);
  std::vector<int> contenders =
      Contenders(screened, out.incumbent, kGainZ, practical, most);
  if (screen_pick == out.incumbent ||
      absl::c_linear_search(contenders, screen_pick)) {
    return contenders;
  }
  std::stable_sort(contenders.begin(), contenders.end(), [&](int a, int b) {
    return screened[a].delta_us < screened[b].delta_us;
  });
  if (static_cast<int>(contenders.size()) >= most) {
    contenders.resize(most - 1);
  }
  contenders.push_back(screen_pick);
  std::sort(contenders.begin(), contenders.end());
  return contenders;
}

absl::StatusOr<ShapeChoice::Confirmed> ShapeChoice::Confirm(
    const ShapeResult& out, const std::vector<int>& contenders,
    double incumbent_us) {
  const size_t n = contenders.size();
  std::vector<std::vector<ShapeTrial>> figures(n);
  std::vector<std::vector<std::vector<Comparison>>> pairs(
      n, std::vector<std::vector<Comparison>>(n));
  Confirmed done{std::vector<ShapeTrial>(n), {}};
  std::vector<int> open(n);
  for (size_t c = 0; c < n; ++c) open[c] = static_cast<int>(c);
  const int64_t before = stats_.device_timed;
  int batches = 0;
  for (; batches < kMostConfirmBatches && !open.empty(); ++batches) {
    RETURN_IF_ERROR(
        ConfirmBatch(out, contenders, open, batches, figures, pairs));
    done = PooledConfirmation(figures, pairs);
    // Nothing is decided on fewer batches than show their spread.
    if (batches + 1 < kSpreadBatches) continue;
    ConfirmationOpen(done.figures, out.trials[out.incumbent].trial.tunables,
                     incumbent_us, options_.min_gain, kGainZ, open);
  }
  stats_.confirm_batches += batches;
  done.open = !open.empty();
  stats_.confirm_timed += stats_.device_timed - before;
  for (size_t c = 0; c < n; ++c) {
    task_.context.Log(absl::StrFormat(
        "    confirming %s against %s: %+.2f ± %.2f us over %d batches",
        SettingText(done.trials[c].trial.tunables),
        out.incumbent == 0
            ? "the recorded setting"
            : SettingText(out.trials[out.incumbent].trial.tunables),
        done.trials[c].trial.delta_us,
        done.trials[c].trial.noise_us.value_or(0),
        static_cast<int>(figures[c].size())));
  }
  return done;
}

absl::Status ShapeChoice::ConfirmBatch(
    const ShapeResult& out, const std::vector<int>& contenders,
    const std::vector<int>& open, int batch,
    std::vector<std::vector<ShapeTrial>>& figures,
    std::vector<std::vector<std::vector<Comparison>>>& pairs) {
  std::vector<TunableValues> todo = {searched_.recorded};
  if (out.incumbent != 0) {
    todo.push_back(out.trials[out.incumbent].trial.tunables);
  }
  const int base = static_cast<int>(todo.size()) - 1;
  std::vector<int> bases = {base};
  for (int c : open) {
    todo.push_back(out.trials[contenders[c]].trial.tunables);
    bases.push_back(static_cast<int>(todo.size()) - 1);
  }
  const ResolvedTiming timing = options_.timing.WithCalls(
      std::max<uint32_t>(2, options_.timing.calls() / kConfirmCallShare));
  ASSIGN_OR_RETURN(
      std::vector<TimedBatch> timed,
      timer_(todo, bases, ConfirmTag(todo, batch, timing), timing));
  for (size_t k = 0; k < open.size(); ++k) {
    figures[open[k]].push_back(timed[0].trials[bases[k + 1]]);
    for (size_t l = 0; l < open.size(); ++l) {
      if (l == k) continue;
      pairs[open[k]][open[l]].push_back(
          timed[l + 1].trials[bases[k + 1]].trial);
    }
  }
  return absl::OkStatus();
}

std::string ShapeChoice::ConfirmTag(const std::vector<TunableValues>& todo,
                                    int batch,
                                    const ResolvedTiming& timing) const {
  std::string text = absl::StrCat("confirm/", batch);
  if (timing.calls() != options_.timing.calls()) {
    absl::StrAppend(&text, "/calls ", timing.calls());
  }
  for (const TunableValues& s : todo) absl::StrAppend(&text, "/", id_(s));
  return Sha256Hex(text).substr(0, 32);
}

ShapeChoice::Confirmed ShapeChoice::PooledConfirmation(
    const std::vector<std::vector<ShapeTrial>>& figures,
    const std::vector<std::vector<std::vector<Comparison>>>& pairs) {
  const size_t n = figures.size();
  Confirmed done;
  done.figures.versus.assign(n, std::vector<Comparison>(n));
  for (size_t i = 0; i < n; ++i) {
    done.trials.push_back(PooledTrial(figures[i]));
    done.figures.against_incumbent.push_back(done.trials.back().trial);
    for (size_t j = 0; j < n; ++j) {
      if (!pairs[i][j].empty()) {
        done.figures.versus[i][j] = Pooled(pairs[i][j]);
      }
    }
  }
  return done;
}

ShapeTrial ShapeChoice::PooledTrial(const std::vector<ShapeTrial>& figures) {
  ShapeTrial out = figures.front();
  std::vector<Comparison> whole;
  for (const ShapeTrial& f : figures) whole.push_back(f.trial);
  out.trial = Pooled(whole);
  for (size_t m = 0; m < out.member_delta_us.size(); ++m) {
    std::vector<Comparison> member;
    for (const ShapeTrial& f : figures) {
      Comparison one;
      one.delta_us = f.member_delta_us[m];
      one.noise_us = f.member_noise_us[m];
      member.push_back(one);
    }
    const Comparison p = Pooled(member);
    out.member_delta_us[m] = p.delta_us;
    out.member_noise_us[m] = p.noise_us;
  }
  return out;
}

}  // namespace irontune
