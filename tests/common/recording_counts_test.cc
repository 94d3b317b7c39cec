// Format 2's counts: a recording cut short is refused, whichever top-level
// field boundary it was cut at; format 1 files still load.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common/recording.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

using google::protobuf::internal::WireFormatLite;
using testing::RichCalls;
using testing::SmallCalls;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

// The byte offsets at which each top-level field of `bytes` ends, read off
// the wire (not computed from the message), the last one being the size.
std::vector<size_t> FieldEnds(const std::string& bytes) {
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const uint8_t*>(bytes.data()),
      static_cast<int>(bytes.size()));
  std::vector<size_t> ends;
  while (uint32_t tag = in.ReadTag()) {
    REQUIRE(WireFormatLite::SkipField(&in, tag));
    ends.push_back(static_cast<size_t>(in.CurrentPosition()));
  }
  return ends;
}

TEST_CASE("Sealing counts what the recording holds", "[recording][counts]") {
  v1::Calls calls = RichCalls();
  CHECK_FALSE(IsSealed(calls));
  SealRecording(calls);
  CHECK(IsSealed(calls));
  CHECK(calls.format_version() == v1::FORMAT_VERSION_2);
  CHECK(calls.counts().operators() ==
        static_cast<uint32_t>(calls.operators_size()));
  CHECK(calls.counts().calls() == static_cast<uint32_t>(calls.calls_size()));
  CHECK(ValidateRecording(calls).ok());
  // Held more than counted: no longer sealed, and refused.
  *calls.add_calls() = calls.calls(0);
  CHECK_FALSE(IsSealed(calls));
  const absl::Status more = ValidateRecording(calls);
  CHECK(Message(more) == "counts.calls: the file says " +
                             std::to_string(calls.calls_size() - 1) +
                             " calls and holds " +
                             std::to_string(calls.calls_size()) +
                             "; counts do not match the file");
}

TEST_CASE("A binary recording cut at any top-level field is refused",
          "[recording][counts]") {
  for (const v1::Calls& calls : {SmallCalls(), RichCalls()}) {
    absl::StatusOr<std::string> bytes =
        SerializeRecording(calls, RecordingFormat::kBinary);
    REQUIRE(bytes.ok());
    REQUIRE(ParseRecording(*bytes, RecordingFormat::kBinary).ok());
    const std::vector<size_t> ends = FieldEnds(*bytes);
    // format_version, every operator, every call, counts.
    REQUIRE(ends.size() == static_cast<size_t>(2 + calls.operators_size() +
                                               calls.calls_size()));
    REQUIRE(ends.back() == bytes->size());
    for (size_t i = 0; i + 1 < ends.size(); ++i) {
      INFO("cut after field " << i << ", at byte " << ends[i]);
      absl::StatusOr<v1::Calls> cut =
          ParseRecording(std::string_view(*bytes).substr(0, ends[i]),
                         RecordingFormat::kBinary);
      REQUIRE_FALSE(cut.ok());
      CHECK(cut.status().code() == absl::StatusCode::kInvalidArgument);
      const std::string m = Message(cut.status());
      const bool named = m.starts_with("counts") || m.starts_with("operators:");
      INFO(m);
      CHECK(named);
    }
  }
}

TEST_CASE("A cut copy says what it lacks", "[recording][counts]") {
  // Two calls: cut after the first, the second lost with the counts.
  v1::Calls calls = SmallCalls();
  *calls.add_calls() = calls.calls(0);
  absl::StatusOr<std::string> bytes =
      SerializeRecording(calls, RecordingFormat::kBinary);
  REQUIRE(bytes.ok());
  const std::vector<size_t> ends = FieldEnds(*bytes);
  absl::StatusOr<v1::Calls> no_counts =
      ParseRecording(std::string_view(*bytes).substr(0, ends[ends.size() - 3]),
                     RecordingFormat::kBinary);
  REQUIRE_FALSE(no_counts.ok());
  CHECK(Message(no_counts.status())
            .starts_with("counts: missing; the recording is cut short"));

  // Counts moved first by hand: the cut then shows as a shortfall.
  v1::Calls sealed = calls;
  SealRecording(sealed);
  v1::Calls counts_only;
  *counts_only.mutable_counts() = sealed.counts();
  std::string reordered;
  REQUIRE(counts_only.AppendToString(&reordered));
  v1::Calls rest = sealed;
  rest.clear_counts();
  rest.mutable_calls()->RemoveLast();
  REQUIRE(rest.AppendToString(&reordered));
  absl::StatusOr<v1::Calls> short_one =
      ParseRecording(reordered, RecordingFormat::kBinary);
  REQUIRE_FALSE(short_one.ok());
  CHECK(Message(short_one.status()) ==
        "counts.calls: the file says 2 calls and holds 1; it is cut short "
        "(copied half-way?)");
}

TEST_CASE("Text and JSON recordings of format 2 need their counts",
          "[recording][counts]") {
  for (RecordingFormat format :
       {RecordingFormat::kText, RecordingFormat::kJson}) {
    absl::StatusOr<std::string> text = SerializeRecording(RichCalls(), format);
    REQUIRE(text.ok());
    REQUIRE(ParseRecording(*text, format).ok());
    // The writer puts counts last; drop everything from it on and close
    // what is left.
    const size_t at = text->rfind(
        format == RecordingFormat::kText ? "counts {" : "\"counts\"");
    REQUIRE(at != std::string::npos);
    std::string cut = text->substr(0, at);
    if (format == RecordingFormat::kJson) {
      cut = cut.substr(0, cut.rfind(',')) + "}";
    }
    absl::StatusOr<v1::Calls> parsed = ParseRecording(cut, format);
    REQUIRE_FALSE(parsed.ok());
    CHECK(Message(parsed.status()).starts_with("counts: missing"));
  }
}

TEST_CASE("Format 1 recordings load without counts and are written as 2",
          "[recording][counts]") {
  const v1::Calls old = RichCalls();
  REQUIRE(old.format_version() == v1::FORMAT_VERSION_1);
  std::string bytes;
  REQUIRE(old.SerializeToString(&bytes));  // as a format 1 writer wrote it
  absl::StatusOr<v1::Calls> loaded =
      ParseRecording(bytes, RecordingFormat::kBinary);
  REQUIRE(loaded.ok());
  CHECK(loaded->format_version() == v1::FORMAT_VERSION_1);

  absl::StatusOr<std::string> rewritten =
      SerializeRecording(*loaded, RecordingFormat::kBinary);
  REQUIRE(rewritten.ok());
  absl::StatusOr<v1::Calls> again =
      ParseRecording(*rewritten, RecordingFormat::kBinary);
  REQUIRE(again.ok());
  CHECK(again->format_version() == v1::FORMAT_VERSION_2);
  CHECK(IsSealed(*again));

  v1::Calls with_counts = old;
  with_counts.mutable_counts()->set_calls(1);
  CHECK(Message(ValidateRecording(with_counts))
            .starts_with("counts: set in a format 1 recording"));
}

}  // namespace
}  // namespace irontune
