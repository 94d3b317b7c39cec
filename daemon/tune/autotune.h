// Autotune: choosing each operator shape's tunables by timing them on the
// NPU, written as a profile (IRON's autotune module, in C++).
//
//   Shapes(calls)       (shapes.h) the operator shapes with a tunable to
//                       search, each operator design once
//   TimeShape(shape)    (time_shape.h) the search of one shape
//   TunedProfile        (tuned_profile.h) the profile entries and the diff
//   verdicts.h          the builder's and the judge's verdicts, cached
//
// AutotuneRun is an Autotune advanced one shape at a time, so whoever runs
// it (irontuned's device worker) decides between shapes what runs next.
// Autotune() runs one to its end.
//
// Threads: the context's (the thread that owns the Device and the
// Builder). Failure: device, builder and cache errors come back as the
// Status they were; cancellation is Cancelled. A setting the builder
// refuses or whose output is not admitted is a refused Comparison, not an
// error.
#ifndef IRONTUNE_DAEMON_TUNE_AUTOTUNE_H_
#define IRONTUNE_DAEMON_TUNE_AUTOTUNE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/profile.h"
#include "daemon/npu/device.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/time_shape.h"
#include "daemon/tune/tune_context.h"
#include "daemon/tune/tuned_profile.h"
#include "irontune/v1/profile.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

struct TuneResult {
  Profile profile;
  v1::ProfileDiff diff;
  std::vector<ShapeResult> shapes;  // in Shapes() order
  TuneStats stats;
};

class AutotuneRun {
 public:
  // Plans an Autotune of `calls` under `profile`: the platform, the
  // packaging, the kernel cycles (options.cycles_path) and the shapes.
  // `calls`, `profile`, `options` and `context` are borrowed and must
  // outlive the run. Errors: the device's platform, Shapes'.
  // REQUIRES: calls passed ValidateRecording.
  static absl::StatusOr<std::unique_ptr<AutotuneRun>> Start(
      const v1::Calls& calls, const Profile& profile,
      const AutotuneOptions& options, TuneContext& context);

  AutotuneRun(const AutotuneRun&) = delete;
  AutotuneRun& operator=(const AutotuneRun&) = delete;

  int total() const { return static_cast<int>(shapes_.size()); }
  int done() const { return static_cast<int>(results_.size()); }
  bool finished() const { return done() == total(); }
  const TuneStats& stats() const { return stats_; }

  // Searches the next shape (TimeShape), telling the context first.
  // REQUIRES: !finished().
  absl::Status Next();

  // The profile with an entry for each shape naming the setting taken (the
  // recorded one where none gains), and its diff (tuned_profile.h).
  // REQUIRES: finished().
  TuneResult Finish() &&;

 private:
  class Logged;
  AutotuneRun(const v1::Calls& calls, const AutotuneOptions& options,
              TuneContext& context);

  const v1::Calls& calls_;
  const AutotuneOptions& options_;
  std::unique_ptr<TuneContext> logged_;  // the context, lines also logged
  Platform platform_;
  KernelCycles cycles_;
  std::vector<Shape> shapes_;
  std::unique_ptr<TunedProfile> profile_;
  std::vector<ShapeResult> results_;
  TuneStats stats_;
};

// Runs an AutotuneRun from Start to Finish.
absl::StatusOr<TuneResult> Autotune(const v1::Calls& calls,
                                    const Profile& profile,
                                    const AutotuneOptions& options,
                                    TuneContext& context);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_AUTOTUNE_H_
