#include "common/value.h"

#include <catch2/catch.hpp>
#include <compare>
#include <limits>
#include <string>

namespace irontune {
namespace {

TEST_CASE("ValueKey is typed and exact", "[value]") {
  CHECK(ValueKey(IntValue(64)) == "i:64");
  CHECK(ValueKey(BoolValue(true)) == "b:1");
  CHECK(ValueKey(BoolValue(false)) == "b:0");
  CHECK(ValueKey(StringValue("bf16")) == "s:4:bf16");
  CHECK(ValueKey(DoubleValue(0.5)) == "d:3fe0000000000000");
  CHECK(ValueKey(v1::Value()) == "unset");
  CHECK(ValueKey(IntValue(1)) != ValueKey(DoubleValue(1.0)));
  CHECK(ValueKey(IntValue(1)) != ValueKey(BoolValue(true)));
  CHECK(ValueKey(DoubleValue(0.0)) != ValueKey(DoubleValue(-0.0)));
  CHECK(ValueKey(DoubleValue(0.1)) != ValueKey(DoubleValue(0.1000001)));
  // The length prefix keeps a string from reading as another key.
  CHECK(ValueKey(StringValue("1:a")) == "s:3:1:a");
}

TEST_CASE("CompareValues orders by kind, then value", "[value]") {
  CHECK(std::is_lt(CompareValues(IntValue(1), IntValue(2))));
  CHECK(std::is_lt(CompareValues(IntValue(5), BoolValue(false))));
  CHECK(std::is_lt(CompareValues(StringValue("a"), DoubleValue(0))));
  CHECK(std::is_lt(CompareValues(DoubleValue(-0.0), DoubleValue(0.0))));
  CHECK(std::is_eq(CompareValues(StringValue("b"), StringValue("b"))));
  CHECK(std::is_eq(CompareValues(v1::Value(), v1::Value())));
}

TEST_CASE("AppendJsonString escapes as JSON", "[value]") {
  std::string out;
  AppendJsonString("a\"\\\b\f\n\r\t\x01z", &out);
  CHECK(out == R"("a\"\\\b\f\n\r\t\u0001z")");
  std::string text = "x=";
  AppendValueText(DoubleValue(64), &text);
  CHECK(text == "x=64.0");
  CHECK(ValueToString(DoubleValue(-std::numeric_limits<double>::infinity())) ==
        "-Infinity");
}

}  // namespace
}  // namespace irontune
