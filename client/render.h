// How irontune-client shows what irontuned sends: profile diffs, progress,
// the daemon's status, jobs and measurements. Pure functions of their
// arguments (times come in as arguments, never from a clock); thread-safe.
// Every multi-line result ends in a newline; a single line (progress)
// does not.
#ifndef IRONTUNE_CLIENT_RENDER_H_
#define IRONTUNE_CLIENT_RENDER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/profile_diff.h"
#include "google/protobuf/repeated_field.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

using Fields = google::protobuf::RepeatedPtrField<v1::Field>;

// "tile_m=64 tile_k=128"; "(none)" for no fields.
std::string FieldsText(const Fields& fields);

// "GEMM M=256 K=2048 N=2048".
std::string EntryName(std::string_view operator_class, const Fields& dims);

// The tunables that differ, in `after`'s order then those only in
// `before`: "tile_m 64 → 128, tile_n 64 → 128". A tunable only on one side
// shows "-" on the other.
std::string TunablesChange(const Fields& before, const Fields& after);

// "45 s", "3m20s", "2h05m"; "-" for a negative or non-finite value.
std::string FormatDuration(double seconds);

// "+12.30 ± 0.40" (positive is faster).
std::string FormatGain(double gain_us, double noise_us);

// The diff as a table: one row per changed (~), added (+) and removed (-)
// entry with its tunables and measured gain. Kept entries are only
// counted (RenderDiffSummary). An empty diff renders a single line saying
// so.
std::string RenderDiffTable(const v1::ProfileDiff& diff);

// The model-level summary: entry counts, the model's gain per call with
// its noise where measured, the shapes left untuned with why, and `stats`
// (shapes, settings timed, cache hits, NPU and wall time) where given.
std::string RenderDiffSummary(const v1::ProfileDiff& diff,
                              const v1::AutotuneStats* stats);

// What `submit --check` found, for standard error: how the moved entries
// of `diff` were weighed against `min_gain` (`verdict`, WeighCheck), one
// row per entry with its weighted gain and whether it counts; where they
// could not be weighed, why, and that every one counts.
std::string RenderCheck(const v1::ProfileDiff& diff,
                        const CheckVerdict& verdict,
                        const CheckMinGain& min_gain);

// The same as a JSON object (one line): min_gain, weighed, fallback,
// threshold_us, model_time_us, fails, and entries (kind, entry,
// has_gain, weighted_gain_us, weighted_noise_us, counts).
std::string CheckJson(const v1::ProfileDiff& diff, const CheckVerdict& verdict,
                      const CheckMinGain& min_gain);

enum class ProgressStyle {
  kBar,    // a terminal: one line redrawn in place, cut to the width
  kLines,  // a pipe or a file: a full sentence per update
};

// One progress update, without a newline, with the ETA ("eta 3m12s",
// eta_seconds) where the daemon sent one; kLines also gives the NPU time
// used and still to go. `width` bounds a kBar line in display columns;
// kLines ignores it.
std::string RenderProgress(const v1::ShapeProgress& progress,
                           ProgressStyle style, int width);

std::string_view JobStateName(v1::JobState state);
std::string_view JobKindName(v1::JobKind kind);
std::string_view PriorityName(v1::Priority priority);

// The daemon: version, uptime, device, its state, the running job, the
// queue and the cache.
std::string RenderStatus(const v1::StatusResponse& status, int64_t now_unix_ms);

// Jobs as a table, one row each, in the order given; "no jobs" for none.
std::string RenderJobs(
    const google::protobuf::RepeatedPtrField<v1::JobSummary>& jobs,
    int64_t now_unix_ms);

// One job in detail (state, times, progress, error, stats).
std::string RenderJob(const v1::JobSummary& job, int64_t now_unix_ms);

// A measurement: one row per setting (the recorded one first), its step
// time, its difference from the recorded setting ± noise, whether it came
// from the cache, or why it was refused.
std::string RenderMeasureResult(const v1::MeasureResult& result);

// An autotune result as one JSON document:
//   {"job_id", "changed", "profile" (IRON's profile JSON), "diff", "stats"}
// where diff and stats follow the protobuf JSON mapping; with `check`
// (CheckJson's text), also "check".
std::string AutotuneResultJson(std::string_view job_id,
                               const v1::AutotuneResult& result, bool changed,
                               const std::string& check = "");

// Any message in the protobuf JSON mapping, field names as in the .proto.
std::string MessageJson(const google::protobuf::Message& message);

// What a command with --json prints of a response: with `json`, the
// response as MessageJson, a line; else `text(response)` (a std::string).
template <typename Text>
auto JsonOr(bool json, Text text) {
  return [json, text](const auto& response) -> std::string {
    return json ? MessageJson(response) + "\n" : text(response);
  };
}

// Display columns of UTF-8 `text` (one per code point).
int DisplayWidth(std::string_view text);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_RENDER_H_
