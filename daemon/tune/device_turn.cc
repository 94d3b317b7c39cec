#include "daemon/tune/device_turn.h"

namespace irontune {

void DeviceTurn::Take(int rank) {
  Queue(rank);
  TakeQueued(rank);
}

void DeviceTurn::Queue(int rank) {
  absl::MutexLock lock(&mu_);
  EndIdle(absl::Now());
  waiting_.insert(rank);
}

void DeviceTurn::TakeQueued(int rank) {
  absl::MutexLock lock(&mu_);
  const auto mine = [this, rank]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !held_ && *waiting_.begin() == rank;
  };
  mu_.Await(absl::Condition(&mine));
  waiting_.erase(waiting_.find(rank));
  held_ = true;
}

void DeviceTurn::Give() {
  absl::MutexLock lock(&mu_);
  held_ = false;
  if (waiting_.empty()) idle_since_ = absl::Now();
}

bool DeviceTurn::held() const {
  absl::MutexLock lock(&mu_);
  return held_;
}

bool DeviceTurn::Outranked(int rank) const {
  absl::MutexLock lock(&mu_);
  return !waiting_.empty() && *waiting_.begin() < rank;
}

void DeviceTurn::EndIdle(absl::Time now) {
  if (idle_since_ == absl::InfinitePast()) return;
  idle_ += now - idle_since_;
  idle_since_ = absl::InfinitePast();
}

double DeviceTurn::idle_seconds() const {
  absl::MutexLock lock(&mu_);
  absl::Duration idle = idle_;
  if (idle_since_ != absl::InfinitePast()) idle += absl::Now() - idle_since_;
  return absl::ToDoubleSeconds(idle);
}

template <typename T>
T TurnBuilder::Waiting(bool yield, const std::function<T()>& wait) {
  if (!yield) return wait();
  if (before_yield_) before_yield_();
  turn_.Give();
  T result = wait();
  turn_.Take(rank_);
  return result;
}

bool TurnBuilder::Due(const BuildRequest& request) {
  return !target().Ready(request) || turn_.Outranked(rank_);
}

absl::StatusOr<BuildOutcome> TurnBuilder::Build(const BuildRequest& request) {
  return Waiting<absl::StatusOr<BuildOutcome>>(
      Due(request), [&] { return target().Build(request); });
}

absl::StatusOr<BuildOutcome> TurnBuilder::Await(
    const BuildRequest& request, const std::function<bool()>& cancelled) {
  return Waiting<absl::StatusOr<BuildOutcome>>(
      Due(request), [&] { return target().Await(request, cancelled); });
}

absl::StatusOr<std::string> TurnBuilder::Fit(const BuildRequest& request) {
  return Waiting<absl::StatusOr<std::string>>(
      Due(request), [&] { return target().Fit(request); });
}

}  // namespace irontune
