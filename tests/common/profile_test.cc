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

#include "common/families.h"
#include "common/shape.h"
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

// A profile as IRON's Profile.save writes it.
constexpr char kNpu2[] =
    R"({"entries": [
  {"operator": "GEMV", "M": 2048, "K": 8192, "num_batches": 1, "tile_size_input": 1, "tile_size_output": 256},
  {"operator": "MHA", "num_heads": 32, "num_KV_heads": 8, "d": 64, "seq_pad": 2048, "num_pipelines": 8},
  {"operator": "RMSNorm", "rows": 2048, "tile_size": 2048, "epsilon": 1e-05, "weighted": true, "num_aie_columns": 8},
  {"operator": "SiLU", "size": 16777216, "tile_size": 4096},
  {"operator": "ElementwiseAdd", "size": 2048, "tile_size": 512},
  {"operator": "GEMM", "M": 2048, "K": 2048, "N": 2048, "tile_m": 64}
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
  CHECK_FALSE(IsKnownTunable("Conv9d", "tile_size"));
  CHECK_FALSE(IsKnownTunable("RMSNorm", "tile_size"));
}

// ---------------------------------------------------------------------------
// Parsing

TEST_CASE("FromJson splits keys into dims and tunables", "[profile]") {
  auto profile = Profile::FromJson(
      R"({"entries": [{"operator": "GEMM", "tile_m": 64, "M": 2048,
          "use_scalar": true, "b_col_maj": false},
          {"operator": "Conv9d", "rows": 8, "tile_size": 0.25}]})");
  REQUIRE(profile.ok());
  REQUIRE(profile->size() == 2);
  const v1::ProfileEntry& gemm = profile->proto().entries(0);
  CHECK(gemm.operator_class() == "GEMM");
  REQUIRE(gemm.dims_size() == 3);
  CHECK(gemm.dims(0).name() == "M");
  CHECK(ValuesEqual(gemm.dims(0).value(), IntValue(2048)));
  CHECK(gemm.dims(1).name() == "use_scalar");
  CHECK(ValuesEqual(gemm.dims(1).value(), BoolValue(true)));
  CHECK(gemm.dims(2).name() == "b_col_maj");
  CHECK(ValuesEqual(gemm.dims(2).value(), BoolValue(false)));
  REQUIRE(gemm.tunables_size() == 1);
  CHECK(gemm.tunables(0).name() == "tile_m");

  // An unknown class: kept as it is, every key a dim, and reported.
  const v1::ProfileEntry& other = profile->proto().entries(1);
  REQUIRE(profile->notes().size() == 1);
  CHECK(profile->notes()[0] ==
        "entries[1]: no operator \"Conv9d\" in the catalogue; kept as it is");
  CHECK(other.operator_class() == "Conv9d");
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
      {R"({"entries": [{"operator": "GEMM", "M": 1, "tile_m": 32},
           {"operator": "GEMM", "tile_m": 64}, {"M": 2}]})",
       "entries[2]: no \"operator\""},
      {R"({"entries": [{"operator": 3}]})",
       "entries[0].operator: expected a string"},
      {R"({"entries": [{"operator": ""}]})", "entries[0].operator: empty"},
      // IRON's load rules.
      {R"({"entries": [{"operator": "GEMM", "M": 1}]})",
       "entries[0]: an entry for GEMM must give a tunable"},
      {R"({"entries": [{"operator": "Emit", "slots": 1}]})",
       "entries[0]: Emit has no tunables: IRON refuses any entry for it"},
      {R"({"entries": [{"operator": "GEMM", "tile_m": 32},
           {"operator": "MHA", "q_shims": 1, "num_pipelines": 8}]})",
       "entries[1].q_shims: MHA derives or fixes q_shims; a profile may not "
       "give it"},
      {R"({"entries": [{"operator": "GEMM", "dtype_in": "bf16",
           "tile_m": 32}]})",
       "entries[0].dtype_in: GEMM declares no field dtype_in"},
      {R"({"entries": [{"operator": "RMSNorm", "rows": 1,
           "tile_size": 2048, "tile_rows": 2}]})",
       "entries[0].tile_rows: RMSNorm declares no field tile_rows"},
      {R"({"entries": [{"operator": "GEMM", "M": 64, "tile_m": 32},
           {"operator": "GEMV", "M": 64, "tile_size_input": 1},
           {"operator": "GEMM", "M": 64, "tile_m": 16}]})",
       "entries[2] and entries[0] are equally specific and disagree on "
       "tile_m"},
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

