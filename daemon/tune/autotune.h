// autotune: choosing each operator shape's tunables by timing them on the
// NPU, written as a profile (IRON's autotune module, in C++).
//
//   Shapes(calls)          the operator shapes the calls run that have a
//                          tunable to search, each operator design once
//   Settings(op)           (settings.h) what may be tried for one operator
//   Refusal(op)            whether the builder takes a design (cached)
//   TimeShape(shape)       every shared setting timed against the recorded
//                          one, or a coordinate descent where there are more
//                          than `exhaustive`; settings a kernel-cycle bound
//                          shows cannot win are skipped
//   Autotune(calls, prof)  the profile with an entry per shape, the fastest
//                          setting taken, and its diff against `prof`
// docs/search.md ("Autotune") says why each step is as it is.
//
// Threads: everything here runs on the thread that owns the Device and the
// Builder (irontuned's device worker). The progress sink is called on that
// thread. Ownership: AutotuneDeps' pointers are borrowed and must outlive
// the call. Failure: device, builder and cache errors come back as the
// Status they were; cancellation is Cancelled. A setting the builder refuses
// or whose output is not admitted is a refused Comparison, not an error.
#ifndef IRONTUNE_DAEMON_TUNE_AUTOTUNE_H_
#define IRONTUNE_DAEMON_TUNE_AUTOTUNE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "absl/status/statusor.h"
#include "common/expression.h"
#include "common/profile.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/tune/interleave.h"
#include "daemon/tune/judge.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/search.h"
#include "daemon/tune/settings.h"
#include "irontune/v1/measurement.pb.h"
#include "irontune/v1/profile.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

class Cache;

// Where there are at most this many settings of a shape, every one is
// timed; above, a coordinate descent (IRON's EXHAUSTIVE).
inline constexpr int kExhaustive = 32;

// One operator of a shape: where it is timed and what its inputs hold.
struct ShapeMember {
  uint32_t op = 0;  // index into Calls.operators
  int call = 0;     // index into Calls.calls: the first call running it
  std::vector<WeightedValues> points;         // OpPoints in that call
  std::map<std::string, std::string> inputs;  // OpInputs in that call
  int64_t steps = 0;  // steps running it, over every call
};

// The operators of the calls one profile entry covers: one class at one set
// of dims.
struct Shape {
  std::string key;  // ShapeKey
  std::string class_name;
  std::vector<v1::Field> dims;  // ShapeDims of the first member
  std::vector<ShapeMember> members;
  // Tunables any member pins: none of them moves.
  std::set<std::string> pinned;
  int64_t steps = 0;  // steps running any member, over every call
};

// The shapes of `calls`' operators that have a tunable to search (an
// unpinned tunable whose domain, space.domain on `generation`, holds a value
// other than the recorded one), in the order the calls first run them, each
// operator (by index) a member once, of the call that first runs it.
// REQUIRES: calls passed ValidateRecording. Fails as OpPoints does.
absl::StatusOr<std::vector<Shape>> Shapes(const v1::Calls& calls,
                                          const SearchSpace& space,
                                          const std::string& generation);

// Whether the builder takes `op` (at its tunables' values) alone on
// `platform`: "" where it does, else the builder's reason (the refusal of a
// 1-step build). The verdict is kept in `cache` (may be null) under
// VerdictKey{RecipeKeyHash(op, platform, packaging),
// builder.Environment()}, so a builder fix is seen. Errors: the builder's
// and the cache's own.
absl::StatusOr<std::string> Refusal(const v1::Operator& op,
                                    const Platform& platform,
                                    v1::Packaging packaging, Builder& builder,
                                    Cache* cache);

// sha256 hex of `op` as a design (class, params, tunables and buffers;
// domains, pinned and tolerance left out), the generation and the
// packaging: what a builder verdict follows besides the builder.
std::string RecipeKeyHash(const v1::Operator& op, const Platform& platform,
                          v1::Packaging packaging);

// Decides whether `op`'s output may replace `default_op`'s, given what the
// recorded setting was fed (`inputs`, by operator buffer name) and what
// `op` wrote (`written`), at per-call `values`. nullopt = admitted, else
// why not. Called only where the two outputs' digests differ.
using JudgeFn = std::function<std::optional<std::string>(
    const v1::Operator& default_op, const v1::Operator& op,
    const std::map<std::string, std::string>& inputs,
    const std::map<std::string, std::string>& written,
    const CallValues& values)>;

// The judge of a branch without the families' CPU references: only a
// bit-identical output is admitted, so it refuses every call.
JudgeFn BitIdenticalJudge();

