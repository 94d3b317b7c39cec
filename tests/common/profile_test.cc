#include "common/profile.h"

#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/value.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;

v1::Field MakeField(std::string name, v1::Value value) {
  v1::Field f;
  f.set_name(std::move(name));
  *f.mutable_value() = std::move(value);
  return f;
}

using FieldList = std::vector<std::pair<std::string, v1::Value>>;

v1::ProfileEntry Entry(std::string class_name, const FieldList& dims,
                       const FieldList& tunables) {
  v1::ProfileEntry e;
  e.set_operator_class(std::move(class_name));
  for (const auto& [n, v] : dims) *e.add_dims() = MakeField(n, v);
  for (const auto& [n, v] : tunables) *e.add_tunables() = MakeField(n, v);
  return e;
}

google::protobuf::RepeatedPtrField<v1::Field> Params(const FieldList& fields) {
  google::protobuf::RepeatedPtrField<v1::Field> out;
  for (const auto& [n, v] : fields) *out.Add() = MakeField(n, v);
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A fresh directory, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (fs::temp_directory_path() / "irontune-profile-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string File(const std::string& name) const {
    return (path_ / name).string();
  }
  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  fs::path path_;
};

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

constexpr char kNpu2[] =
    R"({"entries": [
{"operator": "GEMV", "M": 2048, "K": 8192, "num_batches": 1, "tile_size_input": 1, "tile_size_output": 256},
{"operator": "MHA", "num_heads": 32, "num_KV_heads": 8, "d": 64, "seq_pad": 2048, "num_pipelines": 8},
{"operator": "RMSNorm", "rows": 2048, "weighted": true, "tile_size": 2048, "num_aie_columns": 8},
{"operator": "SiLU", "size": 16777216, "tile_size": 4096},
{"operator": "ElementwiseAdd", "size": 2048, "tile_size": 512},
{"operator": "GEMM", "M": 2048, "K": 2048, "N": 2048, "tile_m": 64}
]}
)";

// The same profile in save order.
constexpr char kNpu2Saved[] =
    R"({"entries": [
{"operator": "ElementwiseAdd", "size": 2048, "tile_size": 512},
{"operator": "GEMM", "M": 2048, "K": 2048, "N": 2048, "tile_m": 64},
{"operator": "GEMV", "M": 2048, "K": 8192, "num_batches": 1, "tile_size_input": 1, "tile_size_output": 256},
{"operator": "MHA", "num_heads": 32, "num_KV_heads": 8, "d": 64, "seq_pad": 2048, "num_pipelines": 8},
{"operator": "RMSNorm", "rows": 2048, "weighted": true, "tile_size": 2048, "num_aie_columns": 8},
{"operator": "SiLU", "size": 16777216, "tile_size": 4096}
]}
)";

// ---------------------------------------------------------------------------
// Values

TEST_CASE("ValuesEqual is exact and typed", "[profile]") {
  CHECK(ValuesEqual(IntValue(64), IntValue(64)));
  CHECK_FALSE(ValuesEqual(IntValue(64), IntValue(32)));
  CHECK_FALSE(ValuesEqual(IntValue(1), DoubleValue(1.0)));
  CHECK_FALSE(ValuesEqual(IntValue(1), BoolValue(true)));
  CHECK_FALSE(ValuesEqual(StringValue("1"), IntValue(1)));
  CHECK(ValuesEqual(StringValue("bf16"), StringValue("bf16")));
  CHECK(ValuesEqual(DoubleValue(0.5), DoubleValue(0.5)));
  CHECK_FALSE(ValuesEqual(DoubleValue(0.0), DoubleValue(-0.0)));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(ValuesEqual(DoubleValue(nan), DoubleValue(nan)));
}

TEST_CASE("ValueToString renders JSON", "[profile]") {
  CHECK(ValueToString(IntValue(-64)) == "-64");
  CHECK(ValueToString(BoolValue(true)) == "true");
  CHECK(ValueToString(StringValue("bf16")) == "\"bf16\"");
  CHECK(ValueToString(StringValue("a\"b\\c\n\x01")) == R"("a\"b\\c\n\u0001")");
  CHECK(ValueToString(DoubleValue(0.5)) == "0.5");
  CHECK(ValueToString(DoubleValue(64)) == "64.0");
  CHECK(ValueToString(DoubleValue(0.1)) == "0.1");
  CHECK(ValueToString(DoubleValue(1e300)) == "1e+300");
  CHECK(ValueToString(v1::Value()) == "null");
}

