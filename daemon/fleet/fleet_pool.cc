#include "daemon/fleet/fleet_pool.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace irontune {

FleetPool::FleetPool(Opener open, int size, absl::Duration retry_after)
    : opener_(std::move(open)), size_(size), retry_after_(retry_after) {}

FleetPool::Handle::Handle(Handle&& other) noexcept
    : pool_(other.pool_), store_(std::move(other.store_)) {}

FleetPool::Handle::~Handle() {
  if (store_ != nullptr) pool_->Release(std::move(store_));
}

absl::Status FleetPool::DownStatus() const {
  return absl::UnavailableError(absl::StrCat(
      "the fleet store is unreachable (retrying in under ",
      absl::FormatDuration(retry_after_), "): ", last_error_.message()));
}

absl::StatusOr<FleetPool::Handle> FleetPool::Acquire(absl::Duration wait) {
  const absl::Time give_up = absl::Now() + wait;
  {
    absl::MutexLock lock(&mu_);
    while (true) {
      if (absl::Now() < down_until_) return DownStatus();
      if (!idle_.empty()) {
        std::unique_ptr<FleetStore> store = std::move(idle_.back());
        idle_.pop_back();
        return Handle(this, std::move(store));
      }
      if (open_count_ < size_) break;
      if (!mu_.AwaitWithDeadline(absl::Condition(this, &FleetPool::Freed),
                                 give_up)) {
        return absl::UnavailableError(
            absl::StrCat("every one of the front's ", size_,
                         " fleet store connections stayed busy for ",
                         absl::FormatDuration(wait)));
      }
    }
    ++open_count_;
  }
  absl::StatusOr<std::unique_ptr<FleetStore>> store = opener_();
  if (!store.ok()) {
    absl::MutexLock lock(&mu_);
    --open_count_;
    if (absl::IsUnavailable(store.status())) {
      down_until_ = absl::Now() + retry_after_;
      last_error_ = store.status();
    }
    return store.status();
  }
  return Handle(this, *std::move(store));
}

bool FleetPool::Freed() const {
  return !idle_.empty() || open_count_ < size_ || absl::Now() < down_until_;
}

void FleetPool::MarkDown(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  down_until_ = absl::Now() + retry_after_;
  last_error_ = status;
}

void FleetPool::Release(std::unique_ptr<FleetStore> store) {
  absl::MutexLock lock(&mu_);
  if (store->connection().healthy()) {
    idle_.push_back(std::move(store));
    return;
  }
  // The server (or the path to it) dropped this one: the idle ones most
  // likely went with it, so they are closed too rather than handed out.
  open_count_ -= 1 + static_cast<int>(idle_.size());
  idle_.clear();
  spdlog::debug("fleet pool: broken connections closed ({} open)", open_count_);
}

int FleetPool::open() const {
  absl::MutexLock lock(&mu_);
  return open_count_;
}

}  // namespace irontune
