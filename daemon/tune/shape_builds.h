// What a shape's search will search and ask of the builder, told before it
// runs: its settings (ShapeSettings), the builds it asks for first
// (ShapeBuilds), whether it was searched before (SearchedBefore), and the
// two facts the search shares with these forecasts (MayBeBounded,
// KnownBuilt). AutotuneRun's build-ahead (build_ahead.h) reads them; the
// search (shape_search.h) reads ShapeSettings, MayBeBounded and
// KnownBuilt. Nothing here builds or times.
//
// Threads: the context's. Failure: Settings', the cache's and the fit
// checks' errors, as they were (Cancelled once the context is).
#ifndef IRONTUNE_DAEMON_TUNE_SHAPE_BUILDS_H_
#define IRONTUNE_DAEMON_TUNE_SHAPE_BUILDS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/device.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/search.h"
#include "daemon/tune/shape_task.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/tune_context.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

class Cache;

// Whether a search of `shape` bounds settings by their kernel cycles (and
// may leave some untimed): a GEMM shape, with cycles and a core clock.
bool MayBeBounded(const Shape& shape, const Platform& platform,
                  const KernelCycles& cycles);

// Whether `cache` (may be null: none) keeps the built identity
// (BuiltIdentityKey) of each of the 1-step requests `one_step`: a setting
// whose figure the search then finds without a build.
absl::StatusOr<std::vector<bool>> KnownBuilt(
    const std::vector<BuildRequest>& one_step, const std::string& environment,
    Cache* cache);

// The settings every member of `shape` has (Settings with shape.pinned in
// `space`, intersected), the recorded setting first: those TimeShape
// searches. Lines go to `log` (may be null) as Settings logs them.
absl::StatusOr<std::vector<TunableValues>> ShapeSettings(
    const Shape& shape, const v1::Calls& calls, const Platform& platform,
    const SearchSpace& space,
    const std::function<void(const std::string&)>& log = nullptr);

// The builds a TimeShape of `task.shape` will ask the context's builder for
// first, as Refusals and Measure ask (MeasureRequest): each member's 1-step
// design of each setting the search times first, with its
// options.repeats-step design behind it (none where the recorded setting
// is alone), as Measure waits for them.
// Those settings are each of ShapeSettings where they are at most
// options.exhaustive and no kernel bound may leave some untimed; else the
// recorded one and, for a coordinate descent, the first tunable's Line
// through `task.incumbent` (null: the recorded setting). Where the builder does
// not ChecksFit, Refusals builds every setting's 1-step design, and all of
// those are listed (those of the settings not timed first last). A design the
// context's cache knows (a built identity, measure.h BuiltIdentityKey, or a
// refusal; without fit checks any builder verdict) is left out with its
// many-step design: the search
// takes it from the cache without building, so a cached search gives none;
// none at all where the cache keeps a refusal of the recorded setting (the
// search then builds nothing; where that is not known yet, the list is
// built and a refusal makes it useless).
// Does not look at remeasure. Builds nothing. Where the builder
// ChecksFit, the fits of the settings the cache does not know are checked
// (Refusals: kept in the cache, so the search reads them) and the settings
// refused are left out, with the recorded setting's refusal giving an empty
// list; otherwise, where the builder turns out to refuse settings, their
// many-step designs are in the list all the same (a prefetch builds them
// for nothing). Errors are Settings', the cache's and the fit checks'
// (Cancelled once the context is). Reads no stats and tells the context
// nothing. With `rest` (may be null), the designs
// of the shape's other settings that fit and that the cache does not know
// are appended to it, setting by setting (its 1-step design, then its
// many-step one): what the search's later lines may ask for.
absl::StatusOr<std::vector<BuildRequest>> ShapeBuilds(
    const ShapeTask& task, std::vector<BuildRequest>* rest = nullptr);

// For each of `shapes`, whether the context's cache keeps the built
// identity (BuiltIdentityKey, with the context's builder) of its first
// member's recorded 1-step design: the shape was searched before, and its
// search asks the builder for little or nothing (a search cut short may
// still build some). Costs a hash a shape and one lookup for all
// (ShapeBuilds costs a few per setting); all false without a cache.
// Errors: the cache's.
absl::StatusOr<std::vector<bool>> SearchedBefore(
    const std::vector<Shape>& shapes, const v1::Calls& calls,
    const Platform& platform, const AutotuneOptions& options,
    TuneContext& context);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_SHAPE_BUILDS_H_
