#include "daemon/tune/shapes.h"

#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/shape.h"
#include "common/status_macros.h"
#include "common/value.h"

namespace irontune {
namespace {

// Whether `op` has an unpinned tunable whose domain holds another value.
bool Searchable(const v1::Operator& op, const std::set<std::string>& pinned,
                const SearchSpace& space, const std::string& generation) {
  const SearchSpace fallback = DefaultSearchSpace();
  const auto& domain_of = space.domain ? space.domain : fallback.domain;
  for (const v1::Tunable& t : op.tunables()) {
    if (pinned.contains(t.name())) continue;
    for (const v1::Value& v : domain_of(op, t.name(), generation)) {
      if (!ValuesEqual(v, t.value())) return true;
    }
  }
  return false;
}

// Steps running each operator, over every call.
std::map<uint32_t, int64_t> StepsByOperator(const v1::Calls& calls) {
  std::map<uint32_t, int64_t> steps;
  for (const v1::Timed& call : calls.calls()) {
    for (const v1::Step& step : call.recording().steps()) ++steps[step.op()];
  }
  return steps;
}

}  // namespace

absl::StatusOr<std::vector<Shape>> Shapes(const v1::Calls& calls,
                                          const SearchSpace& space,
                                          const std::string& generation) {
  std::map<uint32_t, int64_t> steps = StepsByOperator(calls);
  std::vector<Shape> found;
  std::unordered_map<std::string, size_t> by_key;
  std::set<uint32_t> seen;
  for (int c = 0; c < calls.calls_size(); ++c) {
    const v1::Timed& call = calls.calls(c);
    for (const v1::Step& step : call.recording().steps()) {
      const uint32_t index = step.op();
      if (static_cast<int>(index) >= calls.operators_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("calls[", c, "]: no operator ", index));
      }
      if (!seen.insert(index).second) continue;
      const v1::Operator& op = calls.operators(static_cast<int>(index));
      const std::string key = ShapeKey(op);
      auto [it, inserted] = by_key.try_emplace(key, found.size());
      if (inserted) {
        Shape shape;
        shape.key = key;
        shape.class_name = op.class_name();
        shape.dims = ShapeDims(op);
        found.push_back(std::move(shape));
      }
      Shape& shape = found[it->second];
      shape.pinned.insert(op.pinned().begin(), op.pinned().end());
      ShapeMember member;
      member.op = index;
      member.call = c;
      ASSIGN_OR_RETURN(member.points, OpPoints(call, index, op));
      member.inputs = OpInputs(call, index, op);
      member.steps = steps[index];
      shape.steps += member.steps;
      shape.members.push_back(std::move(member));
    }
  }
  std::vector<Shape> out;
  for (Shape& shape : found) {
    const v1::Operator& op =
        calls.operators(static_cast<int>(shape.members[0].op));
    if (Searchable(op, shape.pinned, space, generation)) {
      out.push_back(std::move(shape));
    }
  }
  return out;
}

}  // namespace irontune
