#include "daemon/scheduler/queue_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/scheduler/admission.h"

namespace irontune {

QueueBudget::Charge::Charge(Charge&& other) noexcept
    : budget_(std::move(other.budget_)),
      client_(std::move(other.client_)),
      bytes_(std::exchange(other.bytes_, 0)) {}

QueueBudget::Charge& QueueBudget::Charge::operator=(Charge&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::move(other.budget_);
    client_ = std::move(other.client_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void QueueBudget::Charge::Release() {
  if (budget_ != nullptr) budget_->Release(client_, bytes_);
  budget_.reset();
  bytes_ = 0;
}

std::shared_ptr<QueueBudget> QueueBudget::Make(uint64_t total_bytes,
                                               uint64_t client_bytes) {
  return std::shared_ptr<QueueBudget>(
      new QueueBudget(total_bytes, client_bytes));
}

absl::StatusOr<QueueBudget::Charge> QueueBudget::Reserve(
    const std::string& client, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = by_client_.find(client);
  const uint64_t own = it == by_client_.end() ? 0 : it->second;
  if (bytes > client_bytes_ || own > client_bytes_ - bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "client \"", client, "\" has ", FormatBytes(own),
        " of requests queued: this one's ", FormatBytes(bytes),
        " would pass its limit of ", FormatBytes(client_bytes_),
        " (--client-queue-bytes); wait for some of its jobs to run"));
  }
  if (bytes > total_bytes_ || used_ > total_bytes_ - bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        FormatBytes(used_), " of requests are queued: this one's ",
        FormatBytes(bytes), " would pass the limit of ",
        FormatBytes(total_bytes_), " (--queue-memory); try again later"));
  }
  used_ += bytes;
  by_client_[client] = own + bytes;
  return Charge(shared_from_this(), client, bytes);
}

void QueueBudget::Release(const std::string& client, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  used_ -= std::min(used_, bytes);
  auto it = by_client_.find(client);
  if (it == by_client_.end()) return;
  it->second -= std::min(it->second, bytes);
  if (it->second == 0) by_client_.erase(it);
}

uint64_t QueueBudget::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

uint64_t QueueBudget::used(const std::string& client) const {
  absl::MutexLock lock(&mu_);
  auto it = by_client_.find(client);
  return it == by_client_.end() ? 0 : it->second;
}

}  // namespace irontune
