// A design: the part of an operator that a build follows. Two operators of
// one design build the same artifact whatever their tunables' domains, pins
// and tolerance, which only steer the search and the judge.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_COMMON_DESIGN_H_
#define IRONTUNE_COMMON_DESIGN_H_

#include <string>
#include <string_view>

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

// `op` resolved as IRON's `Operator.resolved(dev)` fills what a setting
// leaves open, so that two settings describing one design have one identity
// (IRON's design_key is taken after resolve): on a known class (common/
// families.h), each unset tunable takes the catalogue's default, and an
// unset column count (num_aie_columns, columns) the most of `columns`
// (the device's usable columns; none when 0) at which the operator builds
// (ConstraintViolation), else 1, as IRON's resolve_columns does; params the
// class derives (Family::derived) are dropped, since IRON recomputes them
// from the other fields. Then DesignOf. An unknown class is DesignOf(op).
v1::Operator ResolvedDesign(const v1::Operator& op, std::string_view generation,
                            int columns);

// DeterministicBytes(ResolvedDesign(op, generation, columns)): equal exactly
// when two operators resolve to one design.
std::string ResolvedDesignBytes(const v1::Operator& op,
                                std::string_view generation, int columns);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_DESIGN_H_
