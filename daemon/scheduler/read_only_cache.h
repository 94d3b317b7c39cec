// A Cache to read the measurement cache file through beside its writer
// (the device worker's Cache): nothing can be written through it.
//
// Cache::Open makes the file's connection as a writer's (it migrates the
// schema and binds the partition, which an existing file needs no write
// for); once it is open, OpenReadOnlyCache turns that connection
// query-only (SQLite's PRAGMA query_only), so any write through the Cache
// (Put, PutVerdict, an import) fails with an error and changes nothing.
// The connection is caught as SQLite opens it on the calling thread
// (sqlite3_auto_extension), since Cache gives no access to it; Open opens
// one connection.
//
// Threads: any; the Cache returned is used as any Cache (one thread at a
// time). Failure: Cache::Open's errors; Internal when the connection could
// not be caught or made query-only.
#ifndef IRONTUNE_DAEMON_SCHEDULER_READ_ONLY_CACHE_H_
#define IRONTUNE_DAEMON_SCHEDULER_READ_ONLY_CACHE_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "daemon/npu/platform.h"
#include "daemon/store/cache.h"

namespace irontune {

// Cache::Open(path, platform_name, power_mode), made query-only.
// REQUIRES: the file exists (the writer made it).
absl::StatusOr<std::unique_ptr<Cache>> OpenReadOnlyCache(
    const std::string& path, std::string_view platform_name,
    PowerMode power_mode);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_READ_ONLY_CACHE_H_
