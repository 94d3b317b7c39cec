#include "common/shape.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/families.h"
#include "common/profile.h"

namespace irontune {

std::vector<v1::Field> ShapeDims(const v1::Operator& op) {
  std::vector<v1::Field> dims;
  const Family* family = FindFamily(op.class_name());
  if (family == nullptr) {
    for (const v1::Param& p : op.params()) {
      v1::Field& f = dims.emplace_back();
      f.set_name(p.name());
      *f.mutable_value() = p.value();
    }
    return dims;
  }
  for (const Dim& dim : family->dims) {
    auto it =
        std::find_if(op.params().begin(), op.params().end(),
                     [&](const v1::Param& p) { return p.name() == dim.name; });
    if (it != op.params().end()) {
      v1::Field& f = dims.emplace_back();
      f.set_name(dim.name);
      *f.mutable_value() = it->value();
    } else if (dim.default_value.kind_case() != v1::Value::KIND_NOT_SET) {
      v1::Field& f = dims.emplace_back();
      f.set_name(dim.name);
      *f.mutable_value() = dim.default_value;
    }
  }
  return dims;
}

std::string ShapeKey(const v1::Operator& op) {
  std::string key = op.class_name();
  for (const v1::Field& f : ShapeDims(op)) {
    absl::StrAppend(&key, " ", f.name(), "=", ValueToString(f.value()));
  }
  return key;
}

std::vector<ShapeSummary> SummarizeShapes(const v1::Calls& calls) {
  std::vector<ShapeSummary> out;
  std::map<std::string, size_t> index;
  std::vector<bool> seen_op(calls.operators_size(), false);
  for (const v1::Timed& call : calls.calls()) {
    for (const v1::Step& step : call.recording().steps()) {
      if (step.op() >= static_cast<uint32_t>(calls.operators_size())) continue;
      const v1::Operator& op = calls.operators(step.op());
      std::string key = ShapeKey(op);
      auto [it, inserted] = index.emplace(key, out.size());
      if (inserted) {
        ShapeSummary& s = out.emplace_back();
        s.class_name = op.class_name();
        s.dims = ShapeDims(op);
        s.key = key;
        for (const v1::Tunable& t : op.tunables()) {
          TunableSummary& ts = s.tunables.emplace_back();
          ts.name = t.name();
          ts.recorded = t.value();
          ts.domain_size = t.domain_size();
        }
      }
      ShapeSummary& s = out[it->second];
      ++s.steps;
      if (!seen_op[step.op()]) {
        seen_op[step.op()] = true;
        s.operators.push_back(static_cast<int>(step.op()));
        for (const std::string& name : op.pinned()) {
          for (TunableSummary& ts : s.tunables) {
            if (ts.name == name) ts.pinned = true;
          }
        }
      }
    }
  }
  for (ShapeSummary& s : out) {
    int64_t space = 1;
    for (const TunableSummary& t : s.tunables) {
      if (t.pinned) continue;
      int64_t n = std::max(t.domain_size, 1);
      if (space > std::numeric_limits<int64_t>::max() / n) {
        space = std::numeric_limits<int64_t>::max();
        break;
      }
      space *= n;
    }
    s.space = space;
  }
  return out;
}

}  // namespace irontune
