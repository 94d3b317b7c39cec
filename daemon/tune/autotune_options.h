// What an Autotune is asked to do, and what it counts while doing it.
#ifndef IRONTUNE_DAEMON_TUNE_AUTOTUNE_OPTIONS_H_
#define IRONTUNE_DAEMON_TUNE_AUTOTUNE_OPTIONS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>

#include "common/defaults.h"
#include "daemon/tune/interleave.h"
#include "daemon/tune/judge.h"
#include "daemon/tune/settings.h"
#include "irontune/v1/measurement.pb.h"

namespace irontune {

// Where there are at most this many settings of a shape, every one is
// timed; above, a coordinate descent (IRON's EXHAUSTIVE).
inline constexpr int kExhaustive = 32;

// The least gain, as a share of the incumbent's step time, for which a
// challenger replaces the incumbent (besides beating it beyond kGainZ
// noises); docs/search.md ("When a setting is taken").
inline constexpr double kMinGain = 0.005;

// AutotuneOptions.shapes_at_once's default.
inline constexpr int kShapesAtOnce = 4;

struct AutotuneOptions {
  // Every default applied (requests.h AutotuneOptionsOf): the packaging is
  // one the platform runs, never PACKAGING_UNSPECIFIED.
  ResolvedTiming timing;
  int repeats = kDefaultRepeats;
  v1::Packaging packaging = v1::PACKAGING_FULL_ELF;
  bool remeasure = false;  // time again what the cache holds
  int exhaustive = kExhaustive;
  uint64_t seed = 0;  // the seeded inputs' seed
  // mlir-aie nightly kernel cycles (kernel_cycles.h); empty: none, every
  // setting is timed. Read once per Autotune; never fetched.
  std::string cycles_path;
  SearchSpace space = DefaultSearchSpace();
  // The operator's CPU reference under both gates (judge.h).
  JudgeFn judge = Judge;
  // Computes the CPU reference the judge asks for (null: ReferenceOutputs),
  // at most once per operator point of a shape (OutputJudge, verdicts.h).
  ReferenceFn reference;
  // Names the judge in the cache's judgement verdicts, so another judge
  // decides afresh.
  std::string judge_id = "reference/1";
  IdleRules idle;
  // kMinGain; REQUIRES: 0 <= min_gain < 1.
  double min_gain = kMinGain;
  // Race the settings: screen each at a short Timing (ScreenTiming in
  // shape_search.h) and give `timing` only to those whose screening figure is
  // within reach of the best (docs/search.md, "Racing"). false: every
  // setting tried gets `timing`.
  bool race = true;
  // Rank before building (docs/search.md, "Ranking before building"): a
  // shape with more than kRankBatch + 2 settings builds and times the
  // settings a cost model, fit to what is known, says may beat the best
  // so far, a round at a time, and stops when none may. false: every
  // setting (up to `exhaustive`), else a coordinate descent.
  bool rank = true;
  // Device seconds the job may spend (docs/search.md, "Shape order and the
  // budget"): a shape begins only while less has been spent; the shapes
  // not begun are left untuned. 0: no budget. REQUIRES: >= 0.
  double budget_seconds = 0;
  // Shapes searched at once (AutotuneRun, docs/search.md "Shapes at
  // once"): a later shape's search runs only while each before it waits
  // for the builder, so the device times it instead of idling. 1: one
  // shape at a time. REQUIRES: >= 1.
  int shapes_at_once = kShapesAtOnce;
  // The keys (ShapeKey) of the only shapes to tune; empty: every shape.
  std::set<std::string> only_shapes;
};

struct TuneStats {
  int64_t settings_timed = 0;    // settings given a figure (cache or device)
  int64_t cache_hits = 0;        // figures taken from the cache
  int64_t device_timed = 0;      // figures timed on the device
  int64_t measure_calls = 0;     // Measure calls
  int64_t skipped_by_bound = 0;  // settings the kernel bound ruled out
  int64_t builder_refused = 0;   // settings the builder refused
  int64_t confirmations = 0;     // challengers re-timed against the incumbent
  int64_t confirmed = 0;         // shapes where one of them was taken
  int64_t confirm_timed = 0;     // figures timed on the device to confirm
  int64_t confirm_batches = 0;   // batches timed to confirm
  int64_t screened = 0;          // settings given a screening figure
  int64_t screened_out = 0;      // of them, those given no full Timing
  int64_t rank_rounds = 0;       // rounds of ranked searches (ranking.h)

  // Adds `more`'s counts to these, field by field.
  TuneStats& operator+=(const TuneStats& more) {
    using S = TuneStats;
    // A field added to TuneStats joins the list below.
    static_assert(sizeof(S) == 13 * sizeof(int64_t));
    for (int64_t S::*count :
         {&S::settings_timed, &S::cache_hits, &S::device_timed,
          &S::measure_calls, &S::skipped_by_bound, &S::builder_refused,
          &S::confirmations, &S::confirmed, &S::confirm_timed,
          &S::confirm_batches, &S::screened, &S::screened_out,
          &S::rank_rounds}) {
      this->*count += more.*count;
    }
    return *this;
  }
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_AUTOTUNE_OPTIONS_H_