TEST_CASE("Load then save of an unchanged IRON profile is byte-identical",
          "[profile]") {
  auto profile = Profile::FromJson(kNpu2);
  REQUIRE(profile.ok());
  CHECK(profile->ToJson() == kNpu2);
  // Python's float repr and ASCII escapes, as json.dumps writes them.
  const std::string floats =
      "{\"entries\": [\n  {\"operator\": \"AXPY\", \"size\": 1024, "
      "\"scalar_factor\": 1.003, \"tile_size\": 256},\n  {\"operator\": "
      "\"Clamp\", \"size\": 64, \"low\": -0.75, \"high\": 1e+16, "
      "\"tile_size\": 64},\n  {\"operator\": \"LeakyReLU\", \"size\": 64, "
      "\"alpha\": 0.0001, \"tile_size\": 64},\n  {\"operator\": \"X\", "
      "\"s\": \"caf\\u00e9 \\ud83d\\ude00\", \"d\": 3.0, \"e\": 1.5e-07}\n]}\n";
  auto iron = Profile::FromJson(floats);
  REQUIRE(iron.ok());
  CHECK(iron->ToJson() == floats);
}

TEST_CASE("ToJson orders keys: operator, dims, tunables", "[profile]") {
  auto profile = Profile::FromJson(
      R"({"entries": [{"tile_n": 32, "N": 512, "tile_m": 64,
          "operator": "GEMM", "K": 256, "M": 128}]})");
  REQUIRE(profile.ok());
  // As IRON's Profile.add keeps them: dims, then tunables, each in the
  // order the file gives them.
  const std::string line =
      R"({"operator": "GEMM", "N": 512, "K": 256, "M": 128, "tile_n": 32, )"
      R"("tile_m": 64})";
  CHECK(profile->ToJson() == "{\"entries\": [\n  " + line + "\n]}\n");
  CHECK(EntryToString(profile->proto().entries(0)) == line);

  // An unknown class: as given.
  Profile custom;
  custom.Add(Entry("Conv9d", {{"rows", IntValue(4)}, {"cols", IntValue(8)}},
                   {{"tile", IntValue(2)}, {"columns", IntValue(1)}}));
  CHECK(EntryToString(custom.proto().entries(0)) ==
        R"({"operator": "Conv9d", "rows": 4, "cols": 8, "tile": 2, )"
        R"("columns": 1})");
}

