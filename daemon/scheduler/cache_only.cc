#include "daemon/scheduler/cache_only.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace irontune {

absl::Status NeedsDevice::Refuse(const std::string& what) {
  {
    absl::MutexLock lock(&mu_);
    if (!asked_) first_ = what;
    asked_ = true;
  }
  return absl::FailedPreconditionError(
      absl::StrCat(kCacheOnly, ": ", what, " needs the device worker"));
}

bool NeedsDevice::asked() const {
  absl::MutexLock lock(&mu_);
  return asked_;
}

std::string NeedsDevice::first() const {
  absl::MutexLock lock(&mu_);
  return first_;
}

absl::StatusOr<std::unique_ptr<Image>> CacheOnlyDevice::Load(
    const Artifact& /*artifact*/) {
  return needs_->Refuse("a device load");
}

absl::StatusOr<std::vector<int>> CacheOnlyDevice::OtherHolders() {
  return needs_->Refuse("a look at the NPU's other holders");
}

absl::StatusOr<BuildOutcome> CacheOnlyBuilder::Build(
    const BuildRequest& /*request*/) {
  return needs_->Refuse("a build");
}

absl::StatusOr<BuildOutcome> CacheOnlyBuilder::Await(
    const BuildRequest& /*request*/,
    const std::function<bool()>& /*cancelled*/) {
  return needs_->Refuse("a build");
}

absl::StatusOr<std::string> CacheOnlyBuilder::Fit(
    const BuildRequest& /*request*/) {
  return needs_->Refuse("a fit check");
}

CacheOnlyContext::CacheOnlyContext(JobPtr job, Device& device, Builder& builder,
                                   Cache* cache, CacheWrites& writes,
                                   NeedsDevice& needs)
    : JobContext(std::move(job), device, builder, cache, Events::kHeld),
      writes_(writes),
      needs_(needs) {}

InputCache& CacheOnlyContext::inputs() { return inputs_; }

bool CacheOnlyContext::cancelled() {
  return needs_.asked() || JobContext::cancelled();
}

void CacheOnlyContext::OnShape(int index, int total, const std::string& key) {
  shape_ = key;
  Watch(key);
  JobContext::OnShape(index, total, key);
}

void CacheOnlyContext::Watch(const std::string& key) {
  watched_.emplace(key, writes_.Version(key));
}

bool CacheOnlyContext::Unchanged() {
  for (const auto& [key, version] : watched_) {
    if (writes_.Version(key) != version) return false;
  }
  return true;
}

}  // namespace irontune
