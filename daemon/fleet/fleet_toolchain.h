// The toolchain a fleet box keys its figures and decisions by
// (FleetPartition::toolchain): besides the platform and power mode, what a
// figure timed on the box depends on. A box whose firmware, driver, XRT or
// builder (IRON, in its environment) differs from another's has another
// toolchain, so a figure one timed is a miss on the other, not a stale
// answer (docs/fleet.md).
//
// Threads: a pure function.
#ifndef IRONTUNE_DAEMON_FLEET_FLEET_TOOLCHAIN_H_
#define IRONTUNE_DAEMON_FLEET_FLEET_TOOLCHAIN_H_

#include <string>
#include <string_view>

#include "daemon/npu/platform.h"

namespace irontune {

// The toolchain of a box whose builder's environment is
// `builder_environment` (Builder::Environment(): the tools and their
// versions) over an NPU whose stack is `stack` (Device::GetStackVersions):
//   firmware "F"; driver "D"; xrt "X"; builder "B"
// each value C-escaped in its quotes (so the text is printable ASCII and
// no NUL, which the store refuses), an empty one the bare word unknown.
// The same inputs give the same text, in any process and release (it is
// stored: changing the format makes every stored figure a miss); different
// inputs give different texts.
std::string FleetToolchain(std::string_view builder_environment,
                           const StackVersions& stack);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_FLEET_FLEET_TOOLCHAIN_H_
