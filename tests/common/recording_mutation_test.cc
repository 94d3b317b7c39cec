// Malformed recordings: whatever the bytes, ParseRecording returns a status
// and never crashes, hangs or trips a sanitizer.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "common/expression.h"
#include "common/recording.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

using google::protobuf::util::MessageDifferencer;

constexpr uint32_t kSeed = 20260530;

// Silences protobuf's log (it reports every invalid UTF-8 string it
// refuses) while a test runs.
class QuietProtobuf {
 public:
  QuietProtobuf()
      : previous_(google::protobuf::SetLogHandler([](google::protobuf::LogLevel,
                                                     const char*, int,
                                                     const std::string&) {})) {}
  ~QuietProtobuf() { google::protobuf::SetLogHandler(previous_); }

 private:
  google::protobuf::LogHandler* previous_;
};

// One random change: truncation, bit flips, inserted or deleted bytes, or a
// byte overwritten with a boundary value.
std::string Mutate(const std::string& in, std::mt19937* rng) {
  std::string out = in;
  auto pick = [&](size_t n) {
    return std::uniform_int_distribution<size_t>(0, n)(*rng);
  };
  auto byte = [&] { return static_cast<char>(pick(255)); };
  int rounds = 1 + static_cast<int>(pick(3));
  for (int r = 0; r < rounds; ++r) {
    switch (pick(5)) {
      case 0:  // truncate
        out.resize(pick(out.size()));
        break;
      case 1: {  // flip 1-8 bits
        if (out.empty()) break;
        int flips = 1 + static_cast<int>(pick(7));
        for (int i = 0; i < flips; ++i) {
          out[pick(out.size() - 1)] ^= static_cast<char>(1u << pick(7));
        }
        break;
      }
      case 2: {  // insert 1-16 random bytes
        size_t at = pick(out.size());
        std::string bytes(1 + pick(15), '\0');
        for (char& c : bytes) c = byte();
        out.insert(at, bytes);
        break;
      }
      case 3: {  // delete up to 16 bytes
        if (out.empty()) break;
        size_t at = pick(out.size() - 1);
        out.erase(at, 1 + pick(15));
        break;
      }
      case 4: {  // overwrite a byte with a value parsers find interesting
        if (out.empty()) break;
        static constexpr char kValues[] = {'\x00', '\x7f', '\x80', '\xff',
                                           '\x0a', '\x12', '\x1a', '\x0b'};
        out[pick(out.size() - 1)] = kValues[pick(7)];
        break;
      }
      case 5: {  // duplicate a slice (repeated fields, doubled messages)
        if (out.empty()) break;
        size_t at = pick(out.size() - 1);
        std::string slice = out.substr(at, 1 + pick(63));
        out.insert(pick(out.size()), slice);
        break;
      }
    }
  }
  return out;
}

// Parses `bytes`; a success must survive validation and a round trip.
// Returns whether it parsed.
bool ParseSurvives(const std::string& bytes, RecordingFormat format) {
  QuietProtobuf quiet;
  absl::StatusOr<v1::Calls> parsed = ParseRecording(bytes, format);
  if (!parsed.ok()) {
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_FALSE(parsed.status().message().empty());
    return false;
  }
  CHECK(ValidateRecording(*parsed).ok());
  absl::StatusOr<std::string> again =
      SerializeRecording(*parsed, RecordingFormat::kBinary);
  REQUIRE(again.ok());
  absl::StatusOr<v1::Calls> reparsed =
      ParseRecording(*again, RecordingFormat::kBinary);
  REQUIRE(reparsed.ok());
  CHECK(MessageDifferencer::Equals(*parsed, *reparsed));
  return true;
}

void Append(std::string* out, uint64_t varint) {
  do {
    uint8_t b = varint & 0x7f;
    varint >>= 7;
    out->push_back(static_cast<char>(varint != 0 ? (b | 0x80) : b));
  } while (varint != 0);
}

// Builds a message from the inside out. The encoding is kept reversed so
// each wrap is an append, not a copy of everything inside.
class Onion {
 public:
  explicit Onion(const std::string& core) : rev_(core.rbegin(), core.rend()) {}

