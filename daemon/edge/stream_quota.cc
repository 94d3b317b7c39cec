#include "daemon/edge/stream_quota.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace irontune {

absl::StatusOr<StreamLimits> StreamLimitsOf(const AdmissionLimits& limits) {
  StreamLimits out;
  out.total = limits.concurrent_streams;
  out.per_caller = limits.streams_per_caller > 0
                       ? limits.streams_per_caller
                       : std::max<size_t>(1, out.total / 4);
  out.admin_slots = limits.admin_streams >= 0
                        ? static_cast<size_t>(limits.admin_streams)
                        : std::min<size_t>(kDefaultAdminStreams, out.total / 4);
  if (out.admin_slots >= out.total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--admin-streams ", out.admin_slots, " is not below --max-streams ",
        out.total, ": no stream would be left for submit callers"));
  }
  return out;
}

absl::StatusOr<StreamQuota::Slot> StreamQuota::Open(const std::string& caller,
                                                    Role role) {
  return tally_.Take(caller, 1, [&](uint64_t open, uint64_t own) {
    if (own >= limits_.per_caller) {
      return absl::ResourceExhaustedError(
          absl::StrCat("caller \"", caller, "\" has ", own,
                       " streams open, its quota (--max-streams-per-caller ",
                       limits_.per_caller, "); close one first"));
    }
    const bool admin = role == Role::kAdmin;
    const size_t usable =
        admin ? limits_.total : limits_.total - limits_.admin_slots;
    if (open < usable) return absl::OkStatus();
    return absl::ResourceExhaustedError(
        admin || limits_.admin_slots == 0
            ? absl::StrCat(open, " streams are open, the limit (--max-streams ",
                           limits_.total, "); try again later")
            : absl::StrCat(open,
                           " streams are open, all that submit callers "
                           "may use (--max-streams ",
                           limits_.total, ", the last ", limits_.admin_slots,
                           " kept for admins by --admin-streams); try again "
                           "later"));
  });
}

}  // namespace irontune
