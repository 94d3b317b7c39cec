// The catalogue's domains, evaluated: each tunable's rule (TunableSpec::
// domain) at the operator's resolved tunables (common/families.h
// FamilyDomain, ResolvedTunable, OperatorDomain).
#include <algorithm>

#include "common/design.h"
#include "common/families.h"
#include "common/families_rules.h"
#include "common/op_access.h"
#include "common/value.h"

namespace irontune {
namespace {

bool Unset(const v1::Value& v) {
  return v.kind_case() == v1::Value::KIND_NOT_SET;
}

const v1::Value* OwnValue(const v1::Operator& op, std::string_view name) {
  for (const v1::Tunable& t : op.tunables()) {
    if (t.name() == name && !Unset(t.value())) return &t.value();
  }
  return nullptr;
}

// gemm.py _auto_tile_m: the widest of 64, 32, 16, 8 rows that the MAC
// block divides and that split M over the rows of cores; the block where
// none does.
std::optional<int64_t> GemmTileM(const v1::Operator& op,
                                 std::string_view generation) {
  const std::optional<MacShape> mac = Bf16MacShape(generation);
  if (!mac.has_value()) return std::nullopt;
  const int64_t block = (generation == "npu1" ? 4 : 2) * mac->r;
  const int64_t m = IntParam(op, "M").value_or(0);
  for (int64_t t : {64, 32, 16, 8}) {
    if (t % block == 0 && m % (t * kCoreRows) == 0) return t;
  }
  return block;
}

// The class's resolve rule for a tunable with no constant default.
std::optional<v1::Value> ResolveRule(const v1::Operator& op,
                                     std::string_view name,
                                     std::string_view generation, int columns) {
  const std::string& cls = op.class_name();
  if (cls == "GEMM" && name == "tile_m") {
    if (auto t = GemmTileM(op, generation)) return IntValue(*t);
  }
  if (cls == "GEMV") {
    const int64_t k = IntParam(op, "K").value_or(0);
    const int64_t tsi = IntTunable(op, "tile_size_input")
                            .value_or(k * 2 <= kGemvRowBankBytes ? 2 : 1);
    if (name == "tile_size_input") return IntValue(tsi);
    if (name == "tile_size_output")
      return IntValue(std::max<int64_t>(tsi, 2) / tsi * tsi);
  }
  if (cls == "Softmax") {
    const int64_t cols = IntParam(op, "cols").value_or(0);
    const int64_t block =
        IntTunable(op, "block").value_or(rules::SoftmaxDefaultBlock(cols));
    if (name == "block") return IntValue(block);
    if (name == "streamed") return BoolValue(block < cols);
  }
  // A column count: ResolvedDesign's, as IRON's resolve_columns.
  const v1::Operator resolved = ResolvedDesign(op, generation, columns);
  if (const v1::Value* v = OwnValue(resolved, name)) return *v;
  return std::nullopt;
}

// `op` as IRON's resolved operator holds it: every tunable of the class
// at its resolved value where the catalogue can resolve it (those `op`
// lacks appended), and every param `op` lacks that has a constant default
// at that default, so that a rule's bounds read them.
v1::Operator WithResolvedTunables(const Family& family, const v1::Operator& op,
                                  std::string_view generation, int columns) {
  v1::Operator out = op;
  for (v1::Tunable& t : *out.mutable_tunables()) {
    if (!Unset(t.value())) continue;
    if (auto v = ResolvedTunable(op, t.name(), generation, columns))
      *t.mutable_value() = *v;
  }
  for (const TunableSpec& spec : family.tunable_specs) {
    if (HasTunable(out, spec.name)) continue;
    if (auto v = ResolvedTunable(op, spec.name, generation, columns)) {
      v1::Tunable* t = out.add_tunables();
      t->set_name(spec.name);
      *t->mutable_value() = *v;
    }
  }
  for (const Dim& d : family.dims) {
    if (Unset(d.default_value) || FindParam(out, d.name) != nullptr) continue;
    v1::Param* p = out.add_params();
    p->set_name(d.name);
    *p->mutable_value() = d.default_value;
  }
  return out;
}

// The operator's bool field `field`: its param, else the class's default.
bool FieldTrue(const Family& family, const v1::Operator& op,
               const std::string& field) {
  if (std::optional<int64_t> v = IntParam(op, field)) return *v != 0;
  for (const Dim& d : family.dims) {
    if (d.name == field) return AsInt(d.default_value).value_or(0) != 0;
  }
  return false;
}

}  // namespace

std::vector<v1::Value> FamilyDomain(const Family& family,
                                    std::string_view tunable,
                                    std::string_view generation) {
  const DomainDevice dev = DomainDeviceOf(generation);
  const TunableSpec* spec = FindTunable(family, tunable);
  if (dev.columns == 0 || spec == nullptr) return {};
  const DomainRule& rule = spec->domain;
  switch (rule.kind) {
    case DomainRule::Kind::kWidth: {
      std::vector<v1::Value> out;
      for (int64_t c = 1; c <= dev.columns; c *= 2) out.push_back(IntValue(c));
      std::reverse(out.begin(), out.end());
      return out;
    }
    case DomainRule::Kind::kChoices:
    case DomainRule::Kind::kPlacement:
      return rule.options;
    case DomainRule::Kind::kDivisors:
    case DomainRule::Kind::kPinned: {
      if (!Unset(spec->default_value)) return {spec->default_value};
      const v1::Operator shapeless;
      if (rule.step.set()) {
        if (auto s = rule.step.eval(shapeless, dev)) return {IntValue(*s)};
      }
      return {IntValue(1)};
    }
    case DomainRule::Kind::kNone:
      break;
  }
  return {};
}

std::optional<v1::Value> ResolvedTunable(const v1::Operator& op,
                                         std::string_view tunable,
                                         std::string_view generation,
                                         int columns) {
  if (const v1::Value* v = OwnValue(op, tunable)) return *v;
  const Family* family = FindFamily(op.class_name());
  if (family == nullptr) return std::nullopt;
  const TunableSpec* spec = FindTunable(*family, tunable);
  if (spec == nullptr) return std::nullopt;
  if (!Unset(spec->default_value)) return spec->default_value;
  return ResolveRule(op, tunable, generation, columns);
}

std::vector<v1::Value> OperatorDomain(const v1::Operator& op,
                                      std::string_view tunable,
                                      std::string_view generation) {
  const Family* family = FindFamily(op.class_name());
  const DomainDevice dev = DomainDeviceOf(generation);
  if (family == nullptr || dev.columns == 0) return {};
  const TunableSpec* spec = FindTunable(*family, tunable);
  if (spec == nullptr || spec->domain.kind == DomainRule::Kind::kNone)
    return {};
  const v1::Operator resolved =
      WithResolvedTunables(*family, op, generation, dev.columns);
  const v1::Value* start = OwnValue(resolved, tunable);
  if (start == nullptr) return {};
  if (!spec->domain.when.empty() &&
      !FieldTrue(*family, op, spec->domain.when)) {
    return {*start};
  }
  return RuleValues(spec->domain, resolved, *start, dev);
}

}  // namespace irontune
