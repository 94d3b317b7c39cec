#include "daemon/tune/autotune.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "daemon/tune/settings.h"

namespace irontune {

// The run's context, its progress lines also in irontuned's log.
class AutotuneRun::Logged : public TuneContext {
 public:
  explicit Logged(TuneContext& inner) : inner_(inner) {}
  Device& device() override { return inner_.device(); }
  Builder& builder() override { return inner_.builder(); }
  Cache* cache() override { return inner_.cache(); }
  InputCache& inputs() override { return inner_.inputs(); }
  bool cancelled() override { return inner_.cancelled(); }
  void Sleep(absl::Duration d) override { inner_.Sleep(d); }
  void Log(const std::string& line) override {
    spdlog::info("autotune: {}", line);
    inner_.Log(line);
  }
  void OnShape(int index, int total, const std::string& key) override {
    inner_.OnShape(index, total, key);
  }
  void OnTrial(int index, const Comparison& trial) override {
    inner_.OnTrial(index, trial);
  }
  void OnTrials(int index, const std::vector<Comparison>& trials) override {
    inner_.OnTrials(index, trials);
  }
  void OnPick(int index, const Comparison* pick) override {
    inner_.OnPick(index, pick);
  }

 private:
  TuneContext& inner_;
};

AutotuneRun::AutotuneRun(const v1::Calls& calls, const AutotuneOptions& options,
                         TuneContext& context)
    : calls_(calls),
      options_(options),
      logged_(std::make_unique<Logged>(context)) {}

absl::StatusOr<std::unique_ptr<AutotuneRun>> AutotuneRun::Start(
    const v1::Calls& calls, const Profile& profile,
    const AutotuneOptions& options, TuneContext& context) {
  std::unique_ptr<AutotuneRun> run(new AutotuneRun(calls, options, context));
  ASSIGN_OR_RETURN(run->platform_, context.device().GetPlatform());
  if (!options.cycles_path.empty()) {
    TuneContext& logged = *run->logged_;
    run->cycles_ =
        LoadKernelCycles(options.cycles_path,
                         [&logged](const std::string& l) { logged.Log(l); });
  }
  ASSIGN_OR_RETURN(run->shapes_,
                   Shapes(calls, options.space, run->platform_.generation));
  run->profile_ = std::make_unique<TunedProfile>(calls, profile, run->shapes_);
  return run;
}

absl::Status AutotuneRun::Next() {
  const size_t s = results_.size();
  const Shape& shape = shapes_[s];
  logged_->OnShape(static_cast<int>(s), total(), shape.key);
  logged_->Log(absl::StrCat("[", s + 1, "/", shapes_.size(), "] ", shape.key));
  const TunableValues incumbent = profile_->Incumbent(
      s,
      RecordedSetting(calls_.operators(static_cast<int>(shape.members[0].op))));
  ASSIGN_OR_RETURN(
      ShapeResult timed,
      TimeShape(shape, calls_, platform_, options_, cycles_, *logged_, &stats_,
                static_cast<int>(s), &incumbent));
  if (timed.best != timed.incumbent) {
    const Comparison& gain = timed.against_incumbent.trial;
    logged_->Log(absl::StrFormat(
        "    %s: %+.1f ± %.1f us against the incumbent",
        SettingText(gain.tunables), gain.delta_us, gain.noise_us.value_or(0)));
  }
  profile_->Add(s, timed);
  results_.push_back(std::move(timed));
  return absl::OkStatus();
}

TuneResult AutotuneRun::Finish() && {
  TuneResult result;
  auto [profile, diff] = std::move(*profile_).Finish(results_);
  result.profile = std::move(profile);
  result.diff = std::move(diff);
  result.shapes = std::move(results_);
  result.stats = stats_;
  return result;
}

absl::StatusOr<TuneResult> Autotune(const v1::Calls& calls,
                                    const Profile& profile,
                                    const AutotuneOptions& options,
                                    TuneContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<AutotuneRun> run,
                   AutotuneRun::Start(calls, profile, options, context));
  while (!run->finished()) RETURN_IF_ERROR(run->Next());
  return std::move(*run).Finish();
}

}  // namespace irontune