  // Makes what is built so far field `field` (length-delimited) of a new
  // outer message.
  void Wrap(uint32_t field) {
    std::string head;
    Append(&head, (uint64_t{field} << 3) | 2);
    Append(&head, rev_.size());
    rev_.append(head.rbegin(), head.rend());
  }
  void Prepend(const std::string& bytes) {
    rev_.append(bytes.rbegin(), bytes.rend());
  }
  std::string Bytes() const { return std::string(rev_.rbegin(), rev_.rend()); }

 private:
  std::string rev_;
};

// testing::SmallCalls() with its binding's expression replaced by one
// `depth` levels deep: ((1 + 1) + 1) + ..., written directly as bytes.
std::string DeepExpressionBytes(int depth) {
  v1::Calls calls = testing::SmallCalls();
  v1::Timed call = calls.calls(0);
  calls.clear_calls();
  v1::Recording rec = call.recording();
  call.clear_recording();
  rec.clear_bindings();

  Onion onion("\x08\x01");  // Expression.constant = 1
  for (int i = 1; i < depth; ++i) {
    onion.Wrap(2);  // Binary.lhs
    // Binary.op = OP_ADD, Binary.rhs = {constant: 1}
    onion.Prepend("\x08\x01\x1a\x02\x08\x01");
    onion.Wrap(3);  // Expression.binary
  }
  onion.Wrap(3);               // Binding.expression
  onion.Prepend("\x12\x01n");  // Binding.member = "n" (op 0)
  onion.Wrap(7);               // Recording.bindings
  onion.Prepend(rec.SerializeAsString());
  onion.Wrap(1);  // Timed.recording
  onion.Prepend(call.SerializeAsString());
  onion.Wrap(3);  // Calls.calls
  onion.Prepend(calls.SerializeAsString());
  return onion.Bytes();
}

TEST_CASE("Mutated binary recordings never crash", "[recording][mutation]") {
  absl::StatusOr<std::string> valid =
      SerializeRecording(testing::RichCalls(), RecordingFormat::kBinary);
  REQUIRE(valid.ok());
  REQUIRE(ParseSurvives(*valid, RecordingFormat::kBinary));

  std::mt19937 rng(kSeed);
  int parsed = 0;
  constexpr int kVariants = 5000;
  for (int i = 0; i < kVariants; ++i) {
    std::string variant = Mutate(*valid, &rng);
    if (ParseSurvives(variant, RecordingFormat::kBinary)) ++parsed;
  }
  // Both outcomes occur, so the test reaches the validator as well as the
  // parser's error paths.
  CHECK(parsed > 0);
  CHECK(parsed < kVariants);
}

TEST_CASE("Mutated copies of the example recording never crash",
          "[recording][mutation]") {
  QuietProtobuf quiet;
  std::ifstream file(
      std::string(IRONTUNE_SOURCE_DIR) + "/examples/llama-3.2-1b.rec",
      std::ios::binary);
  REQUIRE(file);
  const std::string valid((std::istreambuf_iterator<char>(file)),
                          std::istreambuf_iterator<char>());
  REQUIRE(ParseSurvives(valid, RecordingFormat::kBinary));
  std::mt19937 rng(kSeed + 1);
  int parsed = 0;
  constexpr int kVariants = 2000;
  for (int i = 0; i < kVariants; ++i) {
    if (ParseSurvives(Mutate(valid, &rng), RecordingFormat::kBinary)) ++parsed;
  }
  CHECK(parsed > 0);
  CHECK(parsed < kVariants);
}

TEST_CASE("Mutated text and JSON recordings never crash",
          "[recording][mutation]") {
  for (RecordingFormat format :
       {RecordingFormat::kText, RecordingFormat::kJson}) {
    absl::StatusOr<std::string> valid =
        SerializeRecording(testing::RichCalls(), format);
    REQUIRE(valid.ok());
    REQUIRE(ParseSurvives(*valid, format));
    std::mt19937 rng(kSeed + static_cast<int>(format));
    for (int i = 0; i < 1000; ++i) {
      ParseSurvives(Mutate(*valid, &rng), format);
    }
  }
}

