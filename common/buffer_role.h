// The names of a buffer's role (v1::BufferRole): "in", "out", "inout", as
// the builder protocol writes them; the operator catalogue's page shows
// them in capitals.
//
// Thread-safe (a pure function).
#ifndef IRONTUNE_COMMON_BUFFER_ROLE_H_
#define IRONTUNE_COMMON_BUFFER_ROLE_H_

#include <string_view>

#include "irontune/v1/recording.pb.h"

namespace irontune {

// "in", "out" or "inout"; "unspecified" for any other value.
std::string_view BufferRoleName(v1::BufferRole role);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_BUFFER_ROLE_H_
