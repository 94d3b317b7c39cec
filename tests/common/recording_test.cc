#include "common/recording.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::Bin;
using testing::Const;
using testing::Int;
using testing::Name;
using testing::RichCalls;
using testing::SmallCalls;
using E = v1::Expression;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

// A fresh directory under the build tree, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        std::string(IRONTUNE_BINARY_DIR) + "/recording_test.XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_CASE("The fixtures are valid", "[recording]") {
  REQUIRE(ValidateRecording(SmallCalls()).ok());
  absl::Status rich = ValidateRecording(RichCalls());
  INFO(rich.ToString());
  REQUIRE(rich.ok());
}

TEST_CASE("Every format round-trips", "[recording]") {
  for (v1::Calls original : {SmallCalls(), RichCalls()}) {
    // What is written is sealed: format 2, with the counts of what it holds.
    SealRecording(original);
    absl::StatusOr<std::string> binary =
        SerializeRecording(original, RecordingFormat::kBinary);
    REQUIRE(binary.ok());

    absl::StatusOr<v1::Calls> from_binary =
        ParseRecording(*binary, RecordingFormat::kBinary);
    REQUIRE(from_binary.ok());
    absl::StatusOr<std::string> text =
        SerializeRecording(*from_binary, RecordingFormat::kText);
    REQUIRE(text.ok());
    CHECK(text->find("format_version: 2") != std::string::npos);

    absl::StatusOr<v1::Calls> from_text =
        ParseRecording(*text, RecordingFormat::kText);
    INFO(from_text.status().ToString());
    REQUIRE(from_text.ok());
    absl::StatusOr<std::string> json =
        SerializeRecording(*from_text, RecordingFormat::kJson);
    REQUIRE(json.ok());
    CHECK(json->find("\"format_version\": 2") != std::string::npos);

    absl::StatusOr<v1::Calls> from_json =
        ParseRecording(*json, RecordingFormat::kJson);
    INFO(from_json.status().ToString());
    REQUIRE(from_json.ok());
    absl::StatusOr<std::string> binary_again =
        SerializeRecording(*from_json, RecordingFormat::kBinary);
    REQUIRE(binary_again.ok());

    CHECK(MessageDifferencer::Equals(original, *from_binary));
    CHECK(MessageDifferencer::Equals(original, *from_text));
    CHECK(MessageDifferencer::Equals(original, *from_json));
    CHECK(*binary_again == *binary);
  }
}

TEST_CASE("Binary encoding is deterministic across map insertion order",
          "[recording]") {
  v1::Calls a = RichCalls();
  v1::Calls b = RichCalls();
  // Same entries, inserted in the other order.
  auto* values = b.mutable_calls(0)->mutable_values();
  values->clear();
  (*values)["rows"] = 1;
  (*values)["position"] = 17;
  REQUIRE(MessageDifferencer::Equals(a, b));
  absl::StatusOr<std::string> x =
      SerializeRecording(a, RecordingFormat::kBinary);
  absl::StatusOr<std::string> y =
      SerializeRecording(b, RecordingFormat::kBinary);
  REQUIRE(x.ok());
  REQUIRE(y.ok());
  CHECK(*x == *y);
}

TEST_CASE("Save and load through every extension", "[recording]") {
  TempDir dir;
  v1::Calls calls = RichCalls();
  SealRecording(calls);  // as every file is written
  for (const char* name : {"model.rec", "model.txtpb", "model.json"}) {
    INFO(name);
    std::string path = dir.File(name);
    REQUIRE(SaveRecording(calls, path).ok());
    // Saving again replaces the file in place.
    REQUIRE(SaveRecording(calls, path).ok());
    absl::StatusOr<v1::Calls> loaded = LoadRecording(path);
    INFO(loaded.status().ToString());
    REQUIRE(loaded.ok());
    CHECK(MessageDifferencer::Equals(calls, *loaded));
  }
  // No temporary is left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    INFO(entry.path().string());
    CHECK(entry.path().string().find(".tmp") == std::string::npos);
    ++files;
  }
  CHECK(files == 3);
}