TEST_CASE("IsKnownTunable asks the families", "[profile]") {
  CHECK(IsKnownTunable("GEMM", "tile_m"));
  CHECK(IsKnownTunable("GEMV", "tile_size_output"));
  CHECK_FALSE(IsKnownTunable("GEMM", "M"));
  CHECK_FALSE(IsKnownTunable("GEMM", "tile_size_output"));
  CHECK_FALSE(IsKnownTunable("Transpose", "tile_size"));
}

// ---------------------------------------------------------------------------
// Parsing

TEST_CASE("FromJson splits keys into dims and tunables", "[profile]") {
  auto profile = Profile::FromJson(
      R"({"entries": [{"operator": "GEMM", "tile_m": 64, "M": 2048,
          "dtype_in": "bf16", "b_col_maj": false},
          {"operator": "Transpose", "rows": 8, "tile_size": 0.25}]})");
  REQUIRE(profile.ok());
  REQUIRE(profile->size() == 2);
  const v1::ProfileEntry& gemm = profile->proto().entries(0);
  CHECK(gemm.operator_class() == "GEMM");
  REQUIRE(gemm.dims_size() == 3);
  CHECK(gemm.dims(0).name() == "M");
  CHECK(ValuesEqual(gemm.dims(0).value(), IntValue(2048)));
  CHECK(gemm.dims(1).name() == "dtype_in");
  CHECK(ValuesEqual(gemm.dims(1).value(), StringValue("bf16")));
  CHECK(gemm.dims(2).name() == "b_col_maj");
  CHECK(ValuesEqual(gemm.dims(2).value(), BoolValue(false)));
  REQUIRE(gemm.tunables_size() == 1);
  CHECK(gemm.tunables(0).name() == "tile_m");

  // An unknown class: every key is a dim.
  const v1::ProfileEntry& other = profile->proto().entries(1);
  CHECK(other.operator_class() == "Transpose");
  CHECK(other.dims_size() == 2);
  CHECK(other.tunables_size() == 0);
  CHECK(ValuesEqual(other.dims(1).value(), DoubleValue(0.25)));
}

TEST_CASE("FromJson takes a classifier", "[profile]") {
  auto profile = Profile::FromJson(
      R"({"entries": [{"operator": "Transpose", "rows": 8, "tile": 4}]})",
      [](std::string_view class_name, std::string_view key) {
        return class_name == "Transpose" && key == "tile";
      });
  REQUIRE(profile.ok());
  const v1::ProfileEntry& e = profile->proto().entries(0);
  REQUIRE(e.dims_size() == 1);
  CHECK(e.dims(0).name() == "rows");
  REQUIRE(e.tunables_size() == 1);
  CHECK(e.tunables(0).name() == "tile");
}

TEST_CASE("FromJson reads the int64 range exactly", "[profile]") {
  auto profile = Profile::FromJson(
      R"({"entries": [{"operator": "X", "max": 9223372036854775807,
          "min": -9223372036854775808, "e": 1e3, "f": 2.5E-1}]})");
  REQUIRE(profile.ok());
  const v1::ProfileEntry& e = profile->proto().entries(0);
  CHECK(ValuesEqual(e.dims(0).value(),
                    IntValue(std::numeric_limits<int64_t>::max())));
  CHECK(ValuesEqual(e.dims(1).value(),
                    IntValue(std::numeric_limits<int64_t>::min())));
  CHECK(ValuesEqual(e.dims(2).value(), DoubleValue(1000)));
  CHECK(ValuesEqual(e.dims(3).value(), DoubleValue(0.25)));
}

