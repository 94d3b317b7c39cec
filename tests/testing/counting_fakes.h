// Seam wrappers that count what a run asks of the builder, the device, the
// judge and the CPU reference, so a test or a benchmark can say that a
// cached run built, loaded or judged nothing.
//
// Threads: one at a time, as the seams they wrap. Ownership: the wrapped
// builder or device is borrowed and must outlive the wrapper.
#ifndef IRONTUNE_TESTS_TESTING_COUNTING_FAKES_H_
#define IRONTUNE_TESTS_TESTING_COUNTING_FAKES_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/builder/build_pool.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/ops/reference.h"
#include "daemon/tune/judge.h"

namespace irontune::testing {

// Counts builds, fit checks and prefetches of either priority; builds and
// checks fits through `inner` (a fit check that builds counts as a
// build), prefetches nothing.
class CountingBuilder : public Builder {
 public:
  explicit CountingBuilder(Builder& inner) : inner_(inner) {}
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    ++builds;
    return inner_.Build(request);
  }
  absl::StatusOr<std::string> Fit(const BuildRequest& request) override {
    if (!ChecksFit()) return Builder::Fit(request);
    ++fits;
    return inner_.Fit(request);
  }
  bool ChecksFit() const override { return inner_.ChecksFit(); }
  void Prefetch(const BuildRequest&) override { ++prefetches; }
  void PrefetchLater(const BuildRequest&) override { ++later_prefetches; }
  std::string Environment() const override { return inner_.Environment(); }
  int builds = 0;
  int fits = 0;
  int prefetches = 0;
  int later_prefetches = 0;

 private:
  Builder& inner_;
};

// Notes, in order, each prefetch of either priority and each build that
// `target` is asked for; builds through it, prefetches nothing.
class NotingBuilder : public BuilderWrapper {
 public:
  struct Call {
    char what;  // 'P' Prefetch, 'L' PrefetchLater, 'B' Build
    int steps;
    std::string key;  // RequestKey
  };
  using BuilderWrapper::BuilderWrapper;
  absl::StatusOr<BuildOutcome> Build(const BuildRequest& request) override {
    calls.push_back({'B', request.steps, RequestKey(request)});
    return BuilderWrapper::Build(request);
  }
  absl::StatusOr<BuildOutcome> Await(const BuildRequest& request,
                                     const std::function<bool()>&) override {
    return Build(request);
  }
  void Prefetch(const BuildRequest& request) override {
    calls.push_back({'P', request.steps, RequestKey(request)});
  }
  void PrefetchLater(const BuildRequest& request) override {
    calls.push_back({'L', request.steps, RequestKey(request)});
  }
  std::vector<Call> calls;
};

// Counts the device's loads.
class CountingDevice : public DeviceWrapper {
 public:
  using DeviceWrapper::DeviceWrapper;
  absl::StatusOr<std::unique_ptr<Image>> Load(
      const Artifact& artifact) override {
    ++loads;
    return DeviceWrapper::Load(artifact);
  }
  int loads = 0;
};

// The default judge (Judge), adding one to `*judged` per call. `judged`
// must outlive the function.
inline JudgeFn CountingJudge(int* judged) {
  return [judged](const v1::Operator& d, const v1::Operator& op,
                  const SharedInputs& in,
                  const std::map<std::string, std::string>& out,
                  const CallValues& values, const ReferenceLookup& reference) {
    ++*judged;
    return Judge(d, op, in, out, values, reference);
  };
}

// The CPU reference (ReferenceOutputs), adding one to `*computed` per call.
// `computed` must outlive the function.
inline ReferenceFn CountingReference(int* computed) {
  return [computed](const v1::Operator& op, const SharedInputs& in,
                    const CallValues& values) {
    ++*computed;
    return ReferenceOutputs(op, in, values);
  };
}

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_TESTING_COUNTING_FAKES_H_
