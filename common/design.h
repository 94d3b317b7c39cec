// A design: the part of an operator that a build follows. Two operators of
// one design build the same artifact whatever their tunables' domains, pins
// and tolerance, which only steer the search and the judge.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_COMMON_DESIGN_H_
#define IRONTUNE_COMMON_DESIGN_H_

#include <string>

#include "google/protobuf/message.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// `op` as a design: its class, params, tunables (name and value), buffers
// and call values; the tunables' domains, `pinned` and `tolerance` cleared.
v1::Operator DesignOf(const v1::Operator& op);

// The deterministic binary serialization of `message` (map entries sorted),
// stable across calls in one build: for payloads and hashes.
std::string DeterministicBytes(const google::protobuf::Message& message);

// The identity of `op`'s design: DeterministicBytes(DesignOf(op)). Two
// operators have equal DesignBytes exactly when they are one design.
std::string DesignBytes(const v1::Operator& op);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_DESIGN_H_
