// The parts a job runs against to be answered from the cache alone
// (cached_answers.h): a Device and a Builder that refuse, and the job
// context over them and a read connection to the cache.
//
// A job whose every figure and verdict is stored asks nothing of the
// device, the builder or the seeded inputs (bench/cached_autotune_bench
// counts them): run against these, it ends with its answer. A job that
// needs one of them is told FailedPrecondition (kCacheOnly) and sees
// itself cancelled from then on, so it stops at its next check; what it
// asked for is noted (NeedsDevice), and the caller hands the job to the
// device worker instead, dropping what it did.
//
// Writes: most writes the method makes to the cache follow a build, a fit
// check, a device run or a judging of outputs read from the device (the
// figures, the builder's verdicts, the judgements), all refused here; the
// rest (a ranked search's rounds, kept once) CachedAnswers' read-only
// connection refuses (read_only_cache.h), and it hands such a job to the
// worker, the one writer, as it does one that needs the device.
//
// Threads: a NeedsDevice is thread-safe; the Device, the Builder and the
// context are used by the thread answering the job (one at a time, as
// TuneContext says). Ownership: each borrows the NeedsDevice (and the
// context its parts and cache), which must outlive it.
#ifndef IRONTUNE_DAEMON_SCHEDULER_CACHE_ONLY_H_
#define IRONTUNE_DAEMON_SCHEDULER_CACHE_ONLY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/scheduler/cache_writes.h"
#include "daemon/scheduler/job_context.h"

namespace irontune {

// The start of the message of every refusal.
inline constexpr char kCacheOnly[] = "answered from the cache only";

// What a cache-only run asked for that only the device worker has.
class NeedsDevice {
 public:
  // Notes `what` ("a build", "a device load", ...) and returns the refusal
  // to give: FailedPrecondition "answered from the cache only: WHAT needs
  // the device worker".
  absl::Status Refuse(const std::string& what) ABSL_LOCKS_EXCLUDED(mu_);
  bool asked() const ABSL_LOCKS_EXCLUDED(mu_);
  // What was asked first; "" when nothing.
  std::string first() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::string first_ ABSL_GUARDED_BY(mu_);
  bool asked_ ABSL_GUARDED_BY(mu_) = false;
};

// A Device that reports `platform` and its stack versions and refuses to
// load or to look for other holders (nothing is timed without a load).
class CacheOnlyDevice : public Device {
 public:
  CacheOnlyDevice(Platform platform, StackVersions stack, NeedsDevice* needs)
      : platform_(std::move(platform)),
        stack_(std::move(stack)),
        needs_(needs) {}
  absl::StatusOr<Platform> GetPlatform() override { return platform_; }
  StackVersions GetStackVersions() override { return stack_; }
  absl::StatusOr<std::unique_ptr<Image>> Load(
      const Artifact& artifact) override;
  absl::StatusOr<std::vector<int>> OtherHolders() override;

 private:
  const Platform platform_;
  const StackVersions stack_;
  NeedsDevice* const needs_;
};

// A Builder with the real one's Environment() and ChecksFit() (the keys of
// its verdicts, and how a search asks for fits, stay the device worker's)
// that refuses to build or check a fit. Its hints (Prefetch and the like)
// do nothing: a hint is not a need. Ready() is true: it answers at once.
class CacheOnlyBuilder : public Builder {
 public:
  CacheOnlyBuilder(std::string environment, bool checks_fit, NeedsDevice* needs)
      : environment_(std::move(environment)),
        checks_fit_(checks_fit),
        needs_(needs) {}
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override;
  absl::StatusOr<BuildOutcome> Await(
      const BuildRequest& request,
      const std::function<bool()>& cancelled) override;
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override;
  bool ChecksFit() const override { return checks_fit_; }
  bool Ready(const BuildRequest& /*request*/) override { return true; }
  std::string Environment() const override { return environment_; }

 private:
  const std::string environment_;
  const bool checks_fit_;
  NeedsDevice* const needs_;
};

// A JobContext over the cache-only parts whose events are held
// (JobContext::Events::kHeld) and which counts itself cancelled once the
// run needs the device. The cache is read beside its writer: the shape
// memo's version is that of the shape being searched (the last OnShape)
// by `writes` (cache_writes.h), and the context keeps each shape's version
// as its search begins, so Unchanged() says whether every shape it read
// was read in one state. Seeded inputs are not refused: a run asks for
// them ahead of the builds a shape may need (AutotuneRun prefetches them
// while they build), which a cached shape's search then never asks for;
// they come from an input cache of the context's own, which keeps none
// beyond those in use.
class CacheOnlyContext : public JobContext {
 public:
  // `cache` is a read connection (never written through); `writes` knows
  // what its file's writer may be rewriting. Both borrowed, as are
  // `device` and `builder`.
  CacheOnlyContext(JobPtr job, Device& device, Builder& builder, Cache* cache,
                   CacheWrites& writes, NeedsDevice& needs);

  InputCache& inputs() override;
  bool cancelled() override;
  void OnShape(int index, int total, const std::string& key) override;
  uint64_t cache_version() override { return writes_.Version(shape_); }

  // Keeps shape `key`'s version now, for Unchanged() (OnShape does it for
  // each shape searched; a Measure's caller for its operator's shape).
  void Watch(const std::string& key);
  // Whether every shape watched still has the version it was watched at.
  bool Unchanged();
  // Bytes of seeded inputs made for the run.
  uint64_t inputs_made() const { return inputs_.made_bytes(); }

 private:
  CacheWrites& writes_;
  NeedsDevice& needs_;
  std::string shape_;  // the shape being searched
  std::map<std::string, uint64_t> watched_;
  InputCache inputs_{0};
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_CACHE_ONLY_H_
