#include "common/expression.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

using testing::Bin;
using testing::Const;
using testing::Name;
using E = v1::Expression;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

absl::StatusOr<int64_t> Eval(const E& e, const CallValues& values = {}) {
  return EvaluateExpression(e, values);
}

int64_t Value(E::Op op, int64_t a, int64_t b) {
  absl::StatusOr<int64_t> result = Eval(Bin(op, Const(a), Const(b)));
  INFO(a << " op" << static_cast<int>(op) << " " << b << ": "
         << result.status().ToString());
  REQUIRE(result.ok());
  return *result;
}

std::string Error(const E& e, const CallValues& values = {}) {
  absl::StatusOr<int64_t> result = Eval(e, values);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(result.status().message());
}

// A chain `depth` levels deep, ((position + 1) + 1) + ..., built and torn
// down without recursion, so its depth is bounded by memory, not stack.
class DeepChain {
 public:
  explicit DeepChain(int depth) : root_(std::make_unique<E>()) {
    E* node = root_.get();
    for (int i = 1; i < depth; ++i) {
      E::Binary* binary = node->mutable_binary();
      binary->set_op(E::OP_ADD);
      binary->mutable_rhs()->set_constant(1);
      node = binary->mutable_lhs();
    }
    node->set_value("position");
  }
  ~DeepChain() {
    std::unique_ptr<E> node = std::move(root_);
    while (node != nullptr && node->has_binary()) {
      // Detach the child first, so each destructor sees a shallow node.
      std::unique_ptr<E> child(node->mutable_binary()->release_lhs());
      node = std::move(child);
    }
  }
  const E& root() const { return *root_; }

 private:
  std::unique_ptr<E> root_;
};

TEST_CASE("Leaves", "[expression]") {
  CHECK(*Eval(Const(-3)) == -3);
  CHECK(*Eval(Name("position"), {{"position", 42}}) == 42);
  CHECK(Error(Name("rows"), {{"position", 42}}) == "unknown value \"rows\"");
  CHECK(Error(E()) == "node unset");
}

TEST_CASE("Arithmetic", "[expression]") {
  CHECK(Value(E::OP_ADD, 2, 3) == 5);
  CHECK(Value(E::OP_SUB, 2, 3) == -1);
  CHECK(Value(E::OP_MUL, -4, 3) == -12);
  CHECK(Value(E::OP_MIN, -4, 3) == -4);
  CHECK(Value(E::OP_MIN, 9, 3) == 3);
  CHECK(Value(E::OP_MAX, -4, 3) == 3);
  CHECK(Value(E::OP_MAX, kMin, kMax) == kMax);
}

TEST_CASE("Division and modulo floor like Python", "[expression]") {
  CHECK(Value(E::OP_FLOOR_DIV, 7, 2) == 3);
  CHECK(Value(E::OP_FLOOR_DIV, -7, 2) == -4);
  CHECK(Value(E::OP_FLOOR_DIV, 7, -2) == -4);
  CHECK(Value(E::OP_FLOOR_DIV, -7, -2) == 3);
  CHECK(Value(E::OP_FLOOR_DIV, -8, 2) == -4);
  CHECK(Value(E::OP_FLOOR_DIV, 0, -5) == 0);
  CHECK(Value(E::OP_FLOOR_DIV, kMin, 1) == kMin);
  CHECK(Value(E::OP_FLOOR_DIV, kMin, 2) == kMin / 2);
  CHECK(Value(E::OP_FLOOR_DIV, kMax, -1) == -kMax);
  CHECK(Value(E::OP_MOD, 7, 3) == 1);
  CHECK(Value(E::OP_MOD, -7, 3) == 2);
  CHECK(Value(E::OP_MOD, 7, -3) == -2);
  CHECK(Value(E::OP_MOD, -7, -3) == -1);
  CHECK(Value(E::OP_MOD, -6, 3) == 0);
  CHECK(Value(E::OP_MOD, kMin, -1) == 0);
  CHECK(Value(E::OP_MOD, kMin, kMax) == kMax - 1);
  CHECK(Value(E::OP_MOD, kMax, kMin) == -1);
  // a == (a // b) * b + a % b on a grid of signs.
  for (int64_t a = -9; a <= 9; ++a) {
    for (int64_t b : {-4, -3, -1, 1, 2, 5}) {
      int64_t q = Value(E::OP_FLOOR_DIV, a, b);
      int64_t r = Value(E::OP_MOD, a, b);
      INFO(a << " " << b);
      CHECK(q * b + r == a);
      CHECK((r == 0 || (r < 0) == (b < 0)));
    }
  }
}

