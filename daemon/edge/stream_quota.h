// StreamQuota: the Autotune, Measure and Watch streams open at once, each
// holding a gRPC thread for its whole life. Three limits
// (docs/operations.md, "Admission and limits"):
//   - at most `total` in all (--max-streams);
//   - the last `admin_slots` of them only for admin callers
//     (--admin-streams), so a flood of submit callers' streams leaves an
//     admin room to look and cancel;
//   - at most `per_caller` of one caller's (--max-streams-per-caller),
//     admins too, so one token's Watches cannot take everyone's slots.
// A caller is named by its token; without tokens by the name its job is
// owned by (the request's client field, or the watched job's owner).
//
// Threads: Open and the figures from any thread. Ownership: a Slot shares
// its quota's counts (tally.h) and may outlive the quota.
#ifndef IRONTUNE_DAEMON_EDGE_STREAM_QUOTA_H_
#define IRONTUNE_DAEMON_EDGE_STREAM_QUOTA_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/base/tally.h"
#include "daemon/edge/auth.h"
#include "daemon/scheduler/admission.h"

namespace irontune {

struct StreamLimits {
  size_t total = 256;
  size_t per_caller = 64;
  size_t admin_slots = 4;
};

// The stream limits `limits` sets, its defaults resolved
// (AdmissionLimits::streams_per_caller, admin_streams). InvalidArgument
// naming the flags when the admin slots would leave no stream for submit
// callers (--admin-streams not below --max-streams).
absl::StatusOr<StreamLimits> StreamLimitsOf(const AdmissionLimits& limits);

class StreamQuota {
 public:
  // One open stream, counted until released (or destroyed). Move-only; a
  // default one counts nothing.
  using Slot = Tally::Hold;

  explicit StreamQuota(StreamLimits limits) : limits_(limits) {}

  // Counts a stream of `caller` (of `role`). ResourceExhausted, counting
  // nothing, past its quota (naming the caller, its count and
  // --max-streams-per-caller), or when the streams open leave none it may
  // use (naming the count and --max-streams, with --admin-streams for a
  // submit caller).
  absl::StatusOr<Slot> Open(const std::string& caller, Role role);

  const StreamLimits& limits() const { return limits_; }
  // Open now: in all, and of `caller`.
  size_t open() const { return tally_.total(); }
  size_t open(const std::string& caller) const { return tally_.of(caller); }

 private:
  const StreamLimits limits_;
  Tally tally_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_STREAM_QUOTA_H_
