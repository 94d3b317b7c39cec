#include "common/shape.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "common/value.h"
#include "tests/testing/operator_fixtures.h"

namespace irontune {
namespace {

// A Foo of param n and tunable t at 1 over the domain {1, 2, 4}.
v1::Operator Foo(int64_t n) {
  v1::Operator op = testing::Op("Foo", {{"n", n}}, {{"t", 1}});
  for (int64_t v : {1, 2, 4})
    *op.mutable_tunables(0)->add_domain() = IntValue(v);
  return op;
}

void AddCall(v1::Calls& calls, std::initializer_list<uint32_t> ops) {
  v1::Recording* rec = calls.add_calls()->mutable_recording();
  for (uint32_t op : ops) rec->add_steps()->set_op(op);
}

// Operators 0 and 2 share a shape, which 0 pins; operator 1 runs first.
v1::Calls ThreeOperators() {
  v1::Calls calls;
  *calls.add_operators() = Foo(1);
  calls.mutable_operators(0)->add_pinned("t");
  *calls.add_operators() = Foo(2);
  *calls.add_operators() = Foo(1);
  AddCall(calls, {1, 0, 1});
  AddCall(calls, {2, 0});
  return calls;
}

TEST_CASE("GroupShapes groups by class and dims in first-run order",
          "[shape]") {
  absl::StatusOr<std::vector<ShapeGroup>> groups =
      GroupShapes(ThreeOperators());
  REQUIRE(groups.ok());
  REQUIRE(groups->size() == 2);
  const ShapeGroup& a = (*groups)[0];
  CHECK(a.key == "Foo n=2");
  CHECK(a.class_name == "Foo");
  REQUIRE(a.members.size() == 1);
  CHECK(a.members[0].op == 1);
  CHECK(a.members[0].call == 0);
  CHECK(a.members[0].steps == 2);
  CHECK(a.steps == 2);
  CHECK(a.pinned.empty());
  const ShapeGroup& b = (*groups)[1];
  CHECK(b.key == "Foo n=1");
  REQUIRE(b.members.size() == 2);
  CHECK(b.members[0].op == 0);
  CHECK(b.members[0].call == 0);
  CHECK(b.members[0].steps == 2);
  CHECK(b.members[1].op == 2);
  CHECK(b.members[1].call == 1);
  CHECK(b.members[1].steps == 1);
  CHECK(b.steps == 3);
  CHECK(b.pinned == std::set<std::string>{"t"});
}

TEST_CASE("GroupShapes refuses a step of a missing operator", "[shape]") {
  v1::Calls calls = ThreeOperators();
  AddCall(calls, {0, 7});
  absl::StatusOr<std::vector<ShapeGroup>> groups = GroupShapes(calls);
  REQUIRE_FALSE(groups.ok());
  CHECK(groups.status().message() == "calls[2]: no operator 7");
}

TEST_CASE("SummarizeShapes counts steps and the unpinned space", "[shape]") {
  std::vector<ShapeSummary> shapes = SummarizeShapes(ThreeOperators());
  REQUIRE(shapes.size() == 2);
  CHECK(shapes[0].operators == std::vector<int>{1});
  CHECK(shapes[0].steps == 2);
  CHECK(shapes[0].space == 3);
  CHECK_FALSE(shapes[0].tunables.at(0).pinned);
  CHECK(shapes[1].operators == std::vector<int>{0, 2});
  CHECK(shapes[1].steps == 3);
  CHECK(shapes[1].tunables.at(0).pinned);
  CHECK(shapes[1].space == 1);
}

}  // namespace
}  // namespace irontune