TEST_CASE("FromJson errors name the path", "[profile]") {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "invalid JSON"},
      {"not json", "invalid JSON"},
      {R"({"entries": [)", "invalid JSON"},
      {R"({"entries": []} x)", "invalid JSON"},
      {R"({"entries": [{"operator": "X", "a": 1e400}]})", "invalid JSON"},
      {"[]", "expected a JSON object"},
      {"42", "expected a JSON object"},
      {"{}", "no \"entries\""},
      {R"({"entries": {}})", "entries: expected an array"},
      {R"({"entries": 3})", "entries: expected an array"},
      {R"({"entries": null})", "entries: expected an array"},
      {R"({"entries": [], "version": 2})", "version: unknown key"},
      {R"({"entries": [], "entries": []})", "entries: duplicate key"},
      {R"({"entries": [{"operator": "X"}, 1]})",
       "entries[1]: expected an object"},
      {R"({"entries": [[]]})", "entries[0]: expected an object"},
      {R"({"entries": [{"operator": "GEMM", "M": 1}, {"operator": "GEMM"},
           {"M": 2}]})",
       "entries[2]: no \"operator\""},
      {R"({"entries": [{"operator": 3}]})",
       "entries[0].operator: expected a string"},
      {R"({"entries": [{"operator": ""}]})", "entries[0].operator: empty"},
      {R"({"entries": [{"operator": "GEMM", "M": 1, "M": 2}]})",
       "entries[0].M: duplicate key"},
      {R"({"entries": [{"operator": "GEMM", "operator": "GEMV"}]})",
       "entries[0].operator: duplicate key"},
      {R"({"entries": [{"operator": "A"}, {"operator": "B"},
           {"operator": "C"}, {"operator": "GEMM", "tile_m": [64]}]})",
       "entries[3].tile_m: expected a number, bool or string"},
      {R"({"entries": [{"operator": "GEMM", "tile_m": {"a": 1}}]})",
       "entries[0].tile_m: expected a number, bool or string"},
      {R"({"entries": [{"operator": "GEMM", "tile_m": null}]})",
       "entries[0].tile_m: expected a number, bool or string"},
      {R"({"entries": [{"operator": "X", "n": 9223372036854775808}]})",
       "entries[0].n: 9223372036854775808 is out of the int64 range"},
      {R"({"entries": [{"operator": "X", "n": -9223372036854775809}]})",
       "entries[0].n: -9223372036854775809 is out of the int64 range"},
      {R"({"entries": [{"operator": "X", "n": 123456789012345678901234}]})",
       "entries[0].n: 123456789012345678901234 is out of the int64 range"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    auto profile = Profile::FromJson(c.text);
    REQUIRE_FALSE(profile.ok());
    CHECK(profile.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(profile.status().message()),
               Catch::StartsWith(c.message));
  }
}

TEST_CASE("FromJson survives deep nesting and garbage", "[profile]") {
  const std::string deep(200000, '[');
  CHECK_FALSE(Profile::FromJson(deep).ok());
  const std::string deep_objects = [] {
    std::string s;
    for (int i = 0; i < 100000; ++i) s += "{\"a\":";
    return s;
  }();
  CHECK_FALSE(Profile::FromJson(deep_objects).ok());
  auto nested_value =
      Profile::FromJson(R"({"entries": [{"operator": "X", "a": )" + deep);
  REQUIRE_FALSE(nested_value.ok());
  CHECK_THAT(std::string(nested_value.status().message()),
             Catch::StartsWith("entries[0].a: expected"));

  // Every byte changed in turn, and random truncations: never a crash, and
  // whatever parses saves to text that parses back the same.
  const std::string text = kNpu2;
  std::mt19937 rng(3);
  for (size_t i = 0; i < text.size(); ++i) {
    std::string mutated = text;
    mutated[i] = static_cast<char>(rng());
    auto profile = Profile::FromJson(mutated);
    if (profile.ok()) {
      auto again = Profile::FromJson(profile->ToJson());
      REQUIRE(again.ok());
      CHECK(again->ToJson() == profile->ToJson());
    }
    // (Only the final newline may go.)
    if (i + 1 < text.size())
      CHECK_FALSE(Profile::FromJson(text.substr(0, i)).ok());
  }
}

// ---------------------------------------------------------------------------
// Saving

TEST_CASE("ToJson writes one entry a line in save order", "[profile]") {
  auto profile = Profile::FromJson(kNpu2);
  REQUIRE(profile.ok());
  CHECK(profile->ToJson() == kNpu2Saved);
}

