#include "daemon/fleet/job_notices.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "daemon/fleet/fleet_queue.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

// How long the thread waits on its connection before it looks whether it
// is stopping, and between attempts to reconnect.
constexpr absl::Duration kTurn = absl::Milliseconds(200);
constexpr absl::Duration kReconnect = absl::Seconds(1);

}  // namespace

JobNotices::JobNotices(FleetPool::Opener open) : open_(std::move(open)) {}

JobNotices::~JobNotices() { Stop(); }

void JobNotices::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void JobNotices::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t JobNotices::Subscribe(int64_t id) {
  absl::MutexLock lock(&mu_);
  Followed& f = followed_[id];
  ++f.followers;
  return f.version;
}

void JobNotices::Unsubscribe(int64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = followed_.find(id);
  if (it != followed_.end() && --it->second.followers <= 0) {
    followed_.erase(it);
  }
}

bool JobNotices::WaitForChange(int64_t id, uint64_t* seen,
                               absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  const auto changed = [this, id, seen]() -> bool {
    mu_.AssertReaderHeld();
    auto it = followed_.find(id);
    return stopping_ || (it != followed_.end() && it->second.version != *seen);
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&changed), timeout)) return false;
  auto it = followed_.find(id);
  if (it == followed_.end() || it->second.version == *seen) return false;
  *seen = it->second.version;
  return true;
}

uint64_t JobNotices::received() const {
  absl::MutexLock lock(&mu_);
  return received_;
}

void JobNotices::Bump(int64_t id) {
  absl::MutexLock lock(&mu_);
  if (id < 0) {
    for (auto& [job, f] : followed_) ++f.version;
    return;
  }
  ++received_;
  auto it = followed_.find(id);
  if (it != followed_.end()) ++it->second.version;
}

void JobNotices::Loop() {
  std::unique_ptr<FleetStore> store;
  const auto stopping = [this] {
    absl::MutexLock lock(&mu_);
    return stopping_;
  };
  while (!stopping()) {
    if (store == nullptr) {
      absl::StatusOr<std::unique_ptr<FleetStore>> opened = open_();
      absl::Status s = opened.status();
      if (s.ok()) s = (*opened)->connection().Listen(kJobsChannel);
      if (!s.ok()) {
        spdlog::debug("job notices: {}", std::string(s.message()));
        absl::SleepFor(kReconnect);
        continue;
      }
      store = *std::move(opened);
      Bump(-1);  // whatever was announced while not listening
    }
    absl::StatusOr<std::optional<pg::Notification>> notice =
        store->connection().WaitForNotification(kTurn);
    if (!notice.ok()) {
      spdlog::warn(
          "job notices: the LISTEN connection was lost ({}); "
          "reconnecting",
          std::string(notice.status().message()));
      store.reset();
      continue;
    }
    int64_t id = 0;
    if (notice->has_value() && absl::SimpleAtoi((*notice)->payload, &id)) {
      Bump(id);
    }
  }
}

}  // namespace irontune
