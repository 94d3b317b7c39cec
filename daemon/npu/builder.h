// The Builder seam: turns one setting of an operator, packaged as a runlist
// of N steps, into an Artifact the device can load, or says why the design
// does not fit.
//
// Implementations: SimBuilder (daemon/sim/, in process, for the simulated
// NPU) and CommandBuilder (daemon/builder/), which runs an external build
// command such as deploy/iron-builder (docs/builder-protocol.md).
// Threads: each implementation says whether several threads may call it;
// irontuned calls a BuildPool (build_pool.h) from the device worker, and
// the pool calls the implementation from its threads.
#ifndef IRONTUNE_DAEMON_NPU_BUILDER_H_
#define IRONTUNE_DAEMON_NPU_BUILDER_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/npu/device.h"
#include "irontune/v1/measurement.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

struct BuildRequest {
  // The operator at the setting to build: its tunables' `value`s are the
  // setting.
  v1::Operator op;
  // The platform it is built for.
  Platform platform;
  int steps = 1;
  bool distinct = true;
  v1::Packaging packaging = v1::PACKAGING_FULL_ELF;
};

// Either an artifact or a refusal (the design does not fit: a reason a
// person can act on, e.g. "L1: 2 A + 2 B + 2 C tiles need 72.0 KiB of
// 64 KiB"). A refusal is the design's verdict, not an error.
struct BuildOutcome {
  std::optional<Artifact> artifact;
  std::string refusal;
};

// The verdict `outcome` gives its design: "" where it built, else its
// refusal ("refused without a reason" where the builder gave none).
std::string RefusalOf(const BuildOutcome& outcome);

// The most steps one artifact may package.
inline constexpr int kMaxBuildSteps = 1 << 16;

// The identity of a build: sha256 hex over the design (common/design.h),
// the platform's generation and name, steps, distinct and packaging.
std::string RequestKey(const BuildRequest& request);

// Whether `request` is one any builder can take: steps in
// [1, kMaxBuildSteps], a packaging, an operator class and a platform
// generation. InvalidArgument naming the field otherwise.
absl::Status CheckBuildRequest(const BuildRequest& request);

class Builder {
 public:
  virtual ~Builder() = default;

  // Builds `request`. Errors (a Status) are the builder's own failures: a
  // tool that crashed, a bad request; refusals are in the outcome.
  virtual absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) = 0;

  // Build, giving up with Cancelled once `cancelled()` is true where the
  // builder can leave a build running (BuildPool). The default builds.
  virtual absl::StatusOr<BuildOutcome> Await(
      const BuildRequest& request, const std::function<bool()>& cancelled) {
    (void)cancelled;
    return Build(request);
  }

  // Whether `request`'s design fits: "" where it does, else the reason a
  // Build of it would refuse it with. A builder that ChecksFit() answers
  // without building (IRON asks its placer, as its autotune's refusal
  // check does), so a search can learn which settings fit and build only
  // those it times; the default builds `request` (Build) and reads its
  // outcome (RefusalOf). Errors as Build's.
  virtual absl::StatusOr<std::string> Fit(const BuildRequest& request);

  // Whether Fit answers without a build (at a small cost next to one).
  // The default: false.
  virtual bool ChecksFit() const { return false; }

  // Whether Build, Await and Fit of `request` answer without waiting: its
  // outcome is at hand (BuildPool keeps it) or costs no wall time to make
  // (the simulated builder counting its cost). A caller may give up what
  // it holds while it waits where not (TurnBuilder, device_turn.h). The
  // default: false.
  virtual bool Ready(const BuildRequest& request) {
    (void)request;
    return false;
  }

  // A hint that `request` will be built soon: a builder with threads
  // (BuildPool) starts on it. The default does nothing.
  virtual void Prefetch(const BuildRequest& request) { (void)request; }

  // Prefetch, queued by `rank`: after what lower ranks queued and before
  // higher ranks', in order within a rank (Prefetch's rank is 0). AutotuneRun
  // ranks each shape under way by its place (TurnBuilder), so the earliest
  // shape's builds go first. The default: Prefetch.
  virtual void PrefetchAt(const BuildRequest& request, int rank) {
    (void)rank;
    Prefetch(request);
  }

  // A hint that `request` will be built later, after what Prefetch queued
  // (the next shape's designs while this one is timed): a builder with
  // threads (BuildPool) starts on it only when nothing Prefetch queued is
  // waiting. A later Prefetch, Build or Await of it takes it ahead. The
  // default does nothing.
  virtual void PrefetchLater(const BuildRequest& request) { (void)request; }

  // A hint that `request` may be built, with time to spare: a builder with
  // threads (BuildPool) starts on it only when nothing Prefetch or
  // PrefetchLater queued is waiting, and keeps threads free for those. A
  // later Prefetch, PrefetchLater, Build or Await of it takes it ahead.
  // The default does nothing.
  virtual void PrefetchSpare(const BuildRequest& request) { (void)request; }

  // `request` will not be needed after all: a build PrefetchSpare queued is
  // dropped if it has not started (one started is finished and kept);
  // nothing otherwise. The default does nothing.
  virtual void Unprefetch(const BuildRequest& request) { (void)request; }

  // Irontuned is shutting down: builds running now end soon and later ones
  // do not start; both return Cancelled, never a refusal. Called from any
  // thread, once or more; the builder stays stopped. The default does
  // nothing (builds run to their end).
  virtual void Stop() {}

  // Identifies the build environment (tools and their versions), so a cached
  // verdict is not reused across a builder fix.
  virtual std::string Environment() const = 0;
};

// A Builder that passes every call on to `target` (not owned; it must
// outlive the wrapper): the base of wrappers that add to some calls
// (TurnBuilder, the device worker's heartbeat) and forward the rest.
class BuilderWrapper : public Builder {
 public:
  explicit BuilderWrapper(Builder* target) : target_(target) {}
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    return target_->Build(request);
  }
  absl::StatusOr<BuildOutcome> Await(
      const BuildRequest& request,
      const std::function<bool()>& cancelled) override {
    return target_->Await(request, cancelled);
  }
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override {
    return target_->Fit(request);
  }
  bool ChecksFit() const override { return target_->ChecksFit(); }
  bool Ready(const BuildRequest& request) override {
    return target_->Ready(request);
  }
  void Prefetch(const BuildRequest& request) override {
    target_->Prefetch(request);
  }
  void PrefetchAt(const BuildRequest& request, int rank) override {
    target_->PrefetchAt(request, rank);
  }
  void PrefetchLater(const BuildRequest& request) override {
    target_->PrefetchLater(request);
  }
  void PrefetchSpare(const BuildRequest& request) override {
    target_->PrefetchSpare(request);
  }
  void Unprefetch(const BuildRequest& request) override {
    target_->Unprefetch(request);
  }
  void Stop() override { target_->Stop(); }
  std::string Environment() const override { return target_->Environment(); }

 protected:
  Builder& target() { return *target_; }

 private:
  Builder* const target_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_NPU_BUILDER_H_
