// LocalTuneContext: the method's TuneContext over borrowed parts, for tests
// and benchmarks. Nothing waits (Sleep adds up what it was asked to wait),
// cancellation comes from `cancel_when`, and progress is kept for the test
// to look at.
#ifndef IRONTUNE_TESTS_TESTING_TUNE_CONTEXT_H_
#define IRONTUNE_TESTS_TESTING_TUNE_CONTEXT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/tune/tune_context.h"

namespace irontune::testing {

class LocalTuneContext : public TuneContext {
 public:
  // `device` and `builder` must outlive the context; `cache` may be null.
  LocalTuneContext(Device* device, Builder* builder, Cache* cache = nullptr)
      : device_(device), builder_(builder), cache_(cache) {}

  Device& device() override { return *device_; }
  Builder& builder() override { return *builder_; }
  Cache* cache() override { return cache_; }
  CostKnowledge* costs() override { return costs_; }
  InputCache& inputs() override {
    ++inputs_asked;
    return inputs_;
  }
  bool cancelled() override { return cancel_when && cancel_when(); }
  void Sleep(absl::Duration d) override { slept += d; }
  void Log(const std::string& line) override { lines.push_back(line); }
  void OnShape(int, int, const std::string& key) override {
    shapes.push_back(key);
  }
  void OnTrial(int, const Comparison&) override { ++trials; }

  void set_device(Device* device) { device_ = device; }
  void set_cache(Cache* cache) { cache_ = cache; }
  // `costs` (may be null) must outlive the context.
  void set_costs(CostKnowledge* costs) { costs_ = costs; }

  std::function<bool()> cancel_when;  // null: never cancelled
  std::vector<std::string> lines;     // Log lines, in order
  std::vector<std::string> shapes;    // OnShape keys, in order
  int trials = 0;                     // OnTrial calls
  int inputs_asked = 0;               // inputs() calls: seeded inputs made
  absl::Duration slept;               // Sleep asked for in all

 private:
  Device* device_;
  Builder* builder_;
  Cache* cache_;
  CostKnowledge* costs_ = nullptr;
  InputCache inputs_;
};

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_TESTING_TUNE_CONTEXT_H_
