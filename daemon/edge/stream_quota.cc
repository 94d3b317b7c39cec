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

StreamQuota::Slot::Slot(Slot&& other) noexcept
    : quota_(std::exchange(other.quota_, nullptr)),
      caller_(std::move(other.caller_)) {}

StreamQuota::Slot& StreamQuota::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    quota_ = std::exchange(other.quota_, nullptr);
    caller_ = std::move(other.caller_);
  }
  return *this;
}

void StreamQuota::Slot::Release() {
  if (quota_ != nullptr) quota_->Close(caller_);
  quota_ = nullptr;
}

absl::StatusOr<StreamQuota::Slot> StreamQuota::Open(const std::string& caller,
                                                    Role role) {
  absl::MutexLock lock(&mu_);
  auto it = by_caller_.find(caller);
  const size_t own = it == by_caller_.end() ? 0 : it->second;
  if (own >= limits_.per_caller) {
    return absl::ResourceExhaustedError(
        absl::StrCat("caller \"", caller, "\" has ", own,
                     " streams open, its quota (--max-streams-per-caller ",
                     limits_.per_caller, "); close one first"));
  }
  const bool admin = role == Role::kAdmin;
  const size_t usable =
      admin ? limits_.total : limits_.total - limits_.admin_slots;
  if (open_ >= usable) {
    return absl::ResourceExhaustedError(
        admin || limits_.admin_slots == 0
            ? absl::StrCat(open_,
                           " streams are open, the limit (--max-streams ",
                           limits_.total, "); try again later")
            : absl::StrCat(open_,
                           " streams are open, all that submit callers "
                           "may use (--max-streams ",
                           limits_.total, ", the last ", limits_.admin_slots,
                           " kept for admins by --admin-streams); try again "
                           "later"));
  }
  ++open_;
  ++by_caller_[caller];
  return Slot(this, caller);
}

void StreamQuota::Close(const std::string& caller) {
  absl::MutexLock lock(&mu_);
  if (open_ > 0) --open_;
  auto it = by_caller_.find(caller);
  if (it == by_caller_.end()) return;
  if (--it->second == 0) by_caller_.erase(it);
}

size_t StreamQuota::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

size_t StreamQuota::open(const std::string& caller) const {
  absl::MutexLock lock(&mu_);
  auto it = by_caller_.find(caller);
  return it == by_caller_.end() ? 0 : it->second;
}

}  // namespace irontune
