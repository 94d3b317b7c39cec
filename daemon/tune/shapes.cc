#include "daemon/tune/shapes.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/shape.h"
#include "common/status_macros.h"
#include "common/value.h"

namespace irontune {
namespace {

// Whether `op` has an unpinned tunable whose domain holds another value.
// REQUIRES: `space` complete (CompleteSearchSpace).
bool Searchable(const v1::Operator& op, const std::set<std::string>& pinned,
                const SearchSpace& space, const std::string& generation) {
  for (const v1::Tunable& t : op.tunables()) {
    if (pinned.contains(t.name())) continue;
    for (const v1::Value& v : space.domain(op, t.name(), generation)) {
      if (!ValuesEqual(v, t.value())) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<Shape>> Shapes(const v1::Calls& calls,
                                          const SearchSpace& space,
                                          const std::string& generation) {
  ASSIGN_OR_RETURN(std::vector<ShapeGroup> groups, GroupShapes(calls));
  const SearchSpace complete = CompleteSearchSpace(space);
  std::vector<Shape> out;
  std::map<int, CallBuffers> buffers;  // by call, read once
  for (ShapeGroup& group : groups) {
    const v1::Operator& first =
        calls.operators(static_cast<int>(group.members[0].op));
    if (!Searchable(first, group.pinned, complete, generation)) continue;
    Shape shape;
    shape.key = std::move(group.key);
    shape.class_name = std::move(group.class_name);
    shape.dims = std::move(group.dims);
    shape.pinned = std::move(group.pinned);
    shape.steps = group.steps;
    for (const ShapeGroup::Member& m : group.members) {
      const v1::Timed& call = calls.calls(m.call);
      const v1::Operator& op = calls.operators(static_cast<int>(m.op));
      ShapeMember member;
      member.op = m.op;
      member.call = m.call;
      member.steps = m.steps;
      ASSIGN_OR_RETURN(member.points, OpPoints(call, m.op, op));
      auto b = buffers.try_emplace(m.call, call).first;
      member.inputs = b->second.OpInputs(m.op, op);
      shape.members.push_back(std::move(member));
    }
    out.push_back(std::move(shape));
  }
  return out;
}

}  // namespace irontune
