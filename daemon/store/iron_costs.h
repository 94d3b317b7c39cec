// IRON's cost files, read into the figures the cache keeps (amd/IRON at
// kIronCostsCommit: iron/common/graph/costcache.py and narrowing.py).
//
// IRON keeps measurements in two shapes:
// - the cost cache: one JSON object per key, in
//   `$NPU_CACHE_HOME/iron/costs/<platform slug>/<pmode>/<key>.json`, the
//   pmode directory being xrt-smi's raw text ("Default"). A file is one of
//   several records, told apart (as IRON's reader does) by its exact field
//   set: a Measurement (a design's step time) is imported; a Calibration,
//   Pairing, Shift, Accuracy or PackCost describes a pair, a point or a
//   verdict, not one design's step, and is skipped, saying so. The older
//   Measurement of irontune's earlier reader (ParseIronCost) is taken too.
// - a CostTable: one JSON file {"device", "dispatch", "steps",
//   "calibrations"[, "packs"]}. Each step (keyed by IRON's cost_key,
//   "<class>_<identity>") is imported under "<dispatch>/<cost_key>";
//   calibrations and packs are skipped, each with its reason.
//
// Thread-safe: functions of their arguments. Never throws.
#ifndef IRONTUNE_DAEMON_STORE_IRON_COSTS_H_
#define IRONTUNE_DAEMON_STORE_IRON_COSTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "daemon/npu/platform.h"
#include "irontune/v1/measurement.pb.h"

namespace irontune {

// The amd/IRON commit whose cost-file formats this file reads.
inline constexpr std::string_view kIronCostsCommit =
    "0e2b7cb1fc791a4e7e612ea2ef97faabfde01656";

// One figure to keep in the cache's IRON table, under IRON's key.
struct IronFigure {
  std::string key;
  v1::Measurement measurement;  // power_mode spelled as PowerModeName
};

// What one file held: the figures to import, and each record not imported
// as "<path>[: <entry>]: <why>".
struct IronFileRead {
  std::vector<IronFigure> figures;
  std::vector<std::string> skipped;
};

// Reads `text`, the contents of the file at `path` (as the importer named
// it; its name and its parent directory are checked as IRON's layout has
// them), for a cache partition at power mode `mode`. A figure measured at
// another power mode is skipped, as is a file that is neither shape. Never
// fails: whatever is wrong is a skipped line.
IronFileRead ReadIronCostFile(std::string_view path, std::string_view text,
                              PowerMode mode);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_STORE_IRON_COSTS_H_
