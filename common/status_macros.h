// Status propagation helpers. Abseil 20220623 ships no status macros, so
// irontune keeps its own two.
#ifndef IRONTUNE_COMMON_STATUS_MACROS_H_
#define IRONTUNE_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define IRONTUNE_CONCAT_INNER_(a, b) a##b
#define IRONTUNE_CONCAT_(a, b) IRONTUNE_CONCAT_INNER_(a, b)

// Returns `expr`'s status from the enclosing function unless it is OK.
#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    ::absl::Status irontune_status_ = (expr); \
    if (!irontune_status_.ok()) {             \
      return irontune_status_;                \
    }                                         \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); returns its status unless OK,
// else moves its value into `lhs`, which may be a declaration.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  ASSIGN_OR_RETURN_IMPL_(IRONTUNE_CONCAT_(irontune_or_, __LINE__), lhs, rexpr)

#define ASSIGN_OR_RETURN_IMPL_(var, lhs, rexpr) \
  auto var = (rexpr);                           \
  if (!var.ok()) {                              \
    return std::move(var).status();             \
  }                                             \
  lhs = std::move(var).value()

#endif  // IRONTUNE_COMMON_STATUS_MACROS_H_
