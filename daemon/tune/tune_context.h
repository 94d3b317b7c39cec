// TuneContext: everything the method needs from whoever runs it, in one
// small interface: the device parts, cancellation, waiting, and where
// progress goes.
//
// irontuned's job context (daemon/scheduler/job_context.h) implements it over
// the device worker's parts and a job's event log; tests and benchmarks use
// tests/testing/tune_context.h.
//
// Threads: every method is called on the thread that owns the Device and
// the Builder (irontuned's device worker), or on a thread that holds an
// AutotuneRun's turn in its stead (device_turn.h): one at a time, each
// call ordered after the one before. Ownership: the references it
// returns stay valid for the context's life. An implementation must not
// call back into the method (Measure, AutotuneRun) from any of its methods.
#ifndef IRONTUNE_DAEMON_TUNE_TUNE_CONTEXT_H_
#define IRONTUNE_DAEMON_TUNE_TUNE_CONTEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/tune/inputs.h"
#include "daemon/tune/search.h"

namespace irontune {

class Cache;
class CostKnowledge;

// A running job's device time: planned, used and still to spend
// (daemon/tune/plan.h).
struct JobEstimate {
  int done = 0;                // shapes finished (tuned or left untuned)
  int total = 0;               // shapes in all
  double planned_seconds = 0;  // every shape's plan, summed
  double used_seconds = 0;     // device time measured so far
  // The device time still to spend (0 once every shape is finished), and
  // of it the shape under way's part.
  double remaining_seconds = 0;
  double current_seconds = 0;
};

class TuneContext {
 public:
  virtual ~TuneContext() = default;

  // The NPU, the builder of its designs, and the measurement cache (null:
  // nothing is cached or looked up).
  virtual Device& device() = 0;
  virtual Builder& builder() = 0;
  virtual Cache* cache() = 0;
  // Seeded inputs kept across the measurements of one job.
  virtual InputCache& inputs() = 0;
  // What the searches learned of step times (cost_model.h), shared by every
  // job of the device; null (the default): a search learns from its own
  // figures only.
  virtual CostKnowledge* costs() { return nullptr; }
  // A version of what cache() holds, for the shape memo (shape_memo.h):
  // what a search worked out from the cache while this returned V still
  // holds while it returns V. The default is the cache's generation()
  // (right where cache() is the file's only writer); 0 without a cache. A
  // context reading the file beside its writer overrides it. Called on the
  // context's thread.
  virtual uint64_t cache_version();
  // Which of the shapes an AutotuneRun searches at once this context
  // serves (0: the only one): the user whose batch inputs the input cache
  // keeps (InputCache::MakeAll).
  virtual int lane() { return 0; }

  // True once the work should stop; the method looks at least once a round
  // and stops with Cancelled.
  virtual bool cancelled() = 0;
  // Waits up to `d` while another process holds the NPU; may return early
  // once cancelled.
  virtual void Sleep(absl::Duration d) = 0;

  // Progress: a line for people, shape `index` of `total` (0-based) about to
  // be searched, and a setting of shape `index` compared with the recorded
  // one. The defaults drop them.
  virtual void Log(const std::string& /*line*/) {}
  virtual void OnShape(int /*index*/, int /*total*/,
                       const std::string& /*key*/) {}
  virtual void OnTrial(int /*index*/, const Comparison& /*trial*/) {}
  // The settings of one batch of shape `index` compared at once, in the
  // order tried; the default hands each to OnTrial.
  virtual void OnTrials(int index, const std::vector<Comparison>& trials) {
    for (const Comparison& trial : trials) OnTrial(index, trial);
  }
  // The setting of shape `index` that Pick() takes so far against the
  // incumbent (the search's one rule; its delta is against the recorded
  // setting), or null while the incumbent holds. Called before the
  // OnTrial()s of each batch, and once more when the shape's choice is
  // confirmed. `pick` is borrowed for the call only.
  virtual void OnPick(int /*index*/, const Comparison* /*pick*/) {}
  // The job's device time, planned, used and still to spend:
  // before the first shape, as each shape begins and as each ends (the
  // last with remaining_seconds 0).
  virtual void OnEstimate(const JobEstimate& /*estimate*/) {}
};

// A TuneContext that passes every call on to `inner` (not owned; it must
// outlive the wrapper): the base of contexts that change a few calls and
// forward the rest (AutotuneRun's, ShapeMemo's recorder).
class TuneContextWrapper : public TuneContext {
 public:
  explicit TuneContextWrapper(TuneContext& inner) : inner_(inner) {}
  Device& device() override { return inner_.device(); }
  Builder& builder() override { return inner_.builder(); }
  Cache* cache() override { return inner_.cache(); }
  InputCache& inputs() override { return inner_.inputs(); }
  CostKnowledge* costs() override { return inner_.costs(); }
  uint64_t cache_version() override { return inner_.cache_version(); }
  int lane() override { return inner_.lane(); }
  bool cancelled() override { return inner_.cancelled(); }
  void Sleep(absl::Duration d) override { inner_.Sleep(d); }
  void Log(const std::string& line) override { inner_.Log(line); }
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
  void OnEstimate(const JobEstimate& estimate) override {
    inner_.OnEstimate(estimate);
  }

 private:
  TuneContext& inner_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_TUNE_CONTEXT_H_
