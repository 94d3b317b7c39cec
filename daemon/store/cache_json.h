// The JSON forms of a measurement: IRON's cost cache files, and irontune's
// own export lines.
#ifndef IRONTUNE_DAEMON_STORE_CACHE_JSON_H_
#define IRONTUNE_DAEMON_STORE_CACHE_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "irontune/v1/measurement.pb.h"

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

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_STORE_CACHE_JSON_H_
