#include "daemon/scheduler/read_only_cache.h"

#include <sqlite3.h>

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace irontune {
namespace {

// Where the next connection SQLite opens on this thread is caught; null:
// none is wanted.
thread_local sqlite3** catch_into = nullptr;

// An auto extension: SQLite calls it as each connection opens.
int CatchConnection(sqlite3* db, const char** /*error*/,
                    const sqlite3_api_routines* /*api*/) {
  if (catch_into != nullptr && *catch_into == nullptr) *catch_into = db;
  return SQLITE_OK;
}

// Registers CatchConnection once for the process; false where SQLite
// refuses.
bool Registered() {
  static const bool registered =
      sqlite3_auto_extension(
          reinterpret_cast<void (*)(void)>(&CatchConnection)) == SQLITE_OK;
  return registered;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Cache>> OpenReadOnlyCache(
    const std::string& path, std::string_view platform_name,
    PowerMode power_mode) {
  if (!std::filesystem::exists(path)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": no cache file to read"));
  }
  if (!Registered()) {
    return absl::InternalError("cannot watch SQLite's connections open");
  }
  sqlite3* db = nullptr;
  catch_into = &db;
  absl::StatusOr<std::unique_ptr<Cache>> cache =
      Cache::Open(path, platform_name, power_mode);
  catch_into = nullptr;
  if (!cache.ok()) return cache.status();
  if (db == nullptr || sqlite3_exec(db, "PRAGMA query_only = 1", nullptr,
                                    nullptr, nullptr) != SQLITE_OK) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot make the cache's connection read-only"));
  }
  return cache;
}

}  // namespace irontune
