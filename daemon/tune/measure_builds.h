// MeasureBuilds: what one Measure call asks of the builder. Each setting
// of a plan is built twice, as a 1-step and a `repeats`-step runlist
// (MeasureRequest); both are queued (Builder::Prefetch) before any is
// waited for, and waited for with Builder::Await, so cancelling does not
// wait for a build. A setting other than the default whose build fails
// (an error, not a refusal) is refused with the error as its reason.
//
// Ownership: borrows the plan, the platform and the context, which outlive
// it; keeps each setting's 1-step artifact. Threads: the context's.
#ifndef IRONTUNE_DAEMON_TUNE_MEASURE_BUILDS_H_
#define IRONTUNE_DAEMON_TUNE_MEASURE_BUILDS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/tune/measure.h"
#include "daemon/tune/tune_context.h"

namespace irontune {

class MeasureBuilds {
 public:
  // REQUIRES: plan.settings is not empty.
  MeasureBuilds(const MeasurePlan& plan, const Platform& platform,
                TuneContext& context);

  // Setting `i`'s 1-step and `repeats`-step build requests.
  BuildRequest OneStep(int i) const;
  BuildRequest ManySteps(int i) const;
  // Whether the many-step designs have steps of their own buffers
  // (MeasureRequest's distinct).
  bool distinct() const { return distinct_; }

  // Queues setting `i`'s 1-step design with its many-step one behind it.
  void Prefetch(int i);

  // Waits for setting `i`'s 1-step design: its artifact (kept: one(i)), or
  // nullopt with its refusal in `*refusal`. A build error of a setting
  // other than the default is its refusal ("the build failed: ...").
  // Errors: the default's build error; Cancelled.
  absl::StatusOr<std::optional<Artifact>> AwaitOneStep(int i,
                                                       std::string* refusal);

  // Waits for setting `i`'s many-step design; nullopt where it is refused
  // or its build fails (then recorded in `refused`). Errors: the default's
  // refusal (FailedPrecondition) or build error; Cancelled.
  absl::StatusOr<std::optional<Artifact>> AwaitManySteps(
      int i, std::map<int, std::string>& refused);

  // Setting `i`'s 1-step artifact. REQUIRES: AwaitOneStep(i) gave one.
  const Artifact& one(int i) const { return ones_[i]; }

 private:
  // The builder's outcome for `request`, giving up once cancelled; a build
  // error of setting `i` other than the default as a refusal.
  absl::StatusOr<BuildOutcome> Await(const BuildRequest& request, int i);

  const MeasurePlan& plan_;
  const Platform& platform_;
  TuneContext& context_;
  const bool distinct_;
  std::vector<Artifact> ones_;  // each setting's 1-step artifact
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_MEASURE_BUILDS_H_
