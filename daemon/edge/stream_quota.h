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
// Threads: Open and the figures from any thread. Ownership: a Slot points
// at its quota, which must outlive it (the service's streams end before
// the service).
#ifndef IRONTUNE_DAEMON_EDGE_STREAM_QUOTA_H_
#define IRONTUNE_DAEMON_EDGE_STREAM_QUOTA_H_

#include <cstddef>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/scheduler/admission.h"
#include "daemon/edge/auth.h"

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
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { Release(); }
    void Release();

   private:
    friend class StreamQuota;
    Slot(StreamQuota* quota, std::string caller)
        : quota_(quota), caller_(std::move(caller)) {}
    StreamQuota* quota_ = nullptr;
    std::string caller_;
  };

  explicit StreamQuota(StreamLimits limits) : limits_(limits) {}

  // Counts a stream of `caller` (of `role`). ResourceExhausted, counting
  // nothing, past its quota (naming the caller, its count and
  // --max-streams-per-caller), or when the streams open leave none it may
  // use (naming the count and --max-streams, with --admin-streams for a
  // submit caller).
  absl::StatusOr<Slot> Open(const std::string& caller, Role role);

  const StreamLimits& limits() const { return limits_; }
  // Open now: in all, and of `caller`.
  size_t open() const;
  size_t open(const std::string& caller) const;

 private:
  void Close(const std::string& caller) ABSL_LOCKS_EXCLUDED(mu_);

  const StreamLimits limits_;
  mutable absl::Mutex mu_;
  size_t open_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, size_t> by_caller_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_STREAM_QUOTA_H_
