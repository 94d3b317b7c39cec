// IRON's cost files as `cache import` sends them: each file becomes one
// import line {"kind": "iron_file", "path": .., "text": ..} that irontuned
// reads (daemon/store/iron_costs.h says which records it keeps).
//
// Thread-compatible; reads the file system only.
#ifndef IRONTUNE_CLIENT_IRON_COST_FILES_H_
#define IRONTUNE_CLIENT_IRON_COST_FILES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace irontune {

// The import lines for `path`: a directory (IRON's `costs/` tree or any part
// of it) gives a line per regular file under it, in path order; a file
// holding one JSON object without a "kind" (an IRON per-key file or a
// CostTable) gives its one line. nullopt for a file in irontune's own
// export format (JSON lines with "kind"). NotFound when `path` cannot be
// read; InvalidArgument for a file over 64 MiB, naming it.
absl::StatusOr<std::optional<std::vector<std::string>>> IronImportLines(
    const std::string& path);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_IRON_COST_FILES_H_