TEST_CASE("ToJson orders keys: operator, dims, tunables", "[profile]") {
  auto profile = Profile::FromJson(
      R"({"entries": [{"tile_n": 32, "zeta": 1, "N": 512, "tile_m": 64,
          "alpha": "x", "operator": "GEMM", "K": 256, "M": 128}]})");
  REQUIRE(profile.ok());
  const std::string line =
      R"({"operator": "GEMM", "M": 128, "K": 256, "N": 512, "alpha": "x", )"
      R"("zeta": 1, "tile_m": 64, "tile_n": 32})";
  CHECK(profile->ToJson() == "{\"entries\": [\n" + line + "\n]}\n");
  CHECK(EntryToString(profile->proto().entries(0)) == line);

  // An unknown class: dims and tunables by name.
  Profile custom;
  custom.Add(Entry("Transpose", {{"rows", IntValue(4)}, {"cols", IntValue(8)}},
                   {{"tile", IntValue(2)}, {"columns", IntValue(1)}}));
  CHECK(EntryToString(custom.proto().entries(0)) ==
        R"({"operator": "Transpose", "cols": 8, "rows": 4, "columns": 1, )"
        R"("tile": 2})");
}

TEST_CASE("An empty profile", "[profile]") {
  const Profile empty;
  CHECK(empty.ToJson() == "{\"entries\": [\n]}\n");
  auto back = Profile::FromJson(empty.ToJson());
  REQUIRE(back.ok());
  CHECK(back->size() == 0);
}

TEST_CASE("Values survive a round trip", "[profile]") {
  Profile profile;
  profile.Add(
      Entry("X",
            {{"i", IntValue(-5)},
             {"d1", DoubleValue(0.1)},
             {"d2", DoubleValue(64)},
             {"d3", DoubleValue(-0.0)},
             {"d4", DoubleValue(1e-300)},
             {"d5", DoubleValue(1.0 / 3)},
             {"d6", DoubleValue(std::numeric_limits<double>::max())},
             {"b", BoolValue(true)},
             {"s", StringValue("quote\" back\\ nl\n tab\t \x1f caf\xc3\xa9")}},
            {}));
  auto back = Profile::FromJson(profile.ToJson());
  REQUIRE(back.ok());
  REQUIRE(back->size() == 1);
  const v1::ProfileEntry& original = profile.proto().entries(0);
  const v1::ProfileEntry& read = back->proto().entries(0);
  REQUIRE(read.dims_size() == original.dims_size());
  for (const v1::Field& want : original.dims()) {
    auto it = std::find_if(
        read.dims().begin(), read.dims().end(),
        [&](const v1::Field& f) { return f.name() == want.name(); });
    REQUIRE(it != read.dims().end());
    CAPTURE(want.name(), ValueToString(want.value()));
    CHECK(ValuesEqual(it->value(), want.value()));
  }
  CHECK(back->ToJson() == profile.ToJson());
}

TEST_CASE("Save order does not depend on entry order", "[profile]") {
  Profile base;
  base.Add(Entry(
      "GEMM",
      {{"M", IntValue(2048)}, {"K", IntValue(2048)}, {"N", IntValue(2048)}},
      {{"tile_m", IntValue(64)}}));
  base.Add(Entry(
      "GEMM",
      {{"M", IntValue(1024)}, {"K", IntValue(2048)}, {"N", IntValue(2048)}},
      {{"tile_m", IntValue(32)}}));
  base.Add(Entry("GEMM", {{"M", IntValue(1024)}, {"K", IntValue(2048)}},
                 {{"tile_m", IntValue(32)}}));
  base.Add(Entry("GEMM",
                 {{"M", IntValue(1024)},
                  {"K", IntValue(2048)},
                  {"N", IntValue(2048)},
                  {"dtype_in", StringValue("i8")}},
                 {{"tile_m", IntValue(16)}}));
  base.Add(Entry("GEMM", {{"M", IntValue(1024)}, {"N", IntValue(64)}},
                 {{"tile_m", IntValue(16)}}));
  base.Add(Entry("GEMV", {{"M", IntValue(2048)}, {"K", IntValue(8192)}},
                 {{"tile_size_input", IntValue(1)}}));
  base.Add(Entry("GEMV", {{"M", IntValue(2048)}, {"K", IntValue(8192)}},
                 {{"tile_size_input", IntValue(2)}}));
  base.Add(Entry("Transpose", {{"rows", DoubleValue(2.5)}}, {}));
  base.Add(Entry("Transpose", {{"rows", IntValue(3)}}, {}));
  base.Add(Entry("Transpose", {{"rows", StringValue("a")}}, {}));
  base.Add(Entry("Transpose", {{"rows", BoolValue(true)}}, {}));
  base.Add(Entry("Transpose", {{"cols", IntValue(3)}}, {}));
  const std::string expected = base.ToJson();
  CHECK(Lines(expected).size() == 14);

  std::vector<v1::ProfileEntry> entries(base.proto().entries().begin(),
                                        base.proto().entries().end());
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(entries.begin(), entries.end(), rng);
    Profile shuffled;
    for (v1::ProfileEntry e : entries) {
      // Also shuffle the fields within each entry.
      std::shuffle(e.mutable_dims()->begin(), e.mutable_dims()->end(), rng);
      shuffled.Add(std::move(e));
    }
    CHECK(shuffled.ToJson() == expected);
  }

  // Fewer dims first on a tie; a smaller M first.
  const std::vector<std::string> lines = Lines(expected);
  CHECK(lines[1] ==
        R"({"operator": "GEMM", "M": 1024, "K": 2048, "tile_m": 32},)");
  CHECK(
      lines[2] ==
      R"({"operator": "GEMM", "M": 1024, "K": 2048, "N": 2048, "tile_m": 32},)");
  CHECK(
      lines[3] ==
      R"({"operator": "GEMM", "M": 1024, "K": 2048, "N": 2048, "dtype_in": "i8", "tile_m": 16},)");
}

