// Fuzz target: the recording loader (common/recording.h) on one format,
// chosen at build time by IRONTUNE_FUZZ_FORMAT (0: .rec binary, 1: .txtpb
// text, 2: .json). Whatever it accepts must validate again after a round
// trip through the binary encoding, to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/recording.h"
#include "tests/fuzz/fuzz_check.h"

#ifndef IRONTUNE_FUZZ_FORMAT
#define IRONTUNE_FUZZ_FORMAT 0
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  QuietProtobuf();
  using irontune::RecordingFormat;
  constexpr RecordingFormat kFormat =
      IRONTUNE_FUZZ_FORMAT == 0   ? RecordingFormat::kBinary
      : IRONTUNE_FUZZ_FORMAT == 1 ? RecordingFormat::kText
                                  : RecordingFormat::kJson;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<irontune::v1::Calls> calls =
      irontune::ParseRecording(bytes, kFormat);
  if (!calls.ok()) {
    FUZZ_CHECK(!calls.status().message().empty());
    return 0;
  }
  absl::StatusOr<std::string> binary =
      irontune::SerializeRecording(*calls, RecordingFormat::kBinary);
  FUZZ_CHECK(binary.ok());
  absl::StatusOr<irontune::v1::Calls> again =
      irontune::ParseRecording(*binary, RecordingFormat::kBinary);
  FUZZ_CHECK(again.ok());
  absl::StatusOr<std::string> binary_again =
      irontune::SerializeRecording(*again, RecordingFormat::kBinary);
  FUZZ_CHECK(binary_again.ok() && *binary_again == *binary);
  return 0;
}
