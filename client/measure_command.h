// `measure`: time settings of one operator of a recording on irontuned,
// beside its recorded setting. See docs/client.md.
#ifndef IRONTUNE_CLIENT_MEASURE_COMMAND_H_
#define IRONTUNE_CLIENT_MEASURE_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/command.h"
#include "irontune/v1/recording.pb.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// Registers `measure` on `app`. `ctx` outlives the parse and run.
void AddMeasureCommand(CLI::App& app, const CommandContext& ctx);

// The operator `measure` times: calls.operators(op) when `op` >= 0, else
// the first operator of the class `shape` starts with whose dims include
// every name=value after it ("GEMM M=256 K=2048 N=8192"; a string dim may
// be quoted as `inspect` prints it, or not). InvalidArgument naming what is
// missing or out of range.
absl::StatusOr<v1::Operator> SelectOperator(const v1::Calls& calls, int op,
                                            const std::string& shape);

// Parses a setting "tile_m=128,tile_k=64" against `op`: a full set of
// `op`'s tunables in its order, those not named keeping their recorded
// values. Each value is read as the recorded value's kind (int, bool
// true/false, double, string). InvalidArgument for an unknown tunable, a
// repeated one or a value of the wrong kind.
absl::StatusOr<v1::Setting> ParseSetting(const v1::Operator& op,
                                         const std::string& text);

// Parses "name=123" per-call values into `values`. InvalidArgument for a
// missing '=' or a value that is not an integer.
absl::Status ParseCallValues(
    const std::vector<std::string>& texts,
    google::protobuf::Map<std::string, int64_t>* values);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_MEASURE_COMMAND_H_
