// measure's arguments: the operator, its settings, per-call values.
#include "client/measure_command.h"

#include <catch2/catch.hpp>

#include "common/value.h"

namespace irontune {
namespace {

v1::Operator Gemm() {
  v1::Operator op;
  op.set_class_name("GEMM");
  v1::Tunable* t = op.add_tunables();
  t->set_name("tile_m");
  *t->mutable_value() = IntValue(64);
  v1::Tunable* b = op.add_tunables();
  b->set_name("b_col_maj");
  *b->mutable_value() = BoolValue(true);
  v1::Tunable* s = op.add_tunables();
  s->set_name("mode");
  *s->mutable_value() = StringValue("fast");
  return op;
}

TEST_CASE(
    "a setting names some tunables; the rest keep their recorded values") {
  absl::StatusOr<v1::Setting> s =
      ParseSetting(Gemm(), "tile_m=128, b_col_maj=false");
  REQUIRE(s.ok());
  REQUIRE(s->tunables_size() == 3);
  CHECK(s->tunables(0).value().int_value() == 128);
  CHECK(s->tunables(1).value().bool_value() == false);
  CHECK(s->tunables(2).value().string_value() == "fast");
}

TEST_CASE("bad settings are refused with what is wrong") {
  auto bad = [](const std::string& text) {
    absl::StatusOr<v1::Setting> s = ParseSetting(Gemm(), text);
    REQUIRE_FALSE(s.ok());
    return std::string(s.status().message());
  };
  CHECK_THAT(
      bad("tile_q=1"),
      Catch::Contains("no tunable tile_q (it has: tile_m, b_col_maj, mode)"));
  CHECK_THAT(bad("tile_m=big"), Catch::Contains("tile_m=big"));
  CHECK_THAT(bad("b_col_maj=1"), Catch::Contains("b_col_maj=1"));
  CHECK_THAT(bad("tile_m=1,tile_m=2"), Catch::Contains("given twice"));
  CHECK_THAT(bad("tile_m"), Catch::Contains("expected name=value"));
}

TEST_CASE("per-call values are name=integer") {
  google::protobuf::Map<std::string, int64_t> values;
  REQUIRE(ParseCallValues({"context=2048", "rows=256"}, &values).ok());
  CHECK(values["context"] == 2048);
  CHECK(values["rows"] == 256);
  CHECK_FALSE(ParseCallValues({"context"}, &values).ok());
  CHECK_FALSE(ParseCallValues({"context=long"}, &values).ok());
  CHECK_FALSE(ParseCallValues({"=3"}, &values).ok());
}

TEST_CASE("an operator is chosen by index or by shape") {
  v1::Calls calls;
  *calls.add_operators() = Gemm();
  calls.mutable_operators(0)->set_class_name("GEMV");
  CHECK(SelectOperator(calls, 0, "").ok());
  CHECK_THAT(std::string(SelectOperator(calls, 3, "").status().message()),
             Catch::Contains("has 1 operators"));
  CHECK_FALSE(SelectOperator(calls, -1, "GEMM M=1").ok());
  v1::Param* m = calls.mutable_operators(0)->add_params();
  m->set_name("M");
  m->mutable_value()->set_int_value(256);
  // A string param GEMV declares (IRON's epilogue).
  v1::Param* e = calls.mutable_operators(0)->add_params();
  e->set_name("epilogue");
  e->mutable_value()->set_string_value("gelu");
  CHECK(SelectOperator(calls, -1, "GEMV M=256").ok());
  CHECK(SelectOperator(calls, -1, "GEMV M=256 epilogue=gelu").ok());
  CHECK(SelectOperator(calls, -1, "GEMV epilogue=\"gelu\"").ok());
  CHECK_FALSE(SelectOperator(calls, -1, "GEMV epilogue=none").ok());
  CHECK_FALSE(SelectOperator(calls, -1, "GEMV M=512").ok());
}

}  // namespace
}  // namespace irontune
