#include "daemon/scheduler/cache_writes.h"

#include <algorithm>
#include <utility>

namespace irontune {

CacheWrites::CacheWrites(std::unique_ptr<CacheEpoch> epoch)
    : epoch_(std::move(epoch)), base_(NextCacheVersion()) {}

void CacheWrites::Expose(const std::string& job, const std::string& key) {
  absl::MutexLock lock(&mu_);
  if (!by_job_[job].keys.insert(key).second) return;
  ++exposed_[key];
  version_[key] = NextCacheVersion();
}

void CacheWrites::ExposeAll(const std::string& job) {
  absl::MutexLock lock(&mu_);
  Exposed& exposed = by_job_[job];
  if (exposed.all) return;
  exposed.all = true;
  ++all_;
  base_ = NextCacheVersion();
}

void CacheWrites::Release(const std::string& job) {
  absl::MutexLock lock(&mu_);
  auto it = by_job_.find(job);
  if (it == by_job_.end()) return;
  for (const std::string& key : it->second.keys) {
    if (--exposed_[key] == 0) exposed_.erase(key);
    version_[key] = NextCacheVersion();
  }
  if (it->second.all) {
    --all_;
    base_ = NextCacheVersion();
  }
  by_job_.erase(it);
}

bool CacheWrites::exposed(const std::string& key) {
  absl::MutexLock lock(&mu_);
  return all_ > 0 || exposed_.contains(key);
}

uint64_t CacheWrites::Version(const std::string& key) {
  {
    absl::MutexLock lock(&mu_);
    if (all_ == 0 && !exposed_.contains(key)) {
      auto it = version_.find(key);
      return it == version_.end() ? base_ : std::max(base_, it->second);
    }
  }
  // Exposed: whatever is committed from now on may be its rows.
  return epoch_->Now();
}

}  // namespace irontune