TEST_CASE("Errors", "[expression]") {
  CHECK(Error(Bin(E::OP_FLOOR_DIV, Const(1), Const(0))) == "division by zero");
  CHECK(Error(Bin(E::OP_MOD, Const(1), Const(0))) == "modulo by zero");
  CHECK(Error(Bin(E::OP_FLOOR_DIV, Const(kMin), Const(-1))) ==
        "overflow in -9223372036854775808 // -1");
  CHECK(Error(Bin(E::OP_ADD, Const(kMax), Const(1))) ==
        "overflow in 9223372036854775807 + 1");
  CHECK(Error(Bin(E::OP_SUB, Const(kMin), Const(1))) ==
        "overflow in -9223372036854775808 - 1");
  CHECK(
      Error(Bin(E::OP_MUL, Const(int64_t{1} << 32), Const(int64_t{1} << 31))) ==
      "overflow in 4294967296 * 2147483648");
  CHECK(Error(Bin(E::OP_MUL, Const(-1), Const(kMin))) ==
        "overflow in -1 * -9223372036854775808");
  CHECK(Error(Bin(E::OP_UNSPECIFIED, Const(1), Const(1))) ==
        "operator unspecified");
  CHECK(Error(Bin(static_cast<E::Op>(42), Const(1), Const(1))) ==
        "unknown operator 42");
  // Errors deep in a tree come up unchanged.
  CHECK(Error(Bin(E::OP_ADD, Const(1),
                  Bin(E::OP_MOD, Name("position"), Name("zero"))),
              {{"position", 3}, {"zero", 0}}) == "modulo by zero");
}

TEST_CASE("Depth is limited", "[expression]") {
  DeepChain at_limit(64);
  CHECK(ExpressionDepth(at_limit.root()) == 64);
  absl::StatusOr<int64_t> ok = Eval(at_limit.root(), {{"position", 1}});
  REQUIRE(ok.ok());
  CHECK(*ok == 64);

  DeepChain over(65);
  CHECK(ExpressionDepth(over.root()) == 65);
  CHECK(Error(over.root(), {{"position", 1}}) == "deeper than the limit of 64");
  CHECK(EvaluateExpression(over.root(), {{"position", 1}}, 65).ok());
}

TEST_CASE("A 10000-deep tree fails fast without deep recursion",
          "[expression]") {
  DeepChain deep(10000);
  CHECK(ExpressionDepth(deep.root()) == 65);
  CHECK(ExpressionDepth(deep.root(), 10) == 11);
  CHECK(ExpressionDepth(deep.root(), 20000) == 10000);
  CHECK(Error(deep.root(), {{"position", 1}}) == "deeper than the limit of 64");
  absl::StatusOr<int64_t> small_limit =
      EvaluateExpression(deep.root(), {{"position", 1}}, 3);
  CHECK_FALSE(small_limit.ok());
  std::string text = ExpressionToString(deep.root());
  CHECK(text.find("...") != std::string::npos);
  CHECK(text.size() < 1000);
}

TEST_CASE("Depth counts the deepest branch", "[expression]") {
  CHECK(ExpressionDepth(Const(1)) == 1);
  CHECK(ExpressionDepth(E()) == 1);
  E right = Bin(E::OP_ADD, Const(1),
                Bin(E::OP_ADD, Const(1), Bin(E::OP_ADD, Const(1), Const(2))));
  CHECK(ExpressionDepth(right) == 4);
  CHECK(ExpressionDepth(right, 2) == 3);
  CHECK(ExpressionDepth(Bin(E::OP_MIN, right, Const(0))) == 5);
}

TEST_CASE("Rendering", "[expression]") {
  CHECK(ExpressionToString(Bin(E::OP_MIN,
                               Bin(E::OP_ADD, Name("position"), Const(1)),
                               Const(8192))) == "min(position + 1, 8192)");
  CHECK(ExpressionToString(Bin(E::OP_MUL, Bin(E::OP_ADD, Name("a"), Name("b")),
                               Name("c"))) == "(a + b) * c");
  CHECK(ExpressionToString(
            Bin(E::OP_SUB, Name("a"), Bin(E::OP_SUB, Name("b"), Name("c")))) ==
        "a - (b - c)");
  CHECK(ExpressionToString(Bin(E::OP_SUB, Bin(E::OP_SUB, Name("a"), Name("b")),
                               Name("c"))) == "a - b - c");
  CHECK(ExpressionToString(Bin(E::OP_ADD, Name("a"),
                               Bin(E::OP_FLOOR_DIV, Name("b"), Const(-2)))) ==
        "a + b // -2");
  CHECK(ExpressionToString(
            Bin(E::OP_MOD, Name("a"), Bin(E::OP_MAX, Name("b"), Const(1)))) ==
        "a % max(b, 1)");
  CHECK(ExpressionToString(E()) == "?");
  CHECK(ExpressionToString(Bin(static_cast<E::Op>(9), Const(1), Const(2))) ==
        "op9(1, 2)");
  CHECK(ExpressionToString(Bin(E::OP_ADD, Const(1), Const(2)), 1) ==
        "... + ...");
}

}  // namespace
}  // namespace irontune
