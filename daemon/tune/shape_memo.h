// The shape memo: shape searches that timed nothing, kept so that the same
// search asked again answers without reading a figure.
//
// A shape search (TimeShape) whose every figure and verdict came from the
// cache is a function of its inputs and of what the cache holds: asked
// again while the cache is unchanged, it reads the same figures and takes
// the same setting. TimeShapeKept keeps such a search's result, what it
// told the context (lines, trials, picks, in order) and the stats it added,
// under a key naming every input of the search (ShapeMemoKey) and the
// version of the cache its context reads (TuneContext::cache_version(): the
// cache's generation, Cache::generation(), where the context's cache is the
// file's writer). A later search with the same key replays them to its own
// context and stats instead of searching.
//
// A search is kept only when it timed nothing on the device and the version
// did not move while it ran; any cache write moves it on, so nothing kept
// before it is found again. Never kept: a search with
// remeasure, without a cache, or in a search space other than the default
// one (whose functions a key cannot name). A search that fails or is
// cancelled is not kept either.
//
// Threads: TimeShapeKept runs on the context's thread (the device worker);
// the memo is process-wide and thread-safe. Memory: at most
// kShapeMemoEntries searches, the oldest dropped first.
#ifndef IRONTUNE_DAEMON_TUNE_SHAPE_MEMO_H_
#define IRONTUNE_DAEMON_TUNE_SHAPE_MEMO_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/tune/autotune_options.h"
#include "daemon/tune/kernel_cycles.h"
#include "daemon/tune/shape_task.h"
#include "daemon/tune/shapes.h"
#include "daemon/tune/tune_context.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

inline constexpr size_t kShapeMemoEntries = 512;

// The key the search `task` is kept under, against its context's cache as
// it is now (its stats and index are not part of it); nullopt where such a
// search is never kept (see the top of this file).
std::optional<std::string> ShapeMemoKey(const ShapeTask& task);

// TimeShape (shape_search.h, same contract), answered from the memo where
// a search with the same key is kept, and kept when it may be. A replayed
// search tells the task's context what the kept one told it, under
// task.index, and adds the kept stats to task.stats (may be null).
absl::StatusOr<ShapeResult> TimeShapeKept(const ShapeTask& task);

// Drops every kept search (tests and benchmarks that time the search
// itself).
void ForgetKeptShapes();

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_SHAPE_MEMO_H_
