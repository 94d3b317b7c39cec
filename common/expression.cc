#include "common/expression.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace irontune {
namespace {

using Op = v1::Expression::Op;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// Each binary operator and its symbol.
constexpr std::pair<int, const char*> kOpSymbols[] = {
    {v1::Expression::OP_ADD, "+"},   {v1::Expression::OP_SUB, "-"},
    {v1::Expression::OP_MUL, "*"},   {v1::Expression::OP_FLOOR_DIV, "//"},
    {v1::Expression::OP_MOD, "%"},   {v1::Expression::OP_MIN, "min"},
    {v1::Expression::OP_MAX, "max"},
};

// "" for an operator that has none.
const char* OpSymbol(int op) {
  for (const auto& [known, symbol] : kOpSymbols) {
    if (known == op) return symbol;
  }
  return "";
}

absl::Status Overflow(int64_t a, int op, int64_t b) {
  return absl::InvalidArgumentError(
      absl::StrCat("overflow in ", a, " ", OpSymbol(op), " ", b));
}

// Python's a // b. REQUIRES: b != 0 and not (a == INT64_MIN and b == -1).
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// Python's a % b: the sign follows b. REQUIRES: b != 0.
int64_t FloorMod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 traps in C++.
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

absl::StatusOr<int64_t> Apply(int op, int64_t a, int64_t b) {
  int64_t out = 0;
  switch (op) {
    case v1::Expression::OP_ADD:
      if (__builtin_add_overflow(a, b, &out)) return Overflow(a, op, b);
      return out;
    case v1::Expression::OP_SUB:
      if (__builtin_sub_overflow(a, b, &out)) return Overflow(a, op, b);
      return out;
    case v1::Expression::OP_MUL:
      if (__builtin_mul_overflow(a, b, &out)) return Overflow(a, op, b);
      return out;
    case v1::Expression::OP_FLOOR_DIV:
      if (b == 0) return absl::InvalidArgumentError("division by zero");
      if (a == kInt64Min && b == -1) return Overflow(a, op, b);
      return FloorDiv(a, b);
    case v1::Expression::OP_MOD:
      if (b == 0) return absl::InvalidArgumentError("modulo by zero");
      return FloorMod(a, b);
    case v1::Expression::OP_MIN:
      return std::min(a, b);
    case v1::Expression::OP_MAX:
      return std::max(a, b);
    case v1::Expression::OP_UNSPECIFIED:
      return absl::InvalidArgumentError("operator unspecified");
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown operator ", op));
  }
}

absl::Status TooDeep(int max_depth) {
  return absl::InvalidArgumentError(
      absl::StrCat("deeper than the limit of ", max_depth));
}

// `level` is the depth of `expr` itself, 1 at the root.
absl::StatusOr<int64_t> Evaluate(const v1::Expression& expr,
                                 const CallValues& values, int level,
                                 int max_depth) {
  if (level > max_depth) return TooDeep(max_depth);
  switch (expr.node_case()) {
    case v1::Expression::kConstant:
      return expr.constant();
    case v1::Expression::kValue: {
      auto it = values.find(expr.value());
      if (it == values.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown value \"", expr.value(), "\""));
      }
      return it->second;
    }
    case v1::Expression::kBinary: {
      const v1::Expression::Binary& binary = expr.binary();
      // Check the operator first so an unset one is reported as such even
      // when its operands are unset too.
      if (*OpSymbol(binary.op()) == '\0') {
        return Apply(binary.op(), 0, 0).status();
      }
      if (level >= max_depth) return TooDeep(max_depth);
      ASSIGN_OR_RETURN(int64_t lhs,
                       Evaluate(binary.lhs(), values, level + 1, max_depth));
      ASSIGN_OR_RETURN(int64_t rhs,
                       Evaluate(binary.rhs(), values, level + 1, max_depth));
      return Apply(binary.op(), lhs, rhs);
    }
    case v1::Expression::NODE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("node unset");
}

int Depth(const v1::Expression& expr, int level, int cap) {
  if (level > cap) return level;
  if (!expr.has_binary()) return level;
  int lhs = Depth(expr.binary().lhs(), level + 1, cap);
  if (lhs > cap) return lhs;
  return std::max(lhs, Depth(expr.binary().rhs(), level + 1, cap));
}

// Binding strength of a node's rendering: atoms bind tightest.
int Precedence(const v1::Expression& expr) {
  if (!expr.has_binary()) return 3;
  switch (expr.binary().op()) {
    case v1::Expression::OP_ADD:
    case v1::Expression::OP_SUB:
      return 1;
    case v1::Expression::OP_MUL:
    case v1::Expression::OP_FLOOR_DIV:
    case v1::Expression::OP_MOD:
      return 2;
    default:
      return 3;
  }
}

void Render(const v1::Expression& expr, int level, int max_depth,
            std::string* out) {
  if (level > max_depth) {
    out->append("...");
    return;
  }
  switch (expr.node_case()) {
    case v1::Expression::kConstant:
      absl::StrAppend(out, expr.constant());
      return;
    case v1::Expression::kValue:
      out->append(expr.value());
      return;
    case v1::Expression::kBinary:
      break;
    case v1::Expression::NODE_NOT_SET:
      out->append("?");
      return;
  }
  const v1::Expression::Binary& binary = expr.binary();
  int prec = Precedence(expr);
  if (prec == 3) {  // min, max, or an operator with no infix form
    const char* name = OpSymbol(binary.op());
    if (*name == '\0') {
      absl::StrAppend(out, "op", static_cast<int>(binary.op()));
    } else {
      out->append(name);
    }
    out->append("(");
    Render(binary.lhs(), level + 1, max_depth, out);
    out->append(", ");
    Render(binary.rhs(), level + 1, max_depth, out);
    out->append(")");
    return;
  }
  // Operators are left-associative: the right operand needs parentheses at
  // equal precedence too ("a - (b - c)").
  bool paren_lhs = Precedence(binary.lhs()) < prec;
  bool paren_rhs = Precedence(binary.rhs()) <= prec;
  if (paren_lhs) out->append("(");
  Render(binary.lhs(), level + 1, max_depth, out);
  if (paren_lhs) out->append(")");
  absl::StrAppend(out, " ", OpSymbol(binary.op()), " ");
  if (paren_rhs) out->append("(");
  Render(binary.rhs(), level + 1, max_depth, out);
  if (paren_rhs) out->append(")");
}

}  // namespace

absl::StatusOr<int64_t> EvaluateExpression(const v1::Expression& expr,
                                           const CallValues& values,
                                           int max_depth) {
  return Evaluate(expr, values, 1, max_depth);
}

int ExpressionDepth(const v1::Expression& expr, int cap) {
  return Depth(expr, 1, cap);
}

std::string ExpressionToString(const v1::Expression& expr, int max_depth) {
  std::string out;
  Render(expr, 1, max_depth, &out);
  return out;
}

}  // namespace irontune