TEST_CASE("Changing one tunable changes one line", "[profile]") {
  auto profile = Profile::FromJson(kNpu2);
  REQUIRE(profile.ok());
  v1::Profile changed = profile->proto();
  for (v1::ProfileEntry& e : *changed.mutable_entries()) {
    if (e.operator_class() != "MHA") continue;
    for (v1::Field& t : *e.mutable_tunables()) {
      if (t.name() == "num_pipelines") t.mutable_value()->set_int_value(4);
    }
  }
  const std::vector<std::string> before = Lines(profile->ToJson());
  const std::vector<std::string> after = Lines(Profile(changed).ToJson());
  REQUIRE(before.size() == after.size());
  int differing = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i] != after[i]) {
      ++differing;
      CHECK(
          after[i] ==
          R"({"operator": "MHA", "num_heads": 32, "num_KV_heads": 8, "d": 64, "seq_pad": 2048, "num_pipelines": 4},)");
    }
  }
  CHECK(differing == 1);
}

TEST_CASE("Save and Load round trip", "[profile]") {
  TempDir dir;
  const std::string path = dir.File("npu2.json");
  auto profile = Profile::FromJson(kNpu2);
  REQUIRE(profile.ok());
  REQUIRE(profile->Save(path).ok());
  CHECK(ReadFile(path) == kNpu2Saved);
  CHECK(dir.Names() == std::vector<std::string>{"npu2.json"});

  auto loaded = Profile::Load(path);
  REQUIRE(loaded.ok());
  CHECK(loaded->size() == 6);
  CHECK(loaded->ToJson() == kNpu2Saved);

  // Saving over an existing file replaces it and leaves no temporary.
  REQUIRE(Profile().Save(path).ok());
  CHECK(ReadFile(path) == "{\"entries\": [\n]}\n");
  CHECK(dir.Names() == std::vector<std::string>{"npu2.json"});
}

TEST_CASE("Load and Save errors name the path", "[profile]") {
  TempDir dir;
  const std::string missing = dir.File("missing.json");
  auto profile = Profile::Load(missing);
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(profile.status().message()), Catch::Contains(missing));

  const std::string bad = dir.File("bad.json");
  WriteFile(bad, R"({"entries": [{"operator": "GEMM", "M": [1]}]})");
  profile = Profile::Load(bad);
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(profile.status().message()) ==
        bad + ": entries[0].M: expected a number, bool or string");

  const absl::Status saved = Profile().Save(dir.File("no/such/dir.json"));
  CHECK_FALSE(saved.ok());
  CHECK_THAT(std::string(saved.message()), Catch::Contains("no/such/dir"));
}

// ---------------------------------------------------------------------------
// Matching

