#include "daemon/tune/measure_builds.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace irontune {

MeasureBuilds::MeasureBuilds(const MeasurePlan& plan, const Platform& platform,
                             TuneContext& context)
    : plan_(plan),
      platform_(platform),
      context_(context),
      distinct_(MeasureRequest(plan.settings[0], plan.settings[0], platform,
                               plan.repeats, plan.packaging)
                    .distinct),
      ones_(plan.settings.size()) {}

BuildRequest MeasureBuilds::OneStep(int i) const {
  return MeasureRequest(plan_.settings[i], plan_.settings[0], platform_, 1,
                        plan_.packaging);
}

BuildRequest MeasureBuilds::ManySteps(int i) const {
  return MeasureRequest(plan_.settings[i], plan_.settings[0], platform_,
                        plan_.repeats, plan_.packaging);
}

void MeasureBuilds::Prefetch(int i) {
  context_.builder().Prefetch(OneStep(i));
  context_.builder().Prefetch(ManySteps(i));
}

absl::StatusOr<BuildOutcome> MeasureBuilds::Await(const BuildRequest& request,
                                                  int i) {
  absl::StatusOr<BuildOutcome> built = context_.builder().Await(
      request, [this] { return context_.cancelled(); });
  if (!built.ok() && i != 0 && !absl::IsCancelled(built.status())) {
    built = BuildOutcome{std::nullopt, absl::StrCat("the build failed: ",
                                                    built.status().ToString())};
  }
  return built;
}

absl::StatusOr<std::optional<Artifact>> MeasureBuilds::AwaitOneStep(
    int i, std::string* refusal) {
  ASSIGN_OR_RETURN(BuildOutcome outcome, Await(OneStep(i), i));
  if (!outcome.artifact) {
    *refusal = outcome.refusal;
    return std::nullopt;
  }
  ones_[i] = *outcome.artifact;
  return std::move(outcome.artifact);
}

absl::StatusOr<std::optional<Artifact>> MeasureBuilds::AwaitManySteps(
    int i, std::map<int, std::string>& refused) {
  ASSIGN_OR_RETURN(BuildOutcome built, Await(ManySteps(i), i));
  if (built.artifact) return std::move(built.artifact);
  if (i == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the recorded setting's ", plan_.repeats,
                     "-step runlist does not build: ", built.refusal));
  }
  refused[i] = built.refusal;
  return std::nullopt;
}

}  // namespace irontune
