#include "common/shape.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/families.h"
#include "common/value.h"

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

absl::StatusOr<std::vector<ShapeGroup>> GroupShapes(const v1::Calls& calls) {
  std::map<uint32_t, int64_t> steps;  // by operator
  for (const v1::Timed& call : calls.calls()) {
    for (const v1::Step& step : call.recording().steps()) ++steps[step.op()];
  }
  std::vector<ShapeGroup> out;
  std::map<std::string, size_t> by_key;
  std::set<uint32_t> seen;
  for (int c = 0; c < calls.calls_size(); ++c) {
    for (const v1::Step& step : calls.calls(c).recording().steps()) {
      const uint32_t index = step.op();
      if (index >= static_cast<uint32_t>(calls.operators_size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("calls[", c, "]: no operator ", index));
      }
      if (!seen.insert(index).second) continue;
      const v1::Operator& op = calls.operators(static_cast<int>(index));
      std::string key = ShapeKey(op);
      auto [it, inserted] = by_key.try_emplace(key, out.size());
      if (inserted) {
        ShapeGroup& group = out.emplace_back();
        group.key = std::move(key);
        group.class_name = op.class_name();
        group.dims = ShapeDims(op);
      }
      ShapeGroup& group = out[it->second];
      group.pinned.insert(op.pinned().begin(), op.pinned().end());
      group.members.push_back({.op = index, .call = c, .steps = steps[index]});
      group.steps += steps[index];
    }
  }
  return out;
}

namespace {

// The product of the unpinned tunables' domain sizes, saturating.
int64_t SettingSpace(const std::vector<TunableSummary>& tunables) {
  int64_t space = 1;
  for (const TunableSummary& t : tunables) {
    if (t.pinned) continue;
    int64_t n = std::max(t.domain_size, 1);
    if (space > std::numeric_limits<int64_t>::max() / n) {
      return std::numeric_limits<int64_t>::max();
    }
    space *= n;
  }
  return space;
}

ShapeSummary Summarize(const v1::Calls& calls, const ShapeGroup& group) {
  ShapeSummary s;
  s.class_name = group.class_name;
  s.dims = group.dims;
  s.key = group.key;
  s.steps = static_cast<int>(group.steps);
  for (const ShapeGroup::Member& m : group.members) {
    s.operators.push_back(static_cast<int>(m.op));
  }
  const v1::Operator& first =
      calls.operators(static_cast<int>(group.members.front().op));
  for (const v1::Tunable& t : first.tunables()) {
    s.tunables.push_back({.name = t.name(),
                          .recorded = t.value(),
                          .domain_size = t.domain_size(),
                          .pinned = group.pinned.contains(t.name())});
  }
  s.space = SettingSpace(s.tunables);
  return s;
}

}  // namespace

std::vector<ShapeSummary> SummarizeShapes(const v1::Calls& calls) {
  absl::StatusOr<std::vector<ShapeGroup>> groups = GroupShapes(calls);
  std::vector<ShapeSummary> out;
  if (!groups.ok()) return out;
  for (const ShapeGroup& group : *groups) {
    out.push_back(Summarize(calls, group));
  }
  return out;
}

}  // namespace irontune
