#include "daemon/tune/shape_memo.h"

#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/design.h"
#include "common/status_macros.h"
#include "daemon/base/sha256.h"
#include "daemon/store/cache.h"
#include "daemon/tune/settings.h"
#include "daemon/tune/shape_search.h"

namespace irontune {
namespace {

// What a search told its context, in order.
struct Told {
  enum class Kind { kLog, kTrial, kTrials, kPick };
  Kind kind;
  std::string line;                // kLog
  std::vector<Comparison> trials;  // kTrial: one; kPick: none (null) or one
};

// A search kept: its result, what it told and the stats it added.
struct Kept {
  ShapeResult result;
  std::vector<Told> told;
  TuneStats stats;
};

// A TuneContext that passes everything to `inner` and writes down what
// the search tells it.
class Recorder : public TuneContextWrapper {
 public:
  explicit Recorder(TuneContext& inner) : TuneContextWrapper(inner) {}
  void Log(const std::string& line) override {
    told_.push_back({Told::Kind::kLog, line, {}});
    TuneContextWrapper::Log(line);
  }
  void OnTrial(int index, const Comparison& trial) override {
    told_.push_back({Told::Kind::kTrial, {}, {trial}});
    TuneContextWrapper::OnTrial(index, trial);
  }
  void OnTrials(int index, const std::vector<Comparison>& trials) override {
    told_.push_back({Told::Kind::kTrials, {}, trials});
    TuneContextWrapper::OnTrials(index, trials);
  }
  void OnPick(int index, const Comparison* pick) override {
    Told t{Told::Kind::kPick, {}, {}};
    if (pick != nullptr) t.trials.push_back(*pick);
    told_.push_back(std::move(t));
    TuneContextWrapper::OnPick(index, pick);
  }
  std::vector<Told> Take() && { return std::move(told_); }