// The progress sink. Default methods do nothing; the gRPC service streams
// them, tests record them. Called on the tuning thread; must not call back
// into Autotune.
class AutotuneProgress {
 public:
  virtual ~AutotuneProgress() = default;
  // Shape `index` of `total` (0-based) is about to be searched.
  virtual void OnShape(int /*index*/, int /*total*/,
                       const std::string& /*key*/) {}
  // A setting of shape `index` was timed (or refused).
  virtual void OnTrial(int /*index*/, const Comparison& /*trial*/) {}
  // A progress line (also logged with spdlog).
  virtual void OnLog(const std::string& /*line*/) {}
};

struct AutotuneOptions {
  v1::Timing timing;  // zero fields take IRON's defaults
  int repeats = kDefaultRepeats;
  // nullopt: full ELF where the platform supports it, else the xclbin chain.
  std::optional<v1::Packaging> packaging;
  bool remeasure = false;  // time again what the cache holds
  int exhaustive = kExhaustive;
  uint64_t seed = 0;  // the seeded inputs' seed
  // mlir-aie nightly kernel cycles (kernel_cycles.h); empty: none, every
  // setting is timed. Read once per Autotune; never fetched.
  std::string cycles_path;
  SearchSpace space = DefaultSearchSpace();
  // Judge (daemon/tune/judge.h): the operator's CPU reference under both
  // gates.
  JudgeFn judge = Judge;
  // Names the judge in the cache's judgement verdicts, so another judge
  // decides afresh.
  std::string judge_id = "reference/1";
};

struct AutotuneDeps {
  Device* device = nullptr;              // REQUIRES: non-null
  Builder* builder = nullptr;            // REQUIRES: non-null
  Cache* cache = nullptr;                // may be null
  AutotuneProgress* progress = nullptr;  // may be null
  // Checked before every Measure and once a round inside it; true stops the
  // search with Cancelled.
  std::function<bool()> cancelled;
  // Passed to Measure; its `cancelled` is replaced by the one above, its
  // `log` by the tuner's.
  InterleaveEnv env;
};

struct TuneStats {
  int64_t settings_timed = 0;    // settings given a figure (cache or device)
  int64_t cache_hits = 0;        // figures taken from the cache
  int64_t device_timed = 0;      // figures timed on the device
  int64_t measure_calls = 0;     // Measure calls
  int64_t skipped_by_bound = 0;  // settings the kernel bound ruled out
  int64_t builder_refused = 0;   // settings the builder refused
};

// One setting's trial, with each member's share (per step, weighted over
// its points) so the model-level gain can weight members by their steps.
struct ShapeTrial {
  Comparison trial;
  std::vector<double> member_delta_us;
  std::vector<std::optional<double>> member_noise_us;
};

struct ShapeResult {
  std::string key;
  std::vector<ShapeTrial> trials;  // the recorded setting first
  int best = 0;                    // index of the setting taken
};

// Times `shape`'s settings, IRON's time_shape: the settings every member
// has (Settings with shape.pinned, intersected), less those the builder
// refuses for some member; one left gives [{recorded, 0, 0}]; at most
// options.exhaustive are all timed, else a coordinate descent over Line()s
// through the fastest setting taken until a pass moves nothing. With
// kernel cycles and a core clock, a GEMM setting whose LeastUs (summed as
// the delta is) is no less than the recorded setting's time plus the best
// gain so far is not timed. Trials are in Settings order, the recorded one
// first; `best` is the fastest that Gains(), else 0. A recorded setting the
// builder refuses gives its one trial, refused, untimed. `stats` (may be
// null) is added to; progress reports trials under `shape_index`.
absl::StatusOr<ShapeResult> TimeShape(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const AutotuneOptions& options, const KernelCycles& cycles,
    const AutotuneDeps& deps, TuneStats* stats, int shape_index = 0);

struct TuneResult {
  Profile profile;
  v1::ProfileDiff diff;
  std::vector<ShapeResult> shapes;  // in Shapes() order
  TuneStats stats;
};

// Returns `profile` with an entry for each shape of `calls` naming the
// fastest setting taken (the recorded one where none gains): entries of
// `profile` covering a shape (its class, every dim of the entry equal to
// the shape's) are replaced, their tunables the search does not move held;
// the rest are kept. The new entries name NamedDims. The diff is
// DiffProfiles(profile, result) with each changed entry's gain (-delta_us)
// and noise, and the model-level gain: each shape's member gains weighted
// by how many steps run the member, summed; noises in quadrature.
// REQUIRES: calls passed ValidateRecording.
absl::StatusOr<TuneResult> Autotune(const v1::Calls& calls,
                                        const Profile& profile,
                                        const AutotuneOptions& options,
                                        const AutotuneDeps& deps);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_AUTOTUNE_H_
