// JobContext: one running job's view of the device worker, the TuneContext
// the method runs against. It meters the device for the job's statistics,
// keeps the job's seeded inputs, turns progress into the job's events
// (log lines, shape progress with the job's device-time estimate and an
// ETA, trials) and reads cancellation
// from the job. It also stops the job (Job::Cancel) at its bounds
// (Job::Bounds): past the client's deadline (DeadlineExceeded) or once its
// device time passes its limit (ResourceExhausted). The method looks at
// cancelled() between rounds and between a round's images, so a job stops
// within one round of either.
//
// Shapes searched at once (AutotuneRun's lanes) each name their trials by
// their index; the progress counts (settings timed, the best so far) are
// the shape begun last's.
//
// Held events: a context made with Events::kHeld keeps the job's events
// and shape counts to itself until Release() gives them to the job (a
// cached answer's attempt, cached_answers.h, whose events are the job's
// only once it is answered).
//
// Threads: the device worker's, or a thread holding the Autotune's turn
// in its stead (tune/device_turn.h): one at a time. Ownership: the job is
// shared; the device, builder and cache are borrowed from the worker and must
// outlive the context.
#ifndef IRONTUNE_DAEMON_SCHEDULER_JOB_CONTEXT_H_
#define IRONTUNE_DAEMON_SCHEDULER_JOB_CONTEXT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "daemon/npu/metered.h"
#include "daemon/scheduler/cache_writes.h"
#include "daemon/scheduler/jobs.h"
#include "daemon/tune/tune_context.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// Progress events: one as each shape begins, and within a shape at most
// one per kProgressEvery (each batch of trials still has its trial event).
inline constexpr absl::Duration kProgressEvery = absl::Milliseconds(100);

class JobContext : public TuneContext {
 public:
  enum class Events { kLive, kHeld };
  // `writes` (may be null; borrowed): where the device worker says which
  // shapes' rows it may be rewriting (OnShape exposes the shape begun
  // until the job ends; cache_writes.h).
  JobContext(JobPtr job, Device& device, Builder& builder, Cache* cache,
             Events events = Events::kLive, CacheWrites* writes = nullptr);

  Device& device() override { return meter_; }
  Builder& builder() override { return builder_; }
  Cache* cache() override { return cache_; }
  InputCache& inputs() override { return inputs_; }
  CostKnowledge* costs() override { return costs_; }
  // `costs` (may be null) must outlive the context.
  void set_costs(CostKnowledge* costs) { costs_ = costs; }
  bool cancelled() override;
  void Sleep(absl::Duration d) override { job_->WaitCancelled(d); }
  void Log(const std::string& line) override;
  void OnShape(int index, int total, const std::string& key) override;
  void OnTrial(int index, const Comparison& trial) override;
  // One trial event for the batch.
  void OnTrials(int index, const std::vector<Comparison>& trials) override;
  // The progress's best is the search's Pick(), the rule it decides by.
  void OnPick(int index, const Comparison* pick) override;
  // Keeps the estimate for the progress events; once every shape is done,
  // emits a last progress event (remaining 0).
  void OnEstimate(const JobEstimate& estimate) override;

  // Appends an event to the job's log (held, with Events::kHeld).
  void Emit(v1::AutotuneEvent event);
  // Counts for the job's summary and the end-of-job log line.
  void SetShapes(uint32_t done, uint32_t total);
  // With Events::kHeld: gives the events and the shape counts held so far
  // to the job, in order, and lets those that follow through.
  void Release();
  uint32_t shapes_total() const { return shapes_total_; }

  // Device time the job's runs took so far, and wall time since it began.
  double device_seconds() const { return meter_.device_us() / 1e6; }
  double wall_seconds() const;

 private:
  v1::AutotuneEvent Progress() const;

  JobPtr job_;
  CacheWrites* const writes_;
  bool held_;
  std::vector<v1::AutotuneEvent> held_events_;
  std::optional<std::pair<uint32_t, uint32_t>> held_shapes_;
  MeteredDevice meter_;
  Builder& builder_;
  Cache* cache_;
  CostKnowledge* costs_ = nullptr;
  InputCache inputs_;
  const absl::Time start_;
  uint32_t shapes_total_ = 0;
  // The key of each shape begun, by index: trials name their shape by it.
  std::map<int, std::string> keys_;
  // The shape begun last: its key, index, settings timed and best gain.
  std::string shape_;
  int index_ = 0;
  int total_ = 0;
  uint32_t timed_ = 0;
  std::optional<Comparison> best_;
  absl::Time last_progress_ = absl::InfinitePast();
  // The last estimate, and the device seconds when it was made.
  std::optional<JobEstimate> estimate_;
  double estimate_at_ = 0;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_JOB_CONTEXT_H_
