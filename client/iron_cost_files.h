// IRON's cost files on the client's side.
//
// Import: each file becomes one import line {"kind": "iron_file", "path":
// .., "text": ..} that irontuned reads (daemon/store/iron_costs.h says which
// records it keeps).
//
// Export (`cache export --iron DIR`): the lines of irontuned's cache export
// written as IRON's cost cache, one file per key, as amd/IRON's
// iron/tune/measure.py (`Cache`, `Measurement`, `write`) lays it out:
//   DIR/<platform slug>/<pmode>/<key>.json
// holding `json.dumps(dataclasses.asdict(Measurement)) + "\n"`:
//   {"t_step_us": 12.5, "round_us": [12.4, 12.6], "output": "..",
//    "run": "..", "pmode": "Default", "calls": 50, "default_round_us": [],
//    "measured": "2026-12-01"}
// with Python's spelling of numbers (float repr: "100.0", "1e-05") and
// strings (ASCII, \uXXXX escapes). The pmode directory and field are
// xrt-smi's text for the mode ("Default"). Each file is written whole, as
// IRON writes, but through a temporary created exclusively beside it and
// renamed into place (client/replace_file.h).
//
// Only a figure under one of IRON's keys (32 hex digits) can be looked up
// by IRON: the figures irontuned imported from IRON's cost cache. A
// measurement irontune timed is kept under irontune's own digest (IRON's
// key hashes IRON's recipe hash, which irontune's builder protocol does not
// carry), a CostTable step under IRON's cost_key, and a builder verdict is
// no cost at all: these are skipped and counted, each with its reason.
//
// Thread-compatible; reads and writes the file system only.
#ifndef IRONTUNE_CLIENT_IRON_COST_FILES_H_
#define IRONTUNE_CLIENT_IRON_COST_FILES_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
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

// Python's repr of a finite double, as json.dumps writes a float:
// shortest round-trip digits, positional for exponents -4..15 (always with
// a fraction: "100.0"), else "d.ddde+XX". REQUIRES: std::isfinite(v).
std::string PythonFloat(double v);

// What an export to IRON's layout wrote and skipped.
struct IronExportCounts {
  size_t written = 0;
  std::map<std::string, size_t> skipped;  // by reason
  size_t skipped_total() const;
};

// Writes export lines under `root` as IRON's cost cache. `pmode` is
// xrt-smi's spelling of the power mode ("Default"); empty: the line's mode
// with its first letter in upper case. Not thread-safe.
class IronCostWriter {
 public:
  IronCostWriter(std::string root, std::string pmode)
      : root_(std::move(root)), pmode_(std::move(pmode)) {}

  // Takes one line of irontuned's cache export: writes its figure, or
  // counts why not. InvalidArgument for a line that is not an export
  // line's JSON, naming it; DataLoss when a file cannot be written
  // (nothing half-written is left).
  absl::Status Add(const std::string& line);

  const IronExportCounts& counts() const { return counts_; }

 private:
  const std::string root_;
  const std::string pmode_;
  IronExportCounts counts_;
  size_t lines_ = 0;
};

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_IRON_COST_FILES_H_