TEST_CASE("An empty profile", "[profile]") {
  const Profile empty;
  CHECK(empty.ToJson() == "{\"entries\": [\n  \n]}\n");
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

TEST_CASE("Entries keep their order, Put replaces in place", "[profile]") {
  auto profile = Profile::FromJson(kNpu2);
  REQUIRE(profile.ok());
  const std::vector<std::string> before = Lines(profile->ToJson());
  // The MHA entry, replaced: it stays second.
  profile->Put(Entry("MHA",
                     {{"num_heads", IntValue(32)},
                      {"num_KV_heads", IntValue(8)},
                      {"d", IntValue(64)},
                      {"seq_pad", IntValue(2048)}},
                     {{"num_pipelines", IntValue(4)}}));
  // A new entry: appended.
  profile->Put(Entry("Softmax", {{"rows", IntValue(32)}},
                     {{"num_aie_columns", IntValue(2)}}));
  const std::vector<std::string> after = Lines(profile->ToJson());
  REQUIRE(after.size() == before.size() + 1);
  CHECK(
      after[2] ==
      R"(  {"operator": "MHA", "num_heads": 32, "num_KV_heads": 8, "d": 64, "seq_pad": 2048, "num_pipelines": 4},)");
  for (size_t i : {1, 3, 4, 5}) CHECK(after[i] == before[i]);
  CHECK(after[6] == before[6] + ",");
  CHECK(after[7] ==
        R"(  {"operator": "Softmax", "rows": 32, "num_aie_columns": 2})");
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
          R"(  {"operator": "MHA", "num_heads": 32, "num_KV_heads": 8, "d": 64, "seq_pad": 2048, "num_pipelines": 4},)");
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
  CHECK(ReadFile(path) == kNpu2);
  CHECK(dir.Names() == std::vector<std::string>{"npu2.json"});

  auto loaded = Profile::Load(path);
  REQUIRE(loaded.ok());
  CHECK(loaded->size() == 6);
  CHECK(loaded->ToJson() == kNpu2);

  // Saving over an existing file replaces it and leaves no temporary.
  REQUIRE(Profile().Save(path).ok());
  CHECK(ReadFile(path) == "{\"entries\": [\n  \n]}\n");
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
  // In the catalogue's order: num_aie_columns, num_channels, tile_size.
  CHECK(add.new_tunables(0).name() == "num_aie_columns");
  CHECK(add.new_tunables(1).name() == "tile_size");
  CHECK(add.new_tunables(1).value().int_value() == 256);
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

namespace irontune {
namespace {

TEST_CASE("TunablesFor: per tunable, the most specific entry naming it",
          "[profile]") {
  Profile profile;
  profile.Add(
      Entry("GEMM", {},
            {{"tile_m", IntValue(64)}, {"num_aie_columns", IntValue(8)}}));
  profile.Add(
      Entry("GEMM", {{"M", IntValue(256)}}, {{"tile_m", IntValue(32)}}));
  profile.Add(Entry("GEMM", {{"M", IntValue(256)}, {"K", IntValue(2048)}},
                    {{"tile_k", IntValue(128)}}));
  // A param the call leaves out takes its default: b_col_maj false.
  profile.Add(Entry("GEMM", {{"b_col_maj", BoolValue(false)}},
                    {{"tile_n", IntValue(16)}}));
  profile.Add(Entry("GEMV", {}, {{"tile_size_input", IntValue(4)}}));
  auto got = profile.TunablesFor("GEMM", Params({{"M", IntValue(256)},
                                                 {"K", IntValue(2048)},
                                                 {"N", IntValue(512)}}));
  REQUIRE(got.ok());
  std::vector<std::string> text;
  for (const v1::Field& f : *got)
    text.push_back(f.name() + "=" + ValueToString(f.value()));
  CHECK(text == std::vector<std::string>{"tile_m=32", "num_aie_columns=8",
                                         "tile_k=128", "tile_n=16"});
  // Another shape: only the general entries.
  auto other = profile.TunablesFor(
      "GEMM", Params({{"M", IntValue(512)}, {"b_col_maj", BoolValue(true)}}));
  REQUIRE(other.ok());
  REQUIRE(other->size() == 2);
  CHECK(ValuesEqual((*other)[0].value(), IntValue(64)));

  // Equally specific entries that disagree: refused, naming both.
  profile.Add(
      Entry("GEMM", {{"K", IntValue(2048)}}, {{"tile_m", IntValue(16)}}));
  auto ambiguous = profile.TunablesFor(
      "GEMM", Params({{"M", IntValue(256)}, {"K", IntValue(2048)}}));
  REQUIRE_FALSE(ambiguous.ok());
  CHECK(std::string(ambiguous.status().message()) ==
        R"(GEMM: equally specific profile entries disagree on tile_m: )"
        R"(entries[1] {"operator": "GEMM", "M": 256, "tile_m": 32} and )"
        R"(entries[5] {"operator": "GEMM", "K": 2048, "tile_m": 16})");
}

// IRON raises as the model makes an operator under an ambiguous profile;
// CheckProfileFor finds it for every operator of a recording, and only for
// operators the tie covers.
TEST_CASE("CheckProfileFor refuses ties a recording's operators meet",
          "[profile]") {
  v1::Calls calls;
  calls.set_format_version(v1::FORMAT_VERSION_1);
  v1::Operator& gemm = *calls.add_operators();
  gemm.set_class_name("GEMM");
  for (const auto& [name, v] : std::vector<std::pair<std::string, int>>{
           {"M", 256}, {"K", 2048}, {"N", 512}}) {
    v1::Param& p = *gemm.add_params();
    p.set_name(name);
    *p.mutable_value() = IntValue(v);
  }
  Profile profile;
  profile.Add(
      Entry("GEMM", {{"M", IntValue(256)}}, {{"tile_m", IntValue(32)}}));
  // Equally specific, another dim, another tunable: no tie.
  profile.Add(
      Entry("GEMM", {{"K", IntValue(2048)}}, {{"tile_n", IntValue(64)}}));
  // A tie on tile_m a call of another shape would meet, not this one.
  profile.Add(
      Entry("GEMM", {{"M", IntValue(128)}}, {{"tile_m", IntValue(16)}}));
  const absl::Status none = CheckProfileFor(profile.proto(), calls);
  INFO(none.ToString());
  CHECK(none.ok());
  // A more specific entry settles a tie below it.
  profile.Add(
      Entry("GEMM", {{"N", IntValue(512)}}, {{"tile_m", IntValue(64)}}));
  const absl::Status tie = CheckProfileFor(profile.proto(), calls);
  REQUIRE_FALSE(tie.ok());
  CHECK(tie.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(tie.message()) ==
        R"(profile: GEMM: equally specific profile entries disagree on )"
        R"(tile_m: entries[0] {"operator": "GEMM", "M": 256, "tile_m": 32} )"
        R"(and entries[3] {"operator": "GEMM", "N": 512, "tile_m": 64}; )"
        R"(IRON refuses to construct operators[0] ()" +
            ShapeKey(gemm) + ") under it");
  // As IRON, entries are met in order: a more specific entry after the tie
  // comes too late; one before it settles it.
  const v1::ProfileEntry specific =
      Entry("GEMM", {{"M", IntValue(256)}, {"N", IntValue(512)}},
            {{"tile_m", IntValue(128)}});
  Profile late = profile;
  late.Add(specific);
  CHECK_FALSE(CheckProfileFor(late.proto(), calls).ok());
  Profile early;
  early.Add(specific);
  for (const v1::ProfileEntry& e : profile.proto().entries()) early.Add(e);
  const absl::Status settled = CheckProfileFor(early.proto(), calls);
  INFO(settled.ToString());
  CHECK(settled.ok());
}

// Conformance: for every class with tunables, an entry written in IRON's
// format from IRON's class definition (its first param, then every
// tunable at a value of its domain) loads, applies to an operator of that
// class and saves byte-identical; for a class without tunables it is
// refused.
TEST_CASE("every class's IRON entry loads, applies and saves", "[profile]") {
  for (const Family& f : AllFamilies()) {
    CAPTURE(f.class_name);
    std::string line = "{\"operator\": \"" + f.class_name + "\"";
    google::protobuf::RepeatedPtrField<v1::Field> params;
    const Dim& first = f.dims.front();
    line += ", \"" + first.name + "\": 64";
    *params.Add() = MakeField(first.name, IntValue(64));
    std::vector<std::pair<std::string, int64_t>> want;
    for (const std::string& t : f.tunables) {
      std::vector<v1::Value> domain = FamilyDomain(f, t, "npu2");
      REQUIRE_FALSE(domain.empty());
      const int64_t v = domain.back().int_value();
      line += ", \"" + t + "\": " + std::to_string(v);
      want.emplace_back(t, v);
    }
    line += "}";
    const std::string text = "{\"entries\": [\n  " + line + "\n]}\n";
    auto profile = Profile::FromJson(text);
    if (f.tunables.empty()) {
      CHECK_FALSE(profile.ok());
      continue;
    }
    REQUIRE(profile.ok());
    CHECK(profile->ToJson() == text);
    auto applied = profile->TunablesFor(f.class_name, params);
    REQUIRE(applied.ok());
    REQUIRE(applied->size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CHECK((*applied)[i].name() == want[i].first);
      CHECK((*applied)[i].value().int_value() == want[i].second);
    }
    // Another value of the first param: the entry does not apply.
    *params.Mutable(0)->mutable_value() = IntValue(65);
    auto none = profile->TunablesFor(f.class_name, params);
    REQUIRE(none.ok());
    CHECK(none->empty());
  }
}

}  // namespace
}  // namespace irontune
