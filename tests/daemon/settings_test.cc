// Settings deduplicated by resolved design (daemon/tune/settings.h,
// common/design.h) and per-call values with a recording's addresses
// (OpValues, daemon/tune/search.h).
#include "daemon/tune/settings.h"

#include <google/protobuf/text_format.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/design.h"
#include "common/recording.h"
#include "common/value.h"
#include "daemon/tune/search.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

template <typename T>
T Parse(const std::string& text) {
  T out;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &out));
  return out;
}

// ElementwiseAdd over `size` elements, num_aie_columns left for the device
// (unset) with `domain`, num_channels 1 and tile_size 256.
v1::Operator Add(int64_t size, const std::vector<int64_t>& domain) {
  v1::Operator op;
  op.set_class_name("ElementwiseAdd");
  v1::Param* p = op.add_params();
  p->set_name("size");
  *p->mutable_value() = IntValue(size);
  v1::Tunable* cols = op.add_tunables();
  cols->set_name("num_aie_columns");
  for (int64_t v : domain) *cols->add_domain() = IntValue(v);
  v1::Tunable* channels = op.add_tunables();
  channels->set_name("num_channels");
  *channels->mutable_value() = IntValue(1);
  v1::Tunable* tile = op.add_tunables();
  tile->set_name("tile_size");
  *tile->mutable_value() = IntValue(256);
  return op;
}

std::vector<int64_t> Columns(const std::vector<TunableValues>& settings) {
  std::vector<int64_t> out;
  for (const TunableValues& s : settings) {
    out.push_back(s[0].value().kind_case() == v1::Value::kIntValue
                      ? s[0].value().int_value()
                      : -1);  // unset: the device's
  }
  return out;
}

TEST_CASE("Settings: two settings that resolve to one design are timed once",
          "[settings]") {
  const Platform npu1 = testing::PlatformOf("npu1");  // 4 columns
  // Unset, num_aie_columns resolves to the most of the 4 columns that
  // leave every core whole lines: 4 for 4096 elements, so 4 is the
  // recorded design again.
  auto settings =
      Settings(Add(4096, {1, 2, 4}), npu1, {}, RecordingSearchSpace());
  REQUIRE(settings.ok());
  CHECK(Columns(*settings) == std::vector<int64_t>{-1, 1, 2});
  // 1536 elements do not split over 4 columns of 256-element lines
  // (1536 / 1024), but do over 3 (IRON's resolve_columns takes the most
  // that fit): 3, and 4 is a setting of its own, refused by its
  // constraint only where the space checks one.
  auto odd =
      Settings(Add(1536, {1, 2, 3, 4}), npu1, {}, RecordingSearchSpace());
  REQUIRE(odd.ok());
  CHECK(Columns(*odd) == std::vector<int64_t>{-1, 1, 2, 4});
  CHECK(ResolvedDesign(Add(1536, {}), "npu1", 4)
            .tunables(0)
            .value()
            .int_value() == 3);
}

TEST_CASE("ResolvedDesign: defaults filled, derived params dropped",
          "[settings]") {
  v1::Operator op = Add(4096, {});
  op.mutable_tunables(1)->clear_value();  // num_channels: IRON's default 1
  v1::Operator same = Add(4096, {7});
  *same.mutable_tunables(0)->mutable_value() = IntValue(4);
  CHECK(ResolvedDesignBytes(op, "npu1", 4) ==
        ResolvedDesignBytes(same, "npu1", 4));
  *same.mutable_tunables(2)->mutable_value() = IntValue(512);
  CHECK(ResolvedDesignBytes(op, "npu1", 4) !=
        ResolvedDesignBytes(same, "npu1", 4));
  // A param GEMM derives (n_aie_rows) does not tell designs apart.
  v1::Operator gemm = testing::Gemm(256, 256, 256, 64, 64, 64, 1);
  v1::Operator with_rows = gemm;
  v1::Param* rows = with_rows.add_params();
  rows->set_name("n_aie_rows");
  *rows->mutable_value() = IntValue(4);
  CHECK(ResolvedDesignBytes(gemm, "npu2", 8) ==
        ResolvedDesignBytes(with_rows, "npu2", 8));
  CHECK(DesignBytes(gemm) != DesignBytes(with_rows));
  // The default identity is the resolved design's: num_channels left to
  // IRON's default is num_channels 1.
  const SearchSpace space = DefaultSearchSpace();
  const TunableValues open = RecordedSetting(op);
  const TunableValues given = RecordedSetting(Add(4096, {}));
  CHECK_FALSE(SettingsEqual(open, given));
  CHECK(space.identity(op, open) == space.identity(op, given));
  CHECK(space.identity(op, open) != space.identity(op, RecordedSetting(same)));
}

