// The operator shapes a model's calls run: what one profile entry covers.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_TUNE_SHAPES_H_
#define IRONTUNE_DAEMON_TUNE_SHAPES_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/tune/search.h"
#include "daemon/tune/settings.h"
#include "irontune/v1/recording.pb.h"
#include "irontune/v1/value.pb.h"

namespace irontune {

// One operator of a shape: where it is timed and what its inputs hold.
struct ShapeMember {
  uint32_t op = 0;  // index into Calls.operators
  int call = 0;     // index into Calls.calls: the first call running it
  std::vector<WeightedValues> points;         // OpPoints in that call
  std::map<std::string, std::string> inputs;  // OpInputs in that call
  int64_t steps = 0;  // steps running it, over every call
};

// The operators of the calls one profile entry covers: one class at one set
// of dims.
struct Shape {
  std::string key;  // ShapeKey
  std::string class_name;
  std::vector<v1::Field> dims;  // ShapeDims of the first member
  std::vector<ShapeMember> members;
  // Tunables any member pins: none of them moves.
  std::set<std::string> pinned;
  int64_t steps = 0;  // steps running any member, over every call
};

// The shapes of `calls`' operators that have a tunable to search (an
// unpinned tunable whose domain, space.domain on `generation`, holds a value
// other than the recorded one), in the order the calls first run them, each
// operator (by index) a member once, of the call that first runs it.
// REQUIRES: calls passed ValidateRecording. Fails as OpPoints does.
absl::StatusOr<std::vector<Shape>> Shapes(const v1::Calls& calls,
                                          const SearchSpace& space,
                                          const std::string& generation);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_SHAPES_H_
