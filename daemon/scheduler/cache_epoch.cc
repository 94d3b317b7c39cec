#include "daemon/scheduler/cache_epoch.h"

#include <atomic>
#include <utility>

#include "common/status_macros.h"

namespace irontune {

// The top bit set, so none is a Cache generation (a count of the process's
// cache writes from 1).
uint64_t NextCacheVersion() {
  static std::atomic<uint64_t> last{0};
  return (uint64_t{1} << 63) | (last.fetch_add(1) + 1);
}

absl::StatusOr<std::unique_ptr<CacheEpoch>> CacheEpoch::Open(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Db> db,
                   sqlite::Db::Open(path, sqlite::OpenMode::kReadOnly));
  ASSIGN_OR_RETURN(sqlite::Statement version,
                   db->Prepare("PRAGMA data_version"));
  return std::unique_ptr<CacheEpoch>(
      new CacheEpoch(std::move(db), std::move(version)));
}

CacheEpoch::CacheEpoch(std::unique_ptr<sqlite::Db> db,
                       sqlite::Statement version)
    : db_(std::move(db)), version_(std::move(version)) {}

CacheEpoch::~CacheEpoch() = default;

uint64_t CacheEpoch::Now() {
  absl::MutexLock lock(&mu_);
  sqlite::ScopedReset reset(version_);
  absl::StatusOr<bool> row = version_.Step();
  if (!row.ok() || !*row) {
    seen_ = false;  // whatever comes next counts as changed
    return NextCacheVersion();
  }
  const int64_t now = version_.ColumnInt(0);
  if (!seen_ || now != data_version_) {
    seen_ = true;
    data_version_ = now;
    epoch_ = NextCacheVersion();
  }
  return epoch_;
}

}  // namespace irontune