// ElementwiseAdd over 6144 = 3 * 2^11 elements at 1 column, 1 channel and
// tile_size 256, no domains recorded.
v1::Operator OpenAdd() {
  v1::Operator op = Add(6144, {});
  *op.mutable_tunables(0)->mutable_value() = IntValue(1);
  return op;
}

TEST_CASE("Settings: the catalogue's rules where the recording gives none",
          "[settings]") {
  const Platform npu2 = testing::PlatformOf("npu2");  // 8 columns
  // num_aie_columns and num_channels are Widths (8, 4, 2, 1), tile_size
  // Divisors(of=6144, step=64, cap=4096, span=3) from 256: 2048 ... 64.
  // A setting builds where columns x channels x tile divides 6144, i.e.
  // 2^a * 2^b * 2^t with a, b in 0..3, t in 6..11 and a + b + t <= 11:
  // for s = a + b, (6 - s) tiles, and 1, 2, 3, 4, 3, 2, 1 ways to make
  // s = 0..6: 6 + 10 + 12 + 12 + 6 + 2 + 0 = 48 settings.
  auto rules = Settings(OpenAdd(), npu2, {}, DefaultSearchSpace());
  REQUIRE(rules.ok());
  CHECK(rules->size() == 48);
  // The recording's own domain wins: tile_size in {256, 512} (t = 8, 9)
  // leaves s <= 3 (10 ways) and s <= 2 (6 ways).
  v1::Operator own = OpenAdd();
  for (int64_t v : {256, 512})
    *own.mutable_tunables(2)->add_domain() = IntValue(v);
  auto recorded = Settings(own, npu2, {}, DefaultSearchSpace());
  REQUIRE(recorded.ok());
  CHECK(recorded->size() == 16);
  // A pinned tunable is not searched: tile_size held at 256, s <= 3.
  v1::Operator pinned = OpenAdd();
  pinned.add_pinned("tile_size");
  auto held = Settings(pinned, npu2, {}, DefaultSearchSpace());
  REQUIRE(held.ok());
  CHECK(held->size() == 10);
  for (const TunableValues& setting : *held)
    CHECK(setting[2].value().int_value() == 256);
}

v1::Calls AddressCalls() {
  return Parse<v1::Calls>(R"pb(
    format_version: 1
    operators {
      class_name: "RMSNorm"
      values { name: "pos" symbol: "pos" }
      buffers {
        name: "x"
        role: BUFFER_ROLE_INOUT
        dtype: DTYPE_BF16
        shape: [ 32 ]
      }
    }
    calls {
      recording {
        name: "decode"
        values: [ "position" ]
        addresses: [ "table" ]
        buffers { name: "x" nbytes: 64 }
        steps {
          op: 0
          refs { buffer: "x" }
        }
        bindings {
          op: 0
          member: "pos"
          expression {
            binary {
              op: OP_ADD
              lhs { value: "position" }
              rhs { value: "table" }
            }
          }
        }
      }
      values { key: "position" value: 5 }
    }
  )pb");
}

TEST_CASE("OpValues: a recording's addresses read 0 unless given",
          "[settings]") {
  const v1::Calls calls = AddressCalls();
  REQUIRE(ValidateRecording(calls).ok());
  const v1::Timed& call = calls.calls(0);
  auto at_call = OpValues(call, 0);
  REQUIRE(at_call.ok());
  CHECK(*at_call == CallValues{{"pos", 5}});
  const CallValues given = {{"position", 5}, {"table", 4096}};
  auto at_given = OpValues(call, 0, &given);
  REQUIRE(at_given.ok());
  CHECK(*at_given == CallValues{{"pos", 4101}});
  // A name that is neither a value nor an address is still refused.
  v1::Calls bad = calls;
  bad.mutable_calls(0)->mutable_recording()->clear_addresses();
  const absl::Status status = ValidateRecording(bad);
  CHECK_FALSE(status.ok());
}

TEST_CASE("a recording's gates are checked field by field", "[settings]") {
  v1::Calls calls = AddressCalls();
  v1::Tolerance* t = calls.mutable_operators(0)->mutable_tolerance();
  t->mutable_bf16_ulps()->set_ulps(2);
  t->set_max_mismatch_frac(0.01);
  CHECK(ValidateRecording(calls).ok());
  t->set_max_mismatch_frac(1.0);
  CHECK_THAT(std::string(ValidateRecording(calls).message()),
             Catch::Contains("operators[0].tolerance.max_mismatch_frac: must "
                             "be in [0, 1), not 1"));
  t->set_max_mismatch_frac(0);
  t->mutable_bf16_ulps()->set_ulps(-1);
  CHECK_THAT(std::string(ValidateRecording(calls).message()),
             Catch::Contains("operators[0].tolerance.bf16_ulps.ulps: must be "
                             ">= 0, not -1"));
}

}  // namespace
}  // namespace irontune