 private:
  std::vector<Told> told_;
};

void Replay(const std::vector<Told>& told, int index, TuneContext& context) {
  for (const Told& t : told) {
    switch (t.kind) {
      case Told::Kind::kLog:
        context.Log(t.line);
        break;
      case Told::Kind::kTrial:
        context.OnTrial(index, t.trials.front());
        break;
      case Told::Kind::kTrials:
        context.OnTrials(index, t.trials);
        break;
      case Told::Kind::kPick:
        context.OnPick(index, t.trials.empty() ? nullptr : &t.trials.front());
        break;
    }
  }
}

// The kept searches, by key; the oldest dropped beyond kShapeMemoEntries.
class Memo {
 public:
  static Memo& Get() {
    static Memo* const memo = new Memo();
    return *memo;
  }
  std::shared_ptr<const Kept> Find(const std::string& key) {
    absl::MutexLock lock(&mu_);
    auto it = kept_.find(key);
    return it == kept_.end() ? nullptr : it->second;
  }
  void Keep(const std::string& key, std::shared_ptr<const Kept> kept) {
    absl::MutexLock lock(&mu_);
    if (!kept_.insert_or_assign(key, std::move(kept)).second) return;
    order_.push_back(key);
    while (order_.size() > kShapeMemoEntries) {
      kept_.erase(order_.front());
      order_.pop_front();
    }
  }
  void Clear() {
    absl::MutexLock lock(&mu_);
    kept_.clear();
    order_.clear();
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const Kept>> kept_
      ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
};

// Appends `part` to `key`, length first, so no two lists of parts join
// into one string.
void Part(std::string& key, std::string_view part) {
  absl::StrAppend(&key, part.size(), ":",
                  absl::string_view(part.data(), part.size()), "\n");
}

void Number(std::string& key, double value) {
  Part(key, absl::StrFormat("%.17g", value));
}

void AddOptions(std::string& key, const AutotuneOptions& options) {
  Part(key, DeterministicBytes(options.timing.proto()));
  Part(key, absl::StrCat(options.repeats, "/", options.exhaustive, "/",
                         options.seed, "/", options.race ? "race" : "all"));
  Part(key, absl::StrCat(options.packaging));
  Part(key, options.judge_id);
  Part(key, absl::StrCat(absl::FormatDuration(options.idle.idle_timeout), "/",
                         absl::FormatDuration(options.idle.idle_poll)));
  Number(key, options.idle.cpu_wait_us);
  Number(key, options.min_gain);
}

void AddPlatform(std::string& key, const Platform& platform) {
  Part(key, platform.name);
  Part(key, platform.generation);
  Part(key, absl::StrCat(std::string(PowerModeName(platform.power_mode)), "/",
                         platform.columns, "/", platform.core_mhz, "/",
                         platform.hw_contexts, "/", platform.full_elf));
}

void AddShape(std::string& key, const Shape& shape, const v1::Calls& calls) {
  Part(key, shape.key);
  Part(key, shape.class_name);
  for (const v1::Field& dim : shape.dims) Part(key, DeterministicBytes(dim));
  for (const std::string& pin : shape.pinned) Part(key, pin);
  Part(key, absl::StrCat(shape.steps, "/", shape.members.size()));
  for (const ShapeMember& m : shape.members) {
    Part(key, absl::StrCat(m.op, "/", m.call, "/", m.steps));
    Part(key, DeterministicBytes(calls.operators(static_cast<int>(m.op))));
    for (const WeightedValues& point : m.points) {
      Number(key, point.weight);
      for (const auto& [name, value] : point.values) {
        Part(key, absl::StrCat(name, "=", value));
      }
    }
    for (const auto& [name, digest] : m.inputs) {
      Part(key, absl::StrCat(name, "=", digest));
    }
  }
}

}  // namespace

std::optional<std::string> ShapeMemoKey(const ShapeTask& task) {
  const auto& [shape, calls, platform, options, cycles, context, stats, index,
               incumbent] = task;
  const Cache* cache = context.cache();
  if (cache == nullptr || options.remeasure || !IsDefaultSpace(options.space)) {
    return std::nullopt;
  }
  std::string key = "shape-memo/1\n";
  Part(key, absl::StrCat(cache->platform(), "/",
                         std::string(PowerModeName(cache->power_mode())), "/",
                         context.cache_version()));
  Part(key, context.builder().Environment());
  AddPlatform(key, platform);
  AddOptions(key, options);
  for (const auto& [recipe, n] : cycles)
    Part(key, absl::StrCat(recipe, "=", n));
  Part(key, incumbent == nullptr ? "recorded" : "incumbent");
  if (incumbent != nullptr) {
    for (const v1::Field& f : *incumbent) Part(key, DeterministicBytes(f));
  }
  AddShape(key, shape, calls);
  return Sha256Hex(key);
}

absl::StatusOr<ShapeResult> TimeShapeKept(const ShapeTask& task) {
  TuneContext& context = task.context;
  TuneStats* stats = task.stats;
  const std::optional<std::string> key = ShapeMemoKey(task);
  if (!key) return TimeShape(task);
  if (std::shared_ptr<const Kept> kept = Memo::Get().Find(*key)) {
    Replay(kept->told, task.index, context);
    if (stats != nullptr) *stats += kept->stats;
    return kept->result;
  }
  const uint64_t version = context.cache_version();
  Recorder recorder(context);
  auto kept = std::make_shared<Kept>();
  ASSIGN_OR_RETURN(kept->result, TimeShape(task.For(recorder, &kept->stats)));
  if (stats != nullptr) *stats += kept->stats;
  if (kept->stats.device_timed == 0 && context.cache_version() == version) {
    kept->told = std::move(recorder).Take();
    ShapeResult result = kept->result;
    Memo::Get().Keep(*key, std::move(kept));
    return result;
  }
  return std::move(kept->result);
}

void ForgetKeptShapes() { Memo::Get().Clear(); }

}  // namespace irontune
