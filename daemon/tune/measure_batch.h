// MeasureBatches: the batches of one Measure call. A batch is the default
// and up to contexts / 2 - 1 other settings; each setting's two designs
// are loaded (its many-step design waited for first: MeasureBuilds), its
// inputs given (those of the plan, the rest seeded, made at once on helper
// threads), its 1-step image run once for its output, and the batch timed
// interleaved round by round (TimeInterleaved), so every setting pairs
// with the default. A step's time per round is (many - one) / (repeats -
// 1), so the dispatch cancels. The figures are cached and kept once their
// output digests, made on helper threads while the next batch runs, are
// in (MeasureOutcome::outputs says which outputs are kept).
//
// Ownership: borrows the plan, the builds, the cache, the context and the
// outcome it fills, which outlive it; its helper threads end before it
// does. Threads: the context's; the digests on helper threads.
#ifndef IRONTUNE_DAEMON_TUNE_MEASURE_BATCH_H_
#define IRONTUNE_DAEMON_TUNE_MEASURE_BATCH_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "daemon/tune/measure.h"
#include "daemon/tune/measure_builds.h"
#include "daemon/tune/measure_cache.h"
#include "daemon/tune/tune_context.h"

namespace irontune {

class MeasureBatches {
 public:
  MeasureBatches(const MeasurePlan& plan, MeasureBuilds& builds,
                 MeasureCache& cache, TuneContext& context,
                 MeasureOutcome& outcome);
  ~MeasureBatches();
  MeasureBatches(const MeasureBatches&) = delete;
  MeasureBatches& operator=(const MeasureBatches&) = delete;

  // Times `batch` (indices into plan.settings, the default first); the
  // figures of the batch before it are finished meanwhile (Finish). Errors:
  // a load or run fails (the device's status), the default's many-step
  // design does not build (FailedPrecondition), the cache is for another
  // power mode or the power mode changed during the batch
  // (FailedPrecondition), the NPU stayed held (DeadlineExceeded),
  // cancellation (Cancelled).
  absl::Status Time(const std::vector<int>& batch);

  // Waits for the last batch's digests, then caches and keeps its figures
  // in the outcome. Errors: the cache's.
  absl::Status Finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_MEASURE_BATCH_H_
