#include "common/families_domain.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/op_access.h"
#include "common/value.h"

namespace irontune {
namespace {

// The upward walk stops before this: no extent is this large, and doubling
// past it would overflow.
constexpr int64_t kWalkLimit = int64_t{1} << 62;

bool Contains(const std::vector<v1::Value>& values, const v1::Value& v) {
  return std::any_of(values.begin(), values.end(),
                     [&](const v1::Value& u) { return ValuesEqual(u, v); });
}

// domain.py Width: {start} and 1 << i for i < columns.bit_length(), widest
// first. A start that is not an int keeps its place first.
std::vector<v1::Value> Width(const v1::Value& start, int columns) {
  std::vector<int64_t> powers;
  for (int64_t p = 1; p <= columns; p *= 2) powers.push_back(p);
  const std::optional<int64_t> s = AsInt(start);
  if (!s.has_value() || start.kind_case() != v1::Value::kIntValue) {
    std::vector<v1::Value> out = {start};
    for (auto it = powers.rbegin(); it != powers.rend(); ++it)
      out.push_back(IntValue(*it));
    return out;
  }
  if (std::find(powers.begin(), powers.end(), *s) == powers.end())
    powers.push_back(*s);
  std::sort(powers.rbegin(), powers.rend());
  std::vector<v1::Value> out;
  for (int64_t p : powers) out.push_back(IntValue(p));
  return out;
}

std::optional<int64_t> Eval(const DomainBound& b, const v1::Operator& op,
                            const DomainDevice& dev) {
  return b.set() ? b.eval(op, dev) : std::nullopt;
}

// domain.py Divisors, on int bounds.
std::vector<v1::Value> Divisors(const DomainRule& rule, const v1::Operator& op,
                                const v1::Value& start,
                                const DomainDevice& dev) {
  if (start.kind_case() != v1::Value::kIntValue || start.int_value() < 1)
    return {start};
  const int64_t s = start.int_value();
  const std::optional<int64_t> of = Eval(rule.of, op, dev);
  const std::optional<int64_t> step =
      rule.step.set() ? Eval(rule.step, op, dev) : std::optional<int64_t>(1);
  const std::optional<int64_t> cap = Eval(rule.cap, op, dev);
  if (!of.has_value() || !step.has_value() || *of == 0) return {start};
  auto within = [&](int octave) {
    return !rule.span.has_value() || octave <= *rule.span;
  };
  auto fits = [&](int64_t v) {
    return *of % v == 0 && (!cap.has_value() || v <= *cap);
  };
  std::vector<int64_t> up;  // ascending; emitted largest first
  for (int64_t v = s * 2, octave = 1;
       v < kWalkLimit && fits(v) && within(static_cast<int>(octave));
       v *= 2, ++octave) {
    up.push_back(v);
  }
  std::vector<v1::Value> out;
  for (auto it = up.rbegin(); it != up.rend(); ++it)
    out.push_back(IntValue(*it));
  out.push_back(start);
  if (*step < 1) return out;
  for (int64_t v = s, octave = 1;
       v % 2 == 0 && (v / 2) % *step == 0 && within(static_cast<int>(octave));
       ++octave) {
    v /= 2;
    if (fits(v)) out.push_back(IntValue(v));
  }
  return out;
}

std::string BoundText(const DomainBound& b) { return b.text; }

}  // namespace

DomainDevice DomainDeviceOf(std::string_view generation) {
  DomainDevice dev;
  dev.generation = std::string(generation);
  if (generation == "npu1") dev.columns = 4;
  if (generation == "npu2") dev.columns = 8;
  return dev;
}

DomainBound ConstBound(int64_t v) {
  return {[v](const v1::Operator&, const DomainDevice&) {
            return std::optional<int64_t>(v);
          },
          absl::StrCat(v)};
}

DomainBound ParamBound(std::string name) {
  return {[name](const v1::Operator& op, const DomainDevice&) {
            return IntParam(op, name);
          },
          name};
}

DomainBound TunableBound(std::string name) {
  return {[name](const v1::Operator& op, const DomainDevice&) {
            return IntTunable(op, name);
          },
          name};
}

DomainBound ExprBound(std::string text,
                      std::function<std::optional<int64_t>(const v1::Operator&,
                                                           const DomainDevice&)>
                          eval) {
  return {std::move(eval), std::move(text)};
}

DomainRule WidthRule() {
  DomainRule r;
  r.kind = DomainRule::Kind::kWidth;
  return r;
}

DomainRule DivisorsRule(DomainBound of, DomainBound step, DomainBound cap,
                        std::optional<int> span) {
  DomainRule r;
  r.kind = DomainRule::Kind::kDivisors;
  r.of = std::move(of);
  r.step = std::move(step);
  r.cap = std::move(cap);
  r.span = span;
  return r;
}

DomainRule ChoicesRule(std::vector<v1::Value> options) {
  DomainRule r;
  r.kind = DomainRule::Kind::kChoices;
  r.options = std::move(options);
  return r;
}

DomainRule PlacementRule(std::vector<std::string> names) {
  DomainRule r;
  r.kind = DomainRule::Kind::kPlacement;
  for (std::string& n : names) r.options.push_back(StringValue(std::move(n)));
  return r;
}

DomainRule PinnedRule() {
  DomainRule r;
  r.kind = DomainRule::Kind::kPinned;
  return r;
}

DomainRule When(DomainRule rule, std::string field) {
  rule.when = std::move(field);
  return rule;
}

std::string DomainRule::Text() const {
  std::string out;
  std::vector<std::string> parts;
  switch (kind) {
    case Kind::kWidth:
      out = "Width";
      break;
    case Kind::kDivisors:
      parts.push_back(absl::StrCat("of=", BoundText(of)));
      if (step.set()) parts.push_back(absl::StrCat("step=", BoundText(step)));
      if (cap.set()) parts.push_back(absl::StrCat("cap=", BoundText(cap)));
      if (span.has_value()) parts.push_back(absl::StrCat("span=", *span));
      out = absl::StrCat("Divisors(", absl::StrJoin(parts, ", "), ")");
      break;
    case Kind::kChoices:
    case Kind::kPlacement:
      for (const v1::Value& v : options) parts.push_back(ValueToString(v));
      out = absl::StrCat(kind == Kind::kChoices ? "Choices(" : "Placement(",
                         absl::StrJoin(parts, ", "), ")");
      break;
    case Kind::kPinned:
      out = "Pinned";
      break;
    case Kind::kNone:
      return "none";
  }
  if (!when.empty()) absl::StrAppend(&out, " when ", when);
  return out;
}

std::vector<v1::Value> RuleValues(const DomainRule& rule,
                                  const v1::Operator& resolved,
                                  const v1::Value& start,
                                  const DomainDevice& dev) {
  switch (rule.kind) {
    case DomainRule::Kind::kWidth:
      return Width(start, dev.columns);
    case DomainRule::Kind::kDivisors:
      return Divisors(rule, resolved, start, dev);
    case DomainRule::Kind::kChoices: {
      if (Contains(rule.options, start)) return rule.options;
      std::vector<v1::Value> out = {start};
      out.insert(out.end(), rule.options.begin(), rule.options.end());
      return out;
    }
    case DomainRule::Kind::kPlacement: {
      std::vector<v1::Value> out = {start};
      for (const v1::Value& v : rule.options) {
        if (!ValuesEqual(v, start)) out.push_back(v);
      }
      return out;
    }
    case DomainRule::Kind::kPinned:
      return {start};
    case DomainRule::Kind::kNone:
      break;
  }
  return {};
}

}  // namespace irontune
