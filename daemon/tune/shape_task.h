// One shape's search as a value: what it is given (ShapeTask) and what it
// gives back (ShapeResult, a ShapeTrial per setting). TimeShape
// (shape_search.h), TimeShapeKept and ShapeMemoKey (shape_memo.h) and
// ShapeBuilds (shape_builds.h) take a ShapeTask.
#ifndef IRONTUNE_DAEMON_TUNE_SHAPE_TASK_H_
#define IRONTUNE_DAEMON_TUNE_SHAPE_TASK_H_

#include <optional>
#include <string>
#include <vector>

#include "daemon/npu/device.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/search.h"
#include "daemon/tune/settings.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/tune_context.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// The search of one shape: the shape, where it comes from and what it is
// searched with. Ownership: borrows everything it names, which must
// outlive every call it is given to (a ShapeTask made in a call's
// argument list lives as long as the call). Threads: the context's.
struct ShapeTask {
  const Shape& shape;
  // The recording whose operators the shape's members index
  // (ShapeMember::op).
  const v1::Calls& calls;
  const Platform& platform;
  const AutotuneOptions& options;
  const KernelCycles& cycles;
  TuneContext& context;
  // Added to by the search; may be null.
  TuneStats* stats = nullptr;
  // The context hears the search's trials under it.
  int index = 0;
  // The setting the submitted profile's entries covering the shape run;
  // null where no entry covers it (the recorded setting runs).
  const TunableValues* incumbent = nullptr;

  // This task told to `other` and adding to `other_stats` (may be null).
  ShapeTask For(TuneContext& other, TuneStats* other_stats) const {
    return ShapeTask{shape, calls,       platform, options,  cycles,
                     other, other_stats, index,    incumbent};
  }
};

// One setting's comparison, with each member's share (per step, weighted
// over its points) so the model-level gain can weight members by their
// steps.
struct ShapeTrial {
  Comparison trial;
  std::vector<double> member_delta_us;
  std::vector<std::optional<double>> member_noise_us;
};

struct ShapeResult {
  std::string key;
  std::vector<ShapeTrial> trials;  // the recorded setting first
  int best = 0;                    // index of the setting taken
  // Index of the incumbent: the setting the submitted profile runs, else
  // (not given, not among the settings, or not admitted) the recorded one.
  int incumbent = 0;
  // The setting taken against the incumbent: where a challenger was taken,
  // its confirmation (an independent re-measurement of the two, paired);
  // else 0 with noise 0.
  ShapeTrial against_incumbent;
  // A challenger that Pick chose but that did not win again; -1 if none.
  int unconfirmed = -1;
  // The recorded setting's step time (summed over members, weighted over
  // points): the median of its batches' figures, and the standard error of
  // one batch's figure: the larger of the batches' own noises (root mean
  // square; each with its drift floor) and their spread (BatchNoise);
  // nullopt where a batch's noise is unknown (one round).
  double recorded_us = 0;
  std::optional<double> recorded_noise_us;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_SHAPE_TASK_H_