TEST_CASE("Load errors name the path", "[recording]") {
  TempDir dir;
  SECTION("missing file is NotFound") {
    std::string path = dir.File("absent.rec");
    absl::StatusOr<v1::Calls> loaded = LoadRecording(path);
    CHECK(loaded.status().code() == absl::StatusCode::kNotFound);
    CHECK(Message(loaded.status()).rfind(path + ": ", 0) == 0);
  }
  SECTION("an invalid recording names path and field") {
    v1::Calls calls = SmallCalls();
    calls.mutable_calls(0)->mutable_recording()->mutable_steps(0)->set_op(7);
    std::string path = dir.File("bad.txtpb");
    REQUIRE(SaveRecording(calls, path).ok());
    absl::StatusOr<v1::Calls> loaded = LoadRecording(path);
    CHECK(loaded.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(Message(loaded.status()) ==
          path + ": calls[0].recording.steps[0].op: no operator 7");
  }
  SECTION("garbage names the path") {
    std::string path = dir.File("garbage.json");
    std::ofstream(path) << "{ not json";
    absl::StatusOr<v1::Calls> loaded = LoadRecording(path);
    CHECK(loaded.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(Message(loaded.status()).rfind(path + ": json: ", 0) == 0);
  }
  SECTION("a file over max_bytes is refused") {
    std::string path = dir.File("big.rec");
    REQUIRE(SaveRecording(RichCalls(), path).ok());
    RecordingLimits limits;
    limits.max_bytes = 100;
    absl::StatusOr<v1::Calls> loaded = LoadRecording(path, limits);
    CHECK(loaded.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(Message(loaded.status()),
               Catch::Contains("exceed the limit of 100"));
  }
  SECTION("an unknown extension") {
    absl::StatusOr<v1::Calls> loaded = LoadRecording(dir.File("model.pb"));
    CHECK(loaded.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(Message(loaded.status()), Catch::Contains("\".pb\""));
  }
  SECTION("saving into a missing directory fails, naming the path") {
    std::string path = dir.File("no/such/dir/model.rec");
    absl::Status saved = SaveRecording(SmallCalls(), path);
    CHECK_FALSE(saved.ok());
    CHECK(Message(saved).rfind(path + ": ", 0) == 0);
  }
}

TEST_CASE("Format from path", "[recording]") {
  CHECK(*RecordingFormatFromPath("a/b.rec") == RecordingFormat::kBinary);
  CHECK(*RecordingFormatFromPath("b.txtpb") == RecordingFormat::kText);
  CHECK(*RecordingFormatFromPath("/x.y/b.json") == RecordingFormat::kJson);
  CHECK_FALSE(RecordingFormatFromPath("b.rec.bak").ok());
  CHECK_FALSE(RecordingFormatFromPath("dir.rec/b").ok());
  CHECK_FALSE(RecordingFormatFromPath("").ok());
}

TEST_CASE("Parse refuses input over max_bytes before parsing", "[recording]") {
  absl::StatusOr<std::string> binary =
      SerializeRecording(SmallCalls(), RecordingFormat::kBinary);
  REQUIRE(binary.ok());
  RecordingLimits limits;
  limits.max_bytes = binary->size() - 1;
  for (RecordingFormat format :
       {RecordingFormat::kBinary, RecordingFormat::kText,
        RecordingFormat::kJson}) {
    absl::StatusOr<v1::Calls> parsed = ParseRecording(*binary, format, limits);
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(Message(parsed.status()), Catch::Contains("exceed the limit"));
  }
  limits.max_bytes = binary->size();
  CHECK(ParseRecording(*binary, RecordingFormat::kBinary, limits).ok());
}

TEST_CASE("Text and JSON parse errors are InvalidArgument", "[recording]") {
  absl::StatusOr<v1::Calls> text = ParseRecording(
      "format_version: 1\nbogus_field: 3\n", RecordingFormat::kText);
  CHECK(text.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Message(text.status()).rfind("text format: line 2 column", 0) == 0);
  absl::StatusOr<v1::Calls> json = ParseRecording(
      "{\"format_version\": 1, \"bogus\": 2}", RecordingFormat::kJson);
  CHECK(json.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Message(json.status()).rfind("json: ", 0) == 0);
}

TEST_CASE("DType sizes and names", "[recording]") {
  CHECK(DTypeSize(v1::DTYPE_BF16) == 2);
  CHECK(DTypeSize(v1::DTYPE_F16) == 2);
  CHECK(DTypeSize(v1::DTYPE_F32) == 4);
  CHECK(DTypeSize(v1::DTYPE_I8) == 1);
  CHECK(DTypeSize(v1::DTYPE_U8) == 1);
  CHECK(DTypeSize(v1::DTYPE_I16) == 2);
  CHECK(DTypeSize(v1::DTYPE_U16) == 2);
  CHECK(DTypeSize(v1::DTYPE_I32) == 4);
  CHECK(DTypeSize(v1::DTYPE_U32) == 4);
  CHECK(DTypeSize(v1::DTYPE_I64) == 8);
  CHECK(DTypeSize(v1::DTYPE_UNSPECIFIED) == 0);
  CHECK(DTypeSize(static_cast<v1::DType>(99)) == 0);
  CHECK(DTypeName(v1::DTYPE_BF16) == "bf16");
  CHECK(DTypeName(v1::DTYPE_U32) == "u32");
  CHECK(DTypeName(v1::DTYPE_I64) == "i64");
  CHECK(DTypeName(v1::DTYPE_UNSPECIFIED) == "unspecified");
  CHECK(DTypeName(static_cast<v1::DType>(99)) == "unspecified");
}

TEST_CASE("Valid variations are accepted", "[recording]") {
  v1::Calls calls = SmallCalls();
  SECTION("an operator no step runs") {
    *calls.add_operators() = calls.operators(0);
  }
  SECTION("an explicit length equal to the buffer's size") {
    calls.mutable_calls(0)
        ->mutable_recording()
        ->mutable_steps(0)
        ->mutable_refs(0)
        ->set_length(2048);
  }
  SECTION("an empty domain") {
    calls.mutable_operators(0)->mutable_tunables(0)->clear_domain();
  }
  SECTION("no points") { calls.mutable_calls(0)->clear_points(); }
  SECTION("multi-byte UTF-8 names") {
    calls.mutable_calls(0)->mutable_recording()->set_name(
        "d\xc3\xa9"
        "cod\xc3\xa9 \xe2\x9c\x93 \xf0\x9d\x84\x9e");
  }
  SECTION("a ref ending exactly at the end of its graph buffer") {
    v1::Recording* rec = calls.mutable_calls(0)->mutable_recording();
    rec->mutable_buffers(0)->set_nbytes(4096);
    rec->mutable_steps(0)->mutable_refs(0)->set_offset(2048);
    calls.mutable_calls(0)->mutable_contents(0)->set_data(
        std::string(4096, 'a'));
  }
  SECTION("weights summing to 1 within 1e-6") {
    calls.mutable_calls(0)->mutable_points(0)->set_weight(0.5 + 4e-7);
  }
  absl::Status status = ValidateRecording(calls);
  INFO(status.ToString());
  CHECK(status.ok());
}

struct Case {
  const char* what;
  std::function<void(v1::Calls&, RecordingLimits&)> mutate;
  // The message must start with this (often the whole message).
  std::string prefix;
};

v1::Operator& Op(v1::Calls& calls) { return *calls.mutable_operators(0); }
v1::Recording& Rec(v1::Calls& calls) {
  return *calls.mutable_calls(0)->mutable_recording();
}
v1::Timed& Call(v1::Calls& calls) { return *calls.mutable_calls(0); }

// An expression `depth` levels deep: ((position + 1) + 1) ...
E Chain(int depth) {
  E e = Name("position");
  for (int i = 1; i < depth; ++i) e = Bin(E::OP_ADD, std::move(e), Const(1));
  return e;
}

const std::vector<Case>& Cases() {
  using C = v1::Calls;
  using L = RecordingLimits;
  static const auto* cases = new std::vector<Case>{
      // Format version.
      {"missing format_version", [](C& c, L&) { c.clear_format_version(); },
       "format_version: missing (this build reads 1 and 2)"},
      {"unsupported format_version", [](C& c, L&) { c.set_format_version(7); },
       "format_version: 7 is not supported (this build reads 1 and 2)"},

      // Operators.
      {"empty class name", [](C& c, L&) { Op(c).clear_class_name(); },
       "operators[0].class_name: empty"},
      {"duplicate param",
       [](C& c, L&) { *Op(c).add_params() = Op(c).params(0); },
       "operators[0].params[1].name: duplicate \"size\""},
      {"empty param name",
       [](C& c, L&) { Op(c).mutable_params(0)->clear_name(); },
       "operators[0].params[0].name: empty"},
      {"param value unset",
       [](C& c, L&) { Op(c).mutable_params(0)->clear_value(); },
       "operators[0].params[0].value: unset"},
      {"duplicate tunable",
       [](C& c, L&) { *Op(c).add_tunables() = Op(c).tunables(0); },
       "operators[0].tunables[1].name: duplicate \"tile_size\""},
      {"tunable value unset",
       [](C& c, L&) { Op(c).mutable_tunables(0)->clear_value(); },
       "operators[0].tunables[0].value: unset"},
      {"tunable value outside its domain",
       [](C& c, L&) { *Op(c).mutable_tunables(0)->mutable_value() = Int(300); },
       "operators[0].tunables[0].value: int_value: 300 is not in its domain"},
      {"tunable value of another kind than its domain",
       [](C& c, L&) {
         Op(c).mutable_tunables(0)->mutable_value()->set_double_value(256);
       },
       "operators[0].tunables[0].value: "},
      {"domain entry unset",
       [](C& c, L&) { Op(c).mutable_tunables(0)->add_domain(); },
       "operators[0].tunables[0].domain[3]: unset"},
      {"pinned names no tunable", [](C& c, L&) { Op(c).add_pinned("tile"); },
       "operators[0].pinned[0]: no tunable \"tile\""},
      {"pinned twice",
       [](C& c, L&) {
         Op(c).add_pinned("tile_size");
         Op(c).add_pinned("tile_size");
       },
       "operators[0].pinned[1]: duplicate \"tile_size\""},
      {"duplicate operator buffer",
       [](C& c, L&) { Op(c).mutable_buffers(1)->set_name("a"); },
       "operators[0].buffers[1].name: duplicate \"a\""},
      {"role unspecified",
       [](C& c, L&) { Op(c).mutable_buffers(2)->clear_role(); },
       "operators[0].buffers[2].role: unspecified"},
      {"role unknown",
       [](C& c, L&) {
         Op(c).mutable_buffers(2)->set_role(static_cast<v1::BufferRole>(9));
       },
       "operators[0].buffers[2].role: unknown 9"},
      {"dtype unspecified",
       [](C& c, L&) { Op(c).mutable_buffers(1)->clear_dtype(); },
       "operators[0].buffers[1].dtype: unspecified"},
      {"dtype unknown",
       [](C& c, L&) {
         Op(c).mutable_buffers(1)->set_dtype(static_cast<v1::DType>(42));
       },
       "operators[0].buffers[1].dtype: unknown 42"},
      {"empty shape", [](C& c, L&) { Op(c).mutable_buffers(1)->clear_shape(); },
       "operators[0].buffers[1].shape: empty"},
      {"zero dim", [](C& c, L&) { Op(c).mutable_buffers(1)->add_shape(0); },
       "operators[0].buffers[1].shape[1]: 0, must be > 0"},
      {"rank over max_rank",
       [](C& c, L&) {
         v1::Buffer* b = Op(c).mutable_buffers(1);
         b->clear_shape();
         for (int i = 0; i < 9; ++i) b->add_shape(1);
       },
       "operators[0].buffers[1].shape: rank 9 exceeds the limit of 8"},
      {"byte size overflows 64 bits",
       [](C& c, L& l) {
         l.max_buffer_bytes = std::numeric_limits<uint64_t>::max();
         v1::Buffer* b = Op(c).mutable_buffers(1);
         b->clear_shape();
         b->add_shape(uint64_t{1} << 32);
         b->add_shape(uint64_t{1} << 32);
       },
       "operators[0].buffers[1].shape: the buffer's bytes exceed"},
      {"extent names no param",
       [](C& c, L&) {
         Op(c).mutable_buffers(0)->mutable_extents(0)->set_extent("rows");
       },
       "operators[0].buffers[0].extents[0].extent: no param \"rows\""},
      {"extent axis beyond rank",
       [](C& c, L&) {
         Op(c).mutable_buffers(0)->mutable_extents(0)->set_axis(1);
       },
       "operators[0].buffers[0].extents[0].axis: 1 is out of range for rank "
       "1"},
      {"duplicate call value",
       [](C& c, L&) { *Op(c).add_values() = Op(c).values(0); },
       "operators[0].values[1].name: duplicate \"n\""},
      {"call value without symbol",
       [](C& c, L&) { Op(c).mutable_values(0)->clear_symbol(); },
       "operators[0].values[0].symbol: empty"},
      {"bounds names no param",
       [](C& c, L&) { Op(c).mutable_values(0)->set_bounds("M"); },
       "operators[0].values[0].bounds: no param \"M\""},
      {"negative atol",
       [](C& c, L&) {
         Op(c).mutable_tolerance()->mutable_close()->set_atol(-1);
       },
       "operators[0].tolerance.close.atol: must be finite and >= 0"},
      {"NaN rtol",
       [](C& c, L&) {
         Op(c).mutable_tolerance()->mutable_close()->set_rtol(std::nan(""));
       },
       "operators[0].tolerance.close.rtol: must be finite and >= 0"},
      {"infinite atol",
       [](C& c, L&) {
         Op(c).mutable_tolerance()->mutable_close()->set_atol(
             std::numeric_limits<double>::infinity());
       },
       "operators[0].tolerance.close.atol: must be finite and >= 0"},

      // Recordings.
      {"duplicate recording value",
       [](C& c, L&) { Rec(c).add_values("position"); },
       "calls[0].recording.values[1]: duplicate \"position\""},
      {"empty recording value", [](C& c, L&) { Rec(c).add_values(""); },
       "calls[0].recording.values[1]: empty"},
      {"duplicate graph buffer",
       [](C& c, L&) { Rec(c).mutable_buffers(1)->set_name("x"); },
       "calls[0].recording.buffers[1].name: duplicate \"x\""},
      {"graph buffer over max_buffer_bytes",
       [](C& c, L&) { Rec(c).mutable_buffers(2)->set_nbytes(1ull << 40); },
       "calls[0].recording.buffers[2].nbytes: 1099511627776 exceeds the "
       "limit of"},
      {"step runs no operator",
       [](C& c, L&) { Rec(c).mutable_steps(0)->set_op(7); },
       "calls[0].recording.steps[0].op: no operator 7"},
      {"too few refs",
       [](C& c, L&) { Rec(c).mutable_steps(0)->mutable_refs()->RemoveLast(); },
       "calls[0].recording.steps[0].refs: 2 refs for operator 0's 3 buffers"},
      {"ref names no graph buffer",
       [](C& c, L&) {
         Rec(c).mutable_steps(0)->mutable_refs(1)->set_buffer("w");
       },
       "calls[0].recording.steps[0].refs[1].buffer: no graph buffer \"w\""},
      {"ref length differs from the buffer's size",
       [](C& c, L&) {
         Rec(c).mutable_steps(0)->mutable_refs(2)->set_length(100);
       },
       "calls[0].recording.steps[0].refs[2].length: 100 differs from the "
       "2048 bytes of operators[0].buffers[2]"},
      {"ref past the end of its graph buffer",
       [](C& c, L&) {
         Rec(c).mutable_steps(0)->mutable_refs(0)->set_offset(1);
       },
       "calls[0].recording.steps[0].refs[0].offset: 2048 bytes at offset 1"},
      {"ref offset near 2^64 (overflow-safe)",
       [](C& c, L&) {
         Rec(c).mutable_steps(0)->mutable_refs(0)->set_offset(
             std::numeric_limits<uint64_t>::max() - 10);
       },
       "calls[0].recording.steps[0].refs[0].offset: "},
      {"input names no graph buffer",
       [](C& c, L&) { Rec(c).set_inputs(1, "q"); },
       "calls[0].recording.inputs[1]: no graph buffer \"q\""},
      {"output names no graph buffer",
       [](C& c, L&) { Rec(c).set_outputs(0, "q"); },
       "calls[0].recording.outputs[0]: no graph buffer \"q\""},
      {"input twice", [](C& c, L&) { Rec(c).add_inputs("x"); },
       "calls[0].recording.inputs[2]: duplicate \"x\""},
      {"binding of no operator",
       [](C& c, L&) { Rec(c).mutable_bindings(0)->set_op(3); },
       "calls[0].recording.bindings[0].op: no operator 3"},
      {"binding of an operator no step runs",
       [](C& c, L&) {
         *c.add_operators() = c.operators(0);
         Rec(c).mutable_bindings(0)->set_op(1);
       },
       "calls[0].recording.bindings[0].op: operator 1 runs in no step"},
      {"binding of no call value",
       [](C& c, L&) { Rec(c).mutable_bindings(0)->set_member("m"); },
       "calls[0].recording.bindings[0].member: operator 0 has no value "
       "\"m\""},
      {"two bindings of one call value",
       [](C& c, L&) { *Rec(c).add_bindings() = Rec(c).bindings(0); },
       "calls[0].recording.bindings[1]: operator 0's value \"n\" is already "
       "bound"},
      {"expression names no recording value",
       [](C& c, L&) {
         *Rec(c).mutable_bindings(0)->mutable_expression() =
             Bin(E::OP_MIN, Const(1), Bin(E::OP_ADD, Const(1), Name("pos")));
       },
       "calls[0].recording.bindings[0].expression.binary.rhs.binary.rhs."
       "value: no recording value \"pos\""},
      {"expression node unset",
       [](C& c, L&) {
         Rec(c).mutable_bindings(0)->mutable_expression()->clear_node();
       },
       "calls[0].recording.bindings[0].expression: node unset"},
      {"expression operator unspecified",
       [](C& c, L&) {
         Rec(c)
             .mutable_bindings(0)
             ->mutable_expression()
             ->mutable_binary()
             ->clear_op();
       },
       "calls[0].recording.bindings[0].expression.binary.op: unspecified"},
      {"expression operator unknown",
       [](C& c, L&) {
         Rec(c)
             .mutable_bindings(0)
             ->mutable_expression()
             ->mutable_binary()
             ->set_op(static_cast<E::Op>(99));
       },
       "calls[0].recording.bindings[0].expression.binary.op: unknown 99"},
      {"expression deeper than max_expression_depth",
       [](C& c, L&) {
         *Rec(c).mutable_bindings(0)->mutable_expression() = Chain(33);
       },
       "calls[0].recording.bindings[0].expression: deeper than the limit of "
       "32"},
      {"division by zero at the call's values",
       [](C& c, L&) {
         *Rec(c).mutable_bindings(0)->mutable_expression() =
             Bin(E::OP_FLOOR_DIV, Const(100), Name("position"));
         (*Call(c).mutable_values())["position"] = 0;
         Call(c).clear_points();
       },
       "calls[0].recording.bindings[0].expression: division by zero at "
       "values {position=0}"},
      {"division by zero at a point's values",
       [](C& c, L&) {
         *Rec(c).mutable_bindings(0)->mutable_expression() =
             Bin(E::OP_FLOOR_DIV, Const(100), Name("position"));
       },
       "calls[0].recording.bindings[0].expression: division by zero at "
       "values {position=0} of points[0]"},
      {"overflow at a point's values",
       [](C& c, L&) {
         *Rec(c).mutable_bindings(0)->mutable_expression() =
             Bin(E::OP_MUL, Const(int64_t{1} << 62), Name("position"));
         (*Call(c).mutable_values())["position"] = 1;
         (*Call(c).mutable_points(0)->mutable_values())["position"] = 3;
       },
       "calls[0].recording.bindings[0].expression: overflow in "
       "4611686018427387904 * 3 at values {position=3} of points[0]"},

      // Calls.
      {"call value missing",
       [](C& c, L&) { Call(c).mutable_values()->clear(); },
       "calls[0].values: missing \"position\""},
      {"call value unknown",
       [](C& c, L&) { (*Call(c).mutable_values())["extra"] = 1; },
       "calls[0].values: unknown \"extra\""},
      {"content of no graph buffer",
       [](C& c, L&) { Call(c).mutable_contents(0)->set_buffer("w"); },
       "calls[0].contents[0].buffer: no graph buffer \"w\""},
      {"content of the wrong size",
       [](C& c, L&) { Call(c).mutable_contents(0)->set_data("0123456789"); },
       "calls[0].contents[0].data: 10 bytes for graph buffer \"x\" of 2048"},
      {"content twice",
       [](C& c, L&) { *Call(c).add_contents() = Call(c).contents(0); },
       "calls[0].contents[1].buffer: duplicate \"x\""},
      {"zero weight",
       [](C& c, L&) { Call(c).mutable_points(0)->set_weight(0); },
       "calls[0].points[0].weight: must be finite and > 0"},
      {"negative weight",
       [](C& c, L&) { Call(c).mutable_points(1)->set_weight(-0.5); },
       "calls[0].points[1].weight: must be finite and > 0"},
      {"NaN weight",
       [](C& c, L&) { Call(c).mutable_points(1)->set_weight(std::nan("")); },
       "calls[0].points[1].weight: must be finite and > 0"},
      {"weights not summing to 1",
       [](C& c, L&) { Call(c).mutable_points(1)->set_weight(0.4); },
       "calls[0].points: weights sum to 0.9, not 1"},
      {"point value missing",
       [](C& c, L&) { Call(c).mutable_points(1)->mutable_values()->clear(); },
       "calls[0].points[1].values: missing \"position\""},
      {"point value unknown",
       [](C& c, L&) {
         (*Call(c).mutable_points(1)->mutable_values())["b"] = 1;
         (*Call(c).mutable_points(1)->mutable_values())["a"] = 1;
       },
       "calls[0].points[1].values: unknown \"a\""},

      // Strings.
      {"class name not UTF-8",
       [](C& c, L&) { Op(c).set_class_name("GE\xc0\xafMM"); },
       "operators[0].class_name: not valid UTF-8"},
      {"recording name not UTF-8",
       [](C& c, L&) { Rec(c).set_name("\xed\xa0\x80"); },
       "calls[0].recording.name: not valid UTF-8"},
      {"domain string not UTF-8",
       [](C& c, L&) {
         Op(c).mutable_tunables(0)->add_domain()->set_string_value("\xff");
       },
       "operators[0].tunables[0].domain[3].string_value: not valid UTF-8"},
      {"point value name not UTF-8",
       [](C& c, L&) {
         (*Call(c).mutable_points(1)->mutable_values())["\xf4\x90\x80\x80"] = 1;
       },
       "calls[0].points[1].values["},

      // Limits.
      {"max_operators", [](C&, L& l) { l.max_operators = 0; },
       "operators: 1 operators exceed the limit of 0"},
      {"max_calls", [](C&, L& l) { l.max_calls = 0; },
       "calls: 1 calls exceed the limit of 0"},
      {"max_params", [](C&, L& l) { l.max_params = 0; },
       "operators[0].params: 1 params exceed the limit of 0"},
      {"max_tunables", [](C&, L& l) { l.max_tunables = 0; },
       "operators[0].tunables: 1 tunables exceed the limit of 0"},
      {"max_domain", [](C&, L& l) { l.max_domain = 2; },
       "operators[0].tunables[0].domain: 3 values exceed the limit of 2"},
      {"max_rank", [](C&, L& l) { l.max_rank = 0; },
       "operators[0].buffers[0].shape: rank 1 exceeds the limit of 0"},
      {"max_buffer_bytes", [](C&, L& l) { l.max_buffer_bytes = 2047; },
       "operators[0].buffers[0].shape: the buffer's bytes exceed the limit "
       "of 2047"},
      {"max_buffers", [](C&, L& l) { l.max_buffers = 2; },
       "calls[0].recording.buffers: 3 buffers exceed the limit of 2"},
      {"max_steps", [](C&, L& l) { l.max_steps = 0; },
       "calls[0].recording.steps: 1 steps exceed the limit of 0"},
      {"max_expression_depth", [](C&, L& l) { l.max_expression_depth = 2; },
       "calls[0].recording.bindings[0].expression: deeper than the limit of "
       "2"},
      {"max_points", [](C&, L& l) { l.max_points = 1; },
       "calls[0].points: 2 points exceed the limit of 1"},
      {"max_content_bytes", [](C&, L& l) { l.max_content_bytes = 2047; },
       "calls[0].contents: more than the limit of 2047 bytes"},
      {"max_expression_work",
       // 5 nodes at 3 value sets is 15 evaluations.
       [](C&, L& l) { l.max_expression_work = 14; },
       "calls[0].recording.bindings: evaluating the expressions takes more "
       "than the limit of 14"},
  };
  return *cases;
}

TEST_CASE("Each validation rule reports its field path", "[recording]") {
  for (const Case& c : Cases()) {
    INFO(c.what);
    v1::Calls calls = SmallCalls();
    RecordingLimits limits;
    c.mutate(calls, limits);
    absl::Status status = ValidateRecording(calls, limits);
    INFO(status.ToString());
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    CHECK(Message(status).rfind(c.prefix, 0) == 0);
  }
}

TEST_CASE("The limits just at their bounds pass", "[recording]") {
  RecordingLimits limits;
  limits.max_operators = 1;
  limits.max_calls = 1;
  limits.max_params = 1;
  limits.max_tunables = 1;
  limits.max_domain = 3;
  limits.max_rank = 1;
  limits.max_buffer_bytes = 2048;
  limits.max_buffers = 3;
  limits.max_steps = 1;
  limits.max_expression_depth = 3;
  limits.max_points = 2;
  limits.max_content_bytes = 2048;
  limits.max_expression_work = 15;
  absl::Status status = ValidateRecording(SmallCalls(), limits);
  INFO(status.ToString());
  CHECK(status.ok());
}

TEST_CASE("An expression at the depth limit survives binary and text",
          "[recording]") {
  v1::Calls calls = SmallCalls();
  *Rec(calls).mutable_bindings(0)->mutable_expression() = Chain(32);
  SealRecording(calls);
  REQUIRE(ValidateRecording(calls).ok());
  for (RecordingFormat format :
       {RecordingFormat::kBinary, RecordingFormat::kText}) {
    absl::StatusOr<std::string> bytes = SerializeRecording(calls, format);
    REQUIRE(bytes.ok());
    absl::StatusOr<v1::Calls> parsed = ParseRecording(*bytes, format);
    INFO(static_cast<int>(format) << ": " << parsed.status().ToString());
    REQUIRE(parsed.ok());
    CHECK(MessageDifferencer::Equals(calls, *parsed));
  }
}

TEST_CASE("JSON holds expressions up to its nesting limit", "[recording]") {
  // protobuf 3.21's JSON writer nests at most 64 messages: Calls, Timed,
  // Recording and Binding, then two per expression level.
  constexpr int kJsonMaxExpressionDepth = 31;
  v1::Calls calls = SmallCalls();
  *Rec(calls).mutable_bindings(0)->mutable_expression() =
      Chain(kJsonMaxExpressionDepth);
  SealRecording(calls);
  absl::StatusOr<std::string> json =
      SerializeRecording(calls, RecordingFormat::kJson);
  REQUIRE(json.ok());
  absl::StatusOr<v1::Calls> parsed =
      ParseRecording(*json, RecordingFormat::kJson);
  INFO(parsed.status().ToString());
  REQUIRE(parsed.ok());
  CHECK(MessageDifferencer::Equals(calls, *parsed));

  *Rec(calls).mutable_bindings(0)->mutable_expression() =
      Chain(kJsonMaxExpressionDepth + 1);
  json = SerializeRecording(calls, RecordingFormat::kJson);
  CHECK(json.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Message(json.status()).rfind("json: ", 0) == 0);
}

TEST_CASE("The example in docs/recording-format.md is valid", "[recording]") {
  std::ifstream in(std::string(IRONTUNE_SOURCE_DIR) +
                   "/docs/recording-format.md");
  REQUIRE(in.good());
  std::string doc((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  size_t example = doc.find("## Example");
  REQUIRE(example != std::string::npos);
  size_t begin = doc.find("```\n", example);
  REQUIRE(begin != std::string::npos);
  begin += 4;
  size_t end = doc.find("```", begin);
  REQUIRE(end != std::string::npos);
  absl::StatusOr<v1::Calls> parsed =
      ParseRecording(doc.substr(begin, end - begin), RecordingFormat::kText);
  INFO(parsed.status().ToString());
  REQUIRE(parsed.ok());
  // It is the small fixture without contents, as written (format 2).
  v1::Calls small = SmallCalls();
  small.mutable_calls(0)->clear_contents();
  SealRecording(small);
  CHECK(MessageDifferencer::Equals(small, *parsed));
}

TEST_CASE("ParseRecording validates what it parsed", "[recording]") {
  v1::Calls calls = SmallCalls();
  Rec(calls).mutable_steps(0)->set_op(7);
  for (RecordingFormat format :
       {RecordingFormat::kBinary, RecordingFormat::kText,
        RecordingFormat::kJson}) {
    absl::StatusOr<std::string> bytes = SerializeRecording(calls, format);
    REQUIRE(bytes.ok());
    absl::StatusOr<v1::Calls> parsed = ParseRecording(*bytes, format);
    CHECK(Message(parsed.status()) ==
          "calls[0].recording.steps[0].op: no operator 7");
  }
}

}  // namespace
}  // namespace irontune
