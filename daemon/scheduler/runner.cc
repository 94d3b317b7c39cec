#include "daemon/scheduler/runner.h"

#include <utility>

#include "common/profile.h"
#include "common/status_macros.h"
#include "daemon/scheduler/replies.h"
#include "daemon/scheduler/requests.h"
#include "daemon/tune/autotune.h"
#include "daemon/tune/measure.h"

namespace irontune {
namespace {

// Keeps its own copies of the request's profile and options; the run keeps
// the operators and the shapes' inputs: the request need only last Start.
class DeviceAutotune : public AutotuneSteps {
 public:
  DeviceAutotune(const v1::AutotuneRequest& request, const Platform& platform,
                 JobContext& context, const std::string& cycles_path,
                 int shapes_at_once)
      : context_(context),
        profile_(request.profile()),
        options_(OptionsOf(request, platform, cycles_path, shapes_at_once)) {}

  absl::Status Start(const v1::AutotuneRequest& request) {
    ASSIGN_OR_RETURN(run_, AutotuneRun::Start(request.calls(), profile_,
                                              options_, context_));
    return absl::OkStatus();
  }

  bool done() const override { return run_->finished(); }
  absl::Status Next() override { return run_->Next(); }

  v1::AutotuneResult Finish() override {
    const TuneResult tuned = std::move(*run_).Finish();
    v1::AutotuneResult result = AutotuneResultOf(
        tuned, context_.device_seconds(), context_.wall_seconds());
    context_.SetShapes(result.stats().shapes(), result.stats().shapes());
    return result;
  }

 private:
  static AutotuneOptions OptionsOf(const v1::AutotuneRequest& request,
                                   const Platform& platform,
                                   const std::string& cycles_path,
                                   int shapes_at_once) {
    AutotuneOptions options = AutotuneOptionsOf(request, platform, cycles_path);
    options.shapes_at_once = shapes_at_once;
    return options;
  }

  JobContext& context_;
  const Profile profile_;
  const AutotuneOptions options_;
  std::unique_ptr<AutotuneRun> run_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<AutotuneSteps>> DeviceJobRunner::StartAutotune(
    const v1::AutotuneRequest& request, JobContext& context) {
  ASSIGN_OR_RETURN(Platform platform, context.device().GetPlatform());
  auto steps = std::make_unique<DeviceAutotune>(request, platform, context,
                                                cycles_path_, shapes_at_once_);
  RETURN_IF_ERROR(steps->Start(request));
  return steps;
}

absl::StatusOr<v1::MeasureResult> DeviceJobRunner::RunMeasure(
    const v1::MeasureRequest& request, JobContext& context) {
  ASSIGN_OR_RETURN(Platform platform, context.device().GetPlatform());
  const MeasurePlan plan = MeasurePlanOf(request, platform);
  context.SetShapes(0, 1);
  ASSIGN_OR_RETURN(MeasureOutcome measured, Measure(plan, context));
  context.SetShapes(1, 1);
  return MeasureResultOf(request, plan, measured);
}

}  // namespace irontune
