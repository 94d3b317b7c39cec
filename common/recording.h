// Loading, validating and saving .rec recordings (proto/irontune/v1/
// recording.proto). Every function here is thread-compatible and keeps no
// state. Errors are absl::InvalidArgumentError whose message starts with the
// field path of what is wrong, e.g.
//   calls[0].recording.steps[3].op: no operator 7
// No input, however malformed, crashes, hangs or allocates without bound.
#ifndef IRONTUNE_COMMON_RECORDING_H_
#define IRONTUNE_COMMON_RECORDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

enum class RecordingFormat {
  kBinary,  // .rec: the protobuf binary encoding
  kText,    // .txtpb: the protobuf text format
  kJson,    // .json: the protobuf JSON mapping
};

// The format named by `path`'s extension (.rec, .txtpb, .json).
// Fails with InvalidArgument naming the extension otherwise.
absl::StatusOr<RecordingFormat> RecordingFormatFromPath(std::string_view path);

// Bounds every recording must respect, so hostile input cannot exhaust the
// daemon. The defaults are far above any real model's.
struct RecordingLimits {
  uint64_t max_bytes = 512ull << 20;  // whole encoded file
  int max_operators = 16384;
  int max_calls = 1024;
  int max_steps = 1 << 20;                  // per recording
  int max_buffers = 1 << 20;                // graph buffers per recording
  int max_params = 256;                     // per operator
  int max_tunables = 64;                    // per operator
  int max_domain = 4096;                    // values per tunable
  int max_rank = 8;                         // dims per buffer
  uint64_t max_buffer_bytes = 64ull << 30;  // one buffer
  // Levels of one expression (a leaf is 1). 32, the one figure the client,
  // irontuned and gRPC's parser (100 message levels, two an expression
  // level) agree on; validation never takes more, whatever this says.
  int max_expression_depth = 32;
  int max_points = 4096;                      // per call
  uint64_t max_content_bytes = 256ull << 20;  // summed over a call
  // Expression nodes evaluated while validating, summed over the file: each
  // binding's nodes times (1 + the call's points). Bounds validation time.
  uint64_t max_expression_work = 1ull << 26;
};

// Parses `bytes` in `format` and validates the result.
absl::StatusOr<v1::Calls> ParseRecording(
    std::string_view bytes, RecordingFormat format,
    const RecordingLimits& limits = RecordingLimits());

// Checks every cross-reference and bound of an already parsed `calls`
// (see docs/recording-format.md for the rules). OK or the first problem.
absl::Status ValidateRecording(
    const v1::Calls& calls, const RecordingLimits& limits = RecordingLimits());

// Reads `path` (format from its extension) and validates it. Errors name the
// path as well as the field.
absl::StatusOr<v1::Calls> LoadRecording(
    const std::string& path, const RecordingLimits& limits = RecordingLimits());

// Makes `calls` a format 2 recording counting what it holds now
// (FORMAT_VERSION_2, counts). A writer seals before it writes; a reader can
// then tell a file cut short from a whole one.
void SealRecording(v1::Calls& calls);

// Whether `calls` is format 2 and its counts agree with what it holds.
bool IsSealed(const v1::Calls& calls);

// Encodes `calls`, sealed (SealRecording; a copy is sealed where `calls`
// is not), in `format`: every file irontune writes is format 2. The binary
// encoding is deterministic (map
// entries sorted), so the same Calls always gives the same bytes. JSON fails
// with InvalidArgument for messages nested more than 64 deep (an expression
// deeper than 31 levels): protobuf 3.21's JSON writer stops there.
absl::StatusOr<std::string> SerializeRecording(const v1::Calls& calls,
                                               RecordingFormat format);

// Writes `calls` to `path` in the format its extension names, atomically
// (a temporary file renamed into place).
absl::Status SaveRecording(const v1::Calls& calls, const std::string& path);

// Byte size of one element of `dtype`; 0 for DTYPE_UNSPECIFIED or an unknown
// enum value.
uint64_t DTypeSize(v1::DType dtype);

// The buffer's declared size: product(shape) * DTypeSize(dtype) bytes;
// nullopt where the product overflows 64 bits.
std::optional<uint64_t> BufferBytes(const v1::Buffer& buffer);

// Lower-case name of `dtype` ("bf16", ...); "unspecified" otherwise.
std::string_view DTypeName(v1::DType dtype);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_RECORDING_H_
