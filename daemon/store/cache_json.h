// The JSON forms of a measurement: IRON's cost cache files, and the lines
// of irontune's own cache export (see CacheReader::Export for their fields).
//
// Thread-safe (functions of their arguments; an ImportLine is a value).
#ifndef IRONTUNE_DAEMON_STORE_CACHE_JSON_H_
#define IRONTUNE_DAEMON_STORE_CACHE_JSON_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "daemon/store/cache_key.h"
#include "irontune/v1/measurement.pb.h"
#include "nlohmann/json_fwd.hpp"

namespace irontune {

// One file of IRON's JSON cost cache (`<key>.json`). As IRON's own reader,
// it takes only an object with exactly IRON's Measurement fields: t_step_us,
// round_us, output, run, pmode, calls, default_round_us and measured; any
// other field, or one missing, is InvalidArgument (IRON reads such a file as
// absent). Wrong types are InvalidArgument too. `pmode` is kept as written
// in power_mode. Never throws.
absl::StatusOr<v1::Measurement> ParseIronCost(std::string_view text);

// The proto3 JSON mapping of `m`, with proto field names and every field
// printed (one line, no newline).
std::string MeasurementToJson(const v1::Measurement& m);
// The inverse; unknown fields are InvalidArgument.
absl::StatusOr<v1::Measurement> MeasurementFromJson(std::string_view json);

// An export line of a measurement (kind "measurement", with its
// `row_schema`, and its `timing` {"rounds", "calls"} where known) or of an
// imported IRON figure (kind "iron_cost", no `row_schema`, no `timing`):
// one JSON object, no newline. Bytes that are not UTF-8 are replaced
// rather than thrown on.
std::string FigureLine(std::string_view kind, std::string_view platform,
                       std::string_view power_mode, std::string_view key,
                       std::optional<int64_t> row_schema,
                       const v1::Measurement& m,
                       const FigureTiming& timing = {});
// An export line of a builder verdict (kind "verdict"), as FigureLine.
std::string VerdictLine(std::string_view platform, std::string_view recipe_hash,
                        std::string_view environment, int64_t row_schema,
                        std::string_view verdict);

// One line of an import, parsed as JSON. Its fields are read one at a time,
// so the caller decides the order in which they are checked; every failure
// is InvalidArgument naming the line ("line N: ...").
class ImportLine {
 public:
  // InvalidArgument ("line N: not a JSON object") unless `text` is one JSON
  // object. `number` is the line's, from 1.
  static absl::StatusOr<ImportLine> Parse(std::string_view text, int number);
  ImportLine(ImportLine&& other) noexcept;
  ImportLine& operator=(ImportLine&& other) noexcept;
  ~ImportLine();

  // The field `name`; InvalidArgument when missing or of another type.
  absl::StatusOr<std::string> String(const char* name) const;
  absl::StatusOr<int64_t> Int(const char* name) const;
  // The "measurement" object, as MeasurementFromJson reads it.
  absl::StatusOr<v1::Measurement> Measurement() const;
  // The "timing" object: {"rounds": R, "calls": C}, counts of 0 to 2^32 -
  // 1, no other field; {0, 0} (unknown) when the line has none, as lines
  // exported before the cache kept Timings.
  absl::StatusOr<FigureTiming> Timing() const;

  int number() const { return number_; }

 private:
  ImportLine(std::unique_ptr<nlohmann::json> json, int number);
  std::unique_ptr<nlohmann::json> json_;  // never null but when moved from
  int number_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_STORE_CACHE_JSON_H_
