// Operator shapes: one class at one set of dims, the unit a profile entry
// covers. Used by `irontune-client inspect` and by the tuner.
// Pure functions of their arguments; thread-safe.
#ifndef IRONTUNE_COMMON_SHAPE_H_
#define IRONTUNE_COMMON_SHAPE_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "irontune/v1/recording.pb.h"
#include "irontune/v1/value.pb.h"

namespace irontune {

// The params of `op` that name its shape: for a known class the family's
// dims (a dim the operator lacks takes the family's default, if any); for an
// unknown class every param. In the family's order, else the operator's.
std::vector<v1::Field> ShapeDims(const v1::Operator& op);

// A stable text key of class and dims, e.g. "GEMM M=256 K=2048 N=2048".
// Two operators of one shape have equal keys.
std::string ShapeKey(const v1::Operator& op);

// The operators of `calls` that one profile entry covers: one class at one
// set of dims.
struct ShapeGroup {
  struct Member {
    uint32_t op = 0;    // index into Calls.operators
    int call = 0;       // index into Calls.calls: the first call running it
    int64_t steps = 0;  // steps running it, over every call
  };
  std::string key;  // ShapeKey
  std::string class_name;
  std::vector<v1::Field> dims;   // ShapeDims of the first member
  std::vector<Member> members;   // in the order the calls first run them
  std::set<std::string> pinned;  // tunables any member pins
  int64_t steps = 0;             // steps running any member, over every call
};

// The shapes `calls` run, in the order the calls first run them, each
// operator (by index) a member once, of the call that first runs it.
// InvalidArgument ("calls[c]: no operator i") where a step names an
// operator `calls` lacks.
absl::StatusOr<std::vector<ShapeGroup>> GroupShapes(const v1::Calls& calls);

// A shape for `irontune-client inspect`: its group's operators and the
// first operator's tunables.
struct TunableSummary {
  std::string name;
  v1::Value recorded;
  int domain_size = 0;
  bool pinned = false;
};

struct ShapeSummary {
  std::string class_name;
  std::vector<v1::Field> dims;
  std::string key;
  std::vector<int> operators;  // indices into Calls.operators, first use order
  int steps = 0;               // steps running it, over all calls
  std::vector<TunableSummary> tunables;  // the first operator's
  // Product of the unpinned tunables' domain sizes: the combinations the
  // search starts from, before constraints drop any. Saturates at INT64_MAX.
  int64_t space = 1;
};

// The shapes `calls` run, in GroupShapes' order. REQUIRES: calls passed
// ValidateRecording (else the result is empty).
std::vector<ShapeSummary> SummarizeShapes(const v1::Calls& calls);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_SHAPE_H_
