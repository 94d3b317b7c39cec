// A tunable's domain as IRON declares it: a rule evaluated for an
// operator's shape and the device, not a fixed list (amd/IRON
// iron/common/declare/domain.py and placement.py @ 607010e). The catalogue
// (common/families.h) gives each tunable one rule; OperatorDomain there
// evaluates it for an operator.
//
// The kinds, each asked of the resolved operator, so the value the library
// would choose (`start`, the tunable's resolved value) is always among the
// values:
//   Width      start and every power of two up to the device's columns,
//              widest first (IRON: 1 << i for i < cols.bit_length()).
//   Divisors   start times and divided by powers of two, largest first:
//              upward while the value divides `of`, is at most `cap` and
//              is within `span` octaves (the first failure ends the walk);
//              downward while the value is even, its half a multiple of
//              `step` and within `span` octaves, keeping each half that
//              divides `of` and is at most `cap`.
//   Choices    the options, start first when it is not among them.
//   Placement  start, then the other named placements in declared order.
//   Pinned     start alone: IRON does not search it.
// A rule with `when` (a bool field of the operator) is searched only where
// that field is true; elsewhere it yields start alone.
//
// Thread-safe (values; the bounds' functions are pure).
#ifndef IRONTUNE_COMMON_FAMILIES_DOMAIN_H_
#define IRONTUNE_COMMON_FAMILIES_DOMAIN_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "irontune/v1/recording.pb.h"
#include "irontune/v1/value.pb.h"

namespace irontune {

// What a rule reads of the device (IRON's `dev`): its generation, its
// columns (dev.cols) and a core's data memory (dev.core_memory_bytes; 64 KiB
// on both generations, docs/npu-facts.md "Memory and DMA").
struct DomainDevice {
  std::string generation;
  int columns = 0;
  int64_t core_memory_bytes = 64 * 1024;
};

// The device of `generation`: npu1 4 columns, npu2 8 (docs/npu-facts.md
// "Devices"); columns 0 for an unknown generation.
DomainDevice DomainDeviceOf(std::string_view generation);

// A bound of a Divisors rule, read from the resolved operator and the
// device; nullopt where the operator lacks what it reads. `text` is how
// docs/operators.md shows it ("M / n_aie_rows", "core memory / (2 * K)").
struct DomainBound {
  std::function<std::optional<int64_t>(const v1::Operator&,
                                       const DomainDevice&)>
      eval;
  std::string text;
  bool set() const { return static_cast<bool>(eval); }
};

// A constant; an int param of the operator; an int tunable of it (at its
// resolved value); an expression with its text.
DomainBound ConstBound(int64_t v);
DomainBound ParamBound(std::string name);
DomainBound TunableBound(std::string name);
DomainBound ExprBound(std::string text,
                      std::function<std::optional<int64_t>(const v1::Operator&,
                                                           const DomainDevice&)>
                          eval);

struct DomainRule {
  enum class Kind { kNone, kWidth, kDivisors, kChoices, kPlacement, kPinned };
  Kind kind = Kind::kNone;
  // Divisors: what a value divides, is a multiple of (unset: 1) and is at
  // most (unset: no cap); the most octaves from start (unset: no limit).
  DomainBound of, step, cap;
  std::optional<int> span;
  // Choices' values; Placement's names (string values), in declared order.
  std::vector<v1::Value> options;
  // A bool field (param) of the operator: searched only where it is true.
  std::string when;
  // Where the rule is not IRON's own (a class IRON declares no domain for
  // at the commit followed): why irontune gives it one. "" for IRON's.
  std::string origin;

  // The rule as docs/operators.md shows it: "Width", "Divisors(of=M,
  // step=64, cap=4096, span=3)", "Choices(8, 4)", "Placement(shims,
  // tiles)", "Pinned", then " when prio_accuracy" where gated.
  std::string Text() const;
};

DomainRule WidthRule();
DomainRule DivisorsRule(DomainBound of, DomainBound step = {},
                        DomainBound cap = {},
                        std::optional<int> span = std::nullopt);
DomainRule ChoicesRule(std::vector<v1::Value> options);
DomainRule PlacementRule(std::vector<std::string> names);
DomainRule PinnedRule();
// `rule`, searched only where bool field `field` is true.
DomainRule When(DomainRule rule, std::string field);

// The values `rule` gives for a tunable whose resolved value is `start`, on
// `resolved` (the operator with every tunable resolved) and `dev`, in
// IRON's order (see the file comment). `when` is not applied here (the
// caller reads the field; OperatorDomain does). Divisors on a start that
// is not a positive int, or whose `of` or `step` the operator cannot
// give, yield start alone; a step below 1 stops the downward walk; the
// upward walk stops before 2^62. kNone yields nothing.
std::vector<v1::Value> RuleValues(const DomainRule& rule,
                                  const v1::Operator& resolved,
                                  const v1::Value& start,
                                  const DomainDevice& dev);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_FAMILIES_DOMAIN_H_