TEST_CASE("Match picks the most specific matching entry", "[profile]") {
  Profile profile;
  profile.Add(Entry("GEMM", {}, {{"tile_m", IntValue(16)}}));
  profile.Add(
      Entry("GEMM", {{"M", IntValue(2048)}}, {{"tile_m", IntValue(32)}}));
  profile.Add(Entry("GEMM", {{"M", IntValue(2048)}, {"K", IntValue(2048)}},
                    {{"tile_m", IntValue(64)}}));
  profile.Add(Entry("GEMM", {{"M", IntValue(2048)}, {"K", IntValue(8192)}},
                    {{"tile_m", IntValue(128)}}));
  profile.Add(Entry("GEMV", {{"M", IntValue(2048)}, {"K", IntValue(2048)}},
                    {{"tile_size_input", IntValue(1)}}));

  auto tile_m = [&](const FieldList& params) -> int64_t {
    auto match = profile.Match("GEMM", Params(params));
    REQUIRE(match.ok());
    if (*match == nullptr) return -1;
    REQUIRE((*match)->tunables_size() == 1);
    return (*match)->tunables(0).value().int_value();
  };
  CHECK(tile_m({{"M", IntValue(2048)},
                {"K", IntValue(2048)},
                {"N", IntValue(512)}}) == 64);
  CHECK(tile_m({{"N", IntValue(512)},
                {"K", IntValue(8192)},
                {"M", IntValue(2048)}}) == 128);
  CHECK(tile_m({{"M", IntValue(2048)}, {"K", IntValue(4096)}}) == 32);
  CHECK(tile_m({{"M", IntValue(1024)}, {"K", IntValue(2048)}}) == 16);
  // A dim the params lack does not match; nor does an equal double.
  CHECK(tile_m({{"K", IntValue(2048)}}) == 16);
  CHECK(tile_m({{"M", DoubleValue(2048)}, {"K", IntValue(2048)}}) == 16);

  auto none = profile.Match("Softmax", Params({{"rows", IntValue(1)}}));
  REQUIRE(none.ok());
  CHECK(*none == nullptr);
}

TEST_CASE("Match refuses equally specific entries that disagree", "[profile]") {
  Profile profile;
  profile.Add(
      Entry("GEMM", {{"M", IntValue(2048)}}, {{"tile_m", IntValue(32)}}));
  profile.Add(
      Entry("GEMM", {{"K", IntValue(512)}}, {{"tile_m", IntValue(64)}}));
  profile.Add(Entry("GEMM", {{"M", IntValue(1024)}, {"K", IntValue(512)}},
                    {{"tile_m", IntValue(16)}}));

  auto conflict = profile.Match(
      "GEMM", Params({{"M", IntValue(2048)}, {"K", IntValue(512)}}));
  REQUIRE_FALSE(conflict.ok());
  CHECK(conflict.status().code() == absl::StatusCode::kInvalidArgument);
  const std::string message(conflict.status().message());
  CHECK_THAT(message, Catch::Contains(R"({"operator": "GEMM", "M": 2048, )"
                                      R"("tile_m": 32})"));
  CHECK_THAT(message, Catch::Contains(R"({"operator": "GEMM", "K": 512, )"
                                      R"("tile_m": 64})"));

  // A more specific entry settles it.
  auto settled = profile.Match(
      "GEMM", Params({{"M", IntValue(1024)}, {"K", IntValue(512)}}));
  REQUIRE(settled.ok());
  REQUIRE(*settled != nullptr);
  CHECK((*settled)->tunables(0).value().int_value() == 16);
}

TEST_CASE("Match accepts identical duplicates", "[profile]") {
  Profile profile;
  profile.Add(Entry(
      "GEMV", {{"M", IntValue(2048)}},
      {{"tile_size_input", IntValue(1)}, {"num_aie_columns", IntValue(4)}}));
  profile.Add(Entry(
      "GEMV", {{"M", IntValue(2048)}},
      {{"num_aie_columns", IntValue(4)}, {"tile_size_input", IntValue(1)}}));
  auto match = profile.Match("GEMV", Params({{"M", IntValue(2048)}}));
  REQUIRE(match.ok());
  CHECK(*match == &profile.proto().entries(0));
}

// ---------------------------------------------------------------------------
// Diffs