TEST_CASE("Random bytes never crash", "[recording][mutation]") {
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<size_t> size(0, 512);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(size(rng), '\0');
    for (char& c : bytes) c = static_cast<char>(byte(rng));
    for (RecordingFormat format :
         {RecordingFormat::kBinary, RecordingFormat::kText,
          RecordingFormat::kJson}) {
      ParseSurvives(bytes, format);
    }
  }
}

TEST_CASE("Hostile binary encodings are refused", "[recording][mutation]") {
  auto refused = [](const std::string& bytes) {
    absl::StatusOr<v1::Calls> parsed =
        ParseRecording(bytes, RecordingFormat::kBinary);
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
  };
  SECTION("a length far beyond the input") {
    std::string bytes = "\x08\x01\x12";  // format_version, then operators
    Append(&bytes, uint64_t{1} << 62);
    bytes += "\x0a\x03GEMM";
    refused(bytes);
  }
  SECTION("a length just under 2 GiB") {
    std::string bytes = "\x08\x01\x1a";
    Append(&bytes, 0x7ffffff0);
    refused(bytes);
  }
  SECTION("a varint of more than ten bytes") {
    refused("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");
  }
  SECTION("a packed shape claiming a huge size") {
    std::string buffer = "\x22";  // Buffer.shape, packed
    Append(&buffer, uint64_t{1} << 40);
    buffer += "\x80\x80";
    std::string op = "\x2a";  // Operator.buffers
    Append(&op, buffer.size());
    std::string bytes = "\x08\x01\x12";
    Append(&bytes, op.size() + buffer.size());
    refused(bytes + op + buffer);
  }
  SECTION("an expression 100000 deep") { refused(DeepExpressionBytes(100000)); }
  SECTION("an expression past the nesting limit by one level") {
    refused(DeepExpressionBytes(90));
  }
  SECTION("100000 nested unknown groups") {
    std::string bytes = "\x08\x01";
    bytes.append(100000, '\x4b');  // field 9, start group
    refused(bytes);
  }
  SECTION("an end-group tag with no group") { refused("\x08\x01\x0c"); }
}

TEST_CASE("Deep expressions the parser accepts are judged by depth",
          "[recording][mutation]") {
  // The encoding itself is sound: shallow, it is a valid recording.
  absl::StatusOr<v1::Calls> shallow =
      ParseRecording(DeepExpressionBytes(3), RecordingFormat::kBinary);
  INFO(shallow.status().ToString());
  REQUIRE(shallow.ok());

  // Parses, then fails validation on depth, naming the binding.
  absl::StatusOr<v1::Calls> parsed =
      ParseRecording(DeepExpressionBytes(70), RecordingFormat::kBinary);
  REQUIRE_FALSE(parsed.ok());
  INFO(parsed.status().ToString());
  CHECK(std::string(parsed.status().message())
            .rfind("calls[0].recording.bindings[0].expression: deeper", 0) ==
        0);
}

TEST_CASE("Hostile text and JSON are refused", "[recording][mutation]") {
  auto refused = [](const std::string& bytes, RecordingFormat format) {
    absl::StatusOr<v1::Calls> parsed = ParseRecording(bytes, format);
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
  };
  constexpr int kDepth = 100000;
  std::string text = "format_version: 1 calls { recording { bindings { ";
  std::string json = R"({"format_version": 1, "calls": [{"recording": )"
                     R"({"bindings": [{"expression": )";
  text.reserve(text.size() + 30 * kDepth);
  json.reserve(json.size() + 30 * kDepth);
  for (int i = 0; i < kDepth; ++i) {
    text += "expression { binary { lhs { ";
    json += R"({"binary": {"lhs": )";
  }
  refused(text, RecordingFormat::kText);
  refused(json, RecordingFormat::kJson);
  refused(std::string(kDepth, '['), RecordingFormat::kJson);
  refused(std::string(kDepth, '{'), RecordingFormat::kJson);
  refused(std::string(kDepth, '{'), RecordingFormat::kText);
  refused(R"({"format_version": 1, "calls": [{"values": {"a": "1e999"}}]})",
          RecordingFormat::kJson);
  refused(
      "format_version: 1 calls { values { key: \"a\" value: "
      "99999999999999999999 } }",
      RecordingFormat::kText);
}

}  // namespace
}  // namespace irontune
