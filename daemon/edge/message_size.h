// Which RPCs carry big messages, and the limit the others keep to: the
// edge's check of a small request's size before it is served
// (--max-small-message-bytes, docs/security.md).
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_EDGE_MESSAGE_SIZE_H_
#define IRONTUNE_DAEMON_EDGE_MESSAGE_SIZE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "daemon/edge/auth.h"
#include "daemon/scheduler/admission.h"

namespace irontune {

// Whether `rpc` is a big-message RPC (Autotune, Measure, ImportCache),
// whose messages may reach limits.message_bytes.
bool IsBigMessageRpc(Rpc rpc);

// OK unless `rpc` is a small RPC and its request of `bytes` (encoded,
// unknown fields included) is over limits.small_message_bytes:
// ResourceExhausted naming the RPC, the size and --max-small-message-bytes.
absl::Status CheckSmallRequest(Rpc rpc, uint64_t bytes,
                               const AdmissionLimits& limits);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_MESSAGE_SIZE_H_
