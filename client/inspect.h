// `irontune-client inspect FILE.rec`: what a recording holds, as text or
// JSON. Pure rendering; thread-safe.
#ifndef IRONTUNE_CLIENT_INSPECT_H_
#define IRONTUNE_CLIENT_INSPECT_H_

#include <string>

#include "irontune/v1/recording.pb.h"

namespace irontune {

// A human-readable report: the calls (recording, steps, values, points),
// then each shape with its tunables, domain sizes and setting space.
// REQUIRES: calls passed ValidateRecording.
std::string InspectText(const v1::Calls& calls);

// The same as a JSON document (one object, pretty-printed).
std::string InspectJson(const v1::Calls& calls);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_INSPECT_H_
