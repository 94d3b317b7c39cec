#include "common/families.h"

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/families_rules.h"
#include "common/families_table.h"
#include "common/op_access.h"
#include "common/value.h"

namespace irontune {
namespace {

std::vector<Family> MakeFamilies() {
  std::vector<Family> all;
  for (auto group : {catalogue::ElementwiseFamilies, catalogue::LinearFamilies,
                     catalogue::MovementFamilies, catalogue::SignalFamilies}) {
    for (Family& f : group()) all.push_back(std::move(f));
  }
  for (Family& f : all) {
    f.tunables.clear();
    for (const TunableSpec& t : f.tunable_specs) f.tunables.push_back(t.name);
  }
  std::sort(all.begin(), all.end(), [](const Family& a, const Family& b) {
    return a.class_name < b.class_name;
  });
  return all;
}

}  // namespace

const std::vector<Family>& AllFamilies() {
  static const std::vector<Family>* families =
      new std::vector<Family>(MakeFamilies());
  return *families;
}

const Family* FindFamily(std::string_view class_name) {
  const auto& all = AllFamilies();
  auto it = std::find_if(all.begin(), all.end(), [&](const Family& f) {
    return f.class_name == class_name;
  });
  return it == all.end() ? nullptr : &*it;
}

bool IsDim(const Family& family, std::string_view name) {
  return std::any_of(family.dims.begin(), family.dims.end(),
                     [&](const Dim& d) { return d.name == name; });
}
bool IsTunable(const Family& family, std::string_view name) {
  return std::find(family.tunables.begin(), family.tunables.end(), name) !=
         family.tunables.end();
}
bool IsDerived(const Family& family, std::string_view name) {
  return std::find(family.derived.begin(), family.derived.end(), name) !=
         family.derived.end();
}

std::optional<MacShape> Bf16MacShape(std::string_view generation) {
  if (generation == "npu1") return MacShape{4, 8, 4};
  if (generation == "npu2") return MacShape{4, 8, 8};
  return std::nullopt;
}

int DTypeNameBytes(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(rules::Sv(name));
  if (lower == "i8" || lower == "int8" || lower == "u8" || lower == "uint8") {
    return 1;
  }
  if (lower == "f32" || lower == "float32" || lower == "i32" ||
      lower == "int32") {
    return 4;
  }
  return 2;
}

const TunableSpec* FindTunable(const Family& family, std::string_view tunable) {
  for (const TunableSpec& t : family.tunable_specs) {
    if (t.name == tunable) return &t;
  }
  return nullptr;
}

std::string ConstraintViolation(const v1::Operator& op,
                                std::string_view generation, int columns) {
  const std::string& cls = op.class_name();
  const std::string_view gen = generation;
  const Family* family = FindFamily(cls);
  if (family == nullptr) return rules::Columns(op, gen, columns);
  using namespace rules;  // NOLINT: the per-class constraints
  if (std::optional<std::string> r = Grouped(op, gen, columns)) return *r;
  if (cls == "GEMM") return Gemm(op, gen, columns);
  if (cls == "GEMV") return Gemv(op, gen, columns);
  if (cls == "MHA") return Mha(op, gen, columns);
  if (cls == "RoPE") return Rope(op, gen, columns);
  if (cls == "RMSNorm" || cls == "LayerNorm") return Rows(op, gen, columns, 1);
  if (cls == "Softmax") return Rows(op, gen, columns, columns);
  if (cls == "DepthwiseConv1d" || cls == "Transpose")
    return Tiled(op, gen, columns);
  if (cls == "Sample" || cls == "Dequant" || cls == "Copy")
    return Movement(op, columns);
  if (family->tunables.empty()) return "";  // Emit, Repeat: nothing to tune
  const bool binary = family->buffers.size() == 3;
  return Line(op, gen, columns, binary ? 3 : 2);
}

}  // namespace irontune