TEST_CASE("DiffProfiles sorts entries into added, changed, removed, kept",
          "[profile]") {
  Profile before;
  before.Add(Entry("SiLU", {{"size", IntValue(8192)}},
                   {{"tile_size", IntValue(1024)}}));
  before.Add(Entry("GEMV", {{"M", IntValue(2048)}, {"K", IntValue(8192)}},
                   {{"tile_size_input", IntValue(1)}}));
  before.Add(Entry(
      "GEMM", {{"M", IntValue(64)}, {"K", IntValue(64)}, {"N", IntValue(64)}},
      {{"tile_m", IntValue(16)}}));
  before.Add(Entry("ElementwiseAdd", {{"size", IntValue(2048)}},
                   {{"tile_size", IntValue(512)}}));
  before.Add(Entry("ElementwiseAdd", {{"size", IntValue(1024)}},
                   {{"tile_size", IntValue(512)}}));

  Profile after;
  // Dims in another order: the same entry.
  after.Add(Entry("GEMV", {{"K", IntValue(8192)}, {"M", IntValue(2048)}},
                  {{"tile_size_input", IntValue(1)}}));
  after.Add(Entry("SiLU", {{"size", IntValue(8192)}},
                  {{"tile_size", IntValue(4096)}}));
  after.Add(
      Entry("ElementwiseAdd", {{"size", IntValue(2048)}},
            {{"tile_size", IntValue(256)}, {"num_aie_columns", IntValue(8)}}));
  after.Add(Entry("RMSNorm", {{"rows", IntValue(2048)}},
                  {{"tile_size", IntValue(2048)}}));
  after.Add(Entry("MHA", {{"num_heads", IntValue(32)}},
                  {{"num_pipelines", IntValue(8)}}));
  after.Add(Entry("ElementwiseAdd", {{"size", IntValue(1024)}},
                  {{"tile_size", IntValue(512)}}));

  const v1::ProfileDiff diff = DiffProfiles(before, after);
  REQUIRE(diff.added_size() == 2);
  CHECK(EntryToString(diff.added(0)) ==
        R"({"operator": "MHA", "num_heads": 32, "num_pipelines": 8})");
  CHECK(EntryToString(diff.added(1)) ==
        R"({"operator": "RMSNorm", "rows": 2048, "tile_size": 2048})");

  REQUIRE(diff.changed_size() == 2);
  const v1::EntryChange& add = diff.changed(0);
  CHECK(add.operator_class() == "ElementwiseAdd");
  REQUIRE(add.dims_size() == 1);
  CHECK(add.dims(0).value().int_value() == 2048);
  REQUIRE(add.old_tunables_size() == 1);
  CHECK(add.old_tunables(0).value().int_value() == 512);
  REQUIRE(add.new_tunables_size() == 2);
  CHECK(add.new_tunables(0).name() == "tile_size");
  CHECK(add.new_tunables(0).value().int_value() == 256);
  CHECK(add.new_tunables(1).name() == "num_aie_columns");
  CHECK_FALSE(add.has_gain());
  CHECK(diff.changed(1).operator_class() == "SiLU");
  CHECK(diff.changed(1).new_tunables(0).value().int_value() == 4096);

  REQUIRE(diff.removed_size() == 1);
  CHECK(diff.removed(0).operator_class() == "GEMM");

  REQUIRE(diff.kept_size() == 2);
  CHECK(EntryToString(diff.kept(0)) ==
        R"({"operator": "ElementwiseAdd", "size": 1024, "tile_size": 512})");
  CHECK(diff.kept(1).operator_class() == "GEMV");
  // Kept entries come out in canonical field order.
  CHECK(diff.kept(1).dims(0).name() == "M");
  CHECK_FALSE(diff.has_model_gain());
}

TEST_CASE("DiffProfiles tells dims of different types apart", "[profile]") {
  Profile before;
  before.Add(Entry("X", {{"n", IntValue(1)}}, {{"t", IntValue(1)}}));
  Profile after;
  after.Add(Entry("X", {{"n", DoubleValue(1)}}, {{"t", IntValue(1)}}));
  const v1::ProfileDiff diff = DiffProfiles(before, after);
  CHECK(diff.added_size() == 1);
  CHECK(diff.removed_size() == 1);
  CHECK(diff.kept_size() == 0);
  CHECK(diff.changed_size() == 0);

  const v1::ProfileDiff same = DiffProfiles(before, before);
  CHECK(same.kept_size() == 1);
  CHECK(same.added_size() + same.removed_size() + same.changed_size() == 0);
}

}  // namespace
}  // namespace irontune
