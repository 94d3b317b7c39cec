#include "daemon/store/iron_costs.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/store/cache_json.h"
#include "daemon/store/cache_key.h"

namespace irontune {
namespace {

using json = nlohmann::json;
using Fields = std::set<std::string>;

// IRON's per-key records at kIronCostsCommit, by their exact field sets
// (costcache.py: Measurement, Pairing, Shift, Accuracy; narrowing.py:
// Calibration, PackCost; each with Measured's pmode, calls, measured).
const Fields& MeasurementFields() {
  static const Fields f = {"pmode",    "calls",    "measured", "t_step_us",
                           "round_us", "alone_us", "output"};
  return f;
}
struct OtherRecord {
  const char* name;
  Fields fields;
  const char* why;
};
const std::vector<OtherRecord>& OtherRecords() {
  static const std::vector<OtherRecord> r = {
      {"Calibration",
       {"pmode", "calls", "measured", "dispatch_us", "reset_us", "base_us",
        "switch_us", "rounds", "switch_noise_us", "base_noise_us"},
       "a configure calibration of a pair of designs; irontune times each "
       "design's dispatch itself"},
      {"Pairing",
       {"pmode", "calls", "measured", "pair_us", "rounds"},
       "two designs run alternating, not one design's step"},
      {"Shift",
       {"pmode", "calls", "measured", "shift_us", "round_us", "output"},
       "a design's shift at an operating point, not its step"},
      {"Accuracy",
       {"within", "detail", "measured"},
       "an accuracy verdict; irontune judges outputs itself"},
      {"PackCost",
       {"pmode", "calls", "measured", "beside", "pair_us", "t_step_us",
        "rounds"},
       "designs packed on one device; irontune times designs one by one"},
  };
  return r;
}

// StepCost's fields (narrowing.py): the required ones, of both the
// current StepCost and the older one without noise_us and accurate, and
// every field it may carry.
const Fields& StepRequired() {
  static const Fields f = {"pmode",    "calls", "t_step_us",
                           "alone_us", "exact", "rounds"};
  return f;
}
const Fields& StepKnown() {
  static const Fields f = {"pmode",    "calls",    "measured", "t_step_us",
                           "noise_us", "alone_us", "exact",    "accurate",
                           "rounds",   "beside",   "pair_us",  "points"};
  return f;
}

Fields KeysOf(const json& j) {
  Fields keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  return keys;
}

std::string Listed(const Fields& fields) {
  return absl::StrCat("[", absl::StrJoin(fields, ", "), "]");
}

// The final path component of `path`, and the one before it ("" if none).
std::pair<std::string, std::string> NameAndParent(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return {p, ""};
  std::string name = p.substr(slash + 1);
  std::string dir = p.substr(0, slash);
  const size_t up = dir.rfind('/');
  return {name, up == std::string::npos ? dir : dir.substr(up + 1)};
}

// Why the figure's pmode is not the partition's; "" when it is.
std::string ModeMismatch(const std::string& pmode, PowerMode mode) {
  absl::StatusOr<PowerMode> parsed = ParsePowerMode(pmode);
  if (parsed.ok() && *parsed == mode) return "";
  return absl::StrCat("measured at power mode \"", pmode,
                      "\", this cache is for ",
                      std::string(PowerModeName(mode)));
}

bool IsCount(const json& j) {
  return j.is_number_unsigned() &&
         j.get<uint64_t>() <= std::numeric_limits<uint32_t>::max();
}

// The type errors of a Measurement (or StepCost) object's common fields.
std::string CommonTypeError(const json& j) {
  if (!j.at("t_step_us").is_number()) return "t_step_us: not a number";
  if (!j.at("pmode").is_string()) return "pmode: not a string";
  if (!IsCount(j.at("calls"))) return "calls: not a count";
  if (j.contains("measured") && !j.at("measured").is_string()) {
    return "measured: not a string";
  }
  return "";
}

// A cost cache Measurement (kIronCostsCommit's) as irontune's figure.
absl::StatusOr<v1::Measurement> ReadMeasurement(const json& j) {
  if (std::string e = CommonTypeError(j); !e.empty()) {
    return absl::InvalidArgumentError(e);
  }
  v1::Measurement m;
  m.set_t_step_us(j.at("t_step_us").get<double>());
  if (!j.at("round_us").is_array()) {
    return absl::InvalidArgumentError("round_us: not a list");
  }
  for (const json& r : j.at("round_us")) {
    if (!r.is_number()) {
      return absl::InvalidArgumentError("round_us: not a list of numbers");
    }
    m.add_round_us(r.get<double>());
  }
  if (!j.at("alone_us").is_number()) {
    return absl::InvalidArgumentError("alone_us: not a number");
  }
  if (!j.at("output").is_string()) {
    return absl::InvalidArgumentError("output: not a string");
  }
  m.set_output(j.at("output").get<std::string>());
  m.set_power_mode(j.at("pmode").get<std::string>());
  m.set_calls(j.at("calls").get<uint32_t>());
  m.set_measured(j.at("measured").get<std::string>());
  return m;
}

// One per-key file (`<key>.json` of the cost cache).
void ReadPerKeyFile(const std::string& path, std::string_view text,
                    const json& j, PowerMode mode, IronFileRead& out) {
  const auto [name, parent] = NameAndParent(path);
  auto skip = [&](const std::string& why) {
    out.skipped.push_back(absl::StrCat(path, ": ", why));
  };
  const std::string stem = name.substr(0, name.size() - 5);  // ".json"
  if (!IsCacheKeyDigest(stem)) {
    return skip("its name is not a 32-hex-digit key");
  }
  const Fields keys = KeysOf(j);
  for (const OtherRecord& r : OtherRecords()) {
    if (keys == r.fields)
      return skip(absl::StrCat("an IRON ", r.name, ": ", r.why));
  }
  absl::StatusOr<v1::Measurement> m =
      keys == MeasurementFields()
          ? ReadMeasurement(j)
          : ParseIronCost(text);  // the older Measurement, or why not
  if (!m.ok()) {
    if (keys != MeasurementFields() && !keys.count("default_round_us") &&
        !keys.count("run")) {
      return skip(
          absl::StrCat("not an IRON cost record (fields ", Listed(keys), ")"));
    }
    return skip(std::string(m.status().message()));
  }
  if (std::string e = ModeMismatch(m->power_mode(), mode); !e.empty()) {
    return skip(e);
  }
  absl::StatusOr<PowerMode> dir_mode = ParsePowerMode(parent);
  if (dir_mode.ok() && *dir_mode != mode) {
    return skip(absl::StrCat("its directory \"", parent,
                             "\" is another power mode than its pmode"));
  }
  m->set_power_mode(std::string(PowerModeName(mode)));
  out.figures.push_back({stem, *std::move(m)});
}

// One step of a CostTable as irontune's figure, or why not.
absl::StatusOr<v1::Measurement> ReadStep(const json& row, PowerMode mode) {
  if (!row.is_object()) return absl::InvalidArgumentError("not an object");
  const Fields keys = KeysOf(row);
  Fields missing, unknown;
  std::set_difference(StepRequired().begin(), StepRequired().end(),
                      keys.begin(), keys.end(),
                      std::inserter(missing, missing.end()));
  std::set_difference(keys.begin(), keys.end(), StepKnown().begin(),
                      StepKnown().end(), std::inserter(unknown, unknown.end()));
  if (!missing.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("recorded without ", Listed(missing)));
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Listed(unknown), " not a StepCost's field"));
  }
  if (std::string e = CommonTypeError(row); !e.empty()) {
    return absl::InvalidArgumentError(e);
  }
  const std::string pmode = row.at("pmode").get<std::string>();
  if (std::string e = ModeMismatch(pmode, mode); !e.empty()) {
    return absl::FailedPreconditionError(e);
  }
  v1::Measurement m;
  m.set_t_step_us(row.at("t_step_us").get<double>());
  if (row.contains("noise_us") && row.at("noise_us").is_number()) {
    m.set_t_step_noise_us(row.at("noise_us").get<double>());
  }
  m.set_power_mode(std::string(PowerModeName(mode)));
  m.set_calls(row.at("calls").get<uint32_t>());
  if (row.contains("measured")) {
    m.set_measured(row.at("measured").get<std::string>());
  }
  return m;
}

// A CostTable file.
void ReadCostTable(const std::string& path, const json& j, PowerMode mode,
                   IronFileRead& out) {
  const json& steps = j.at("steps");
  const json& calibrations = j.at("calibrations");
  if (!steps.is_object() || !calibrations.is_object()) {
    out.skipped.push_back(absl::StrCat(
        path, ": a CostTable's steps and calibrations must be objects"));
    return;
  }
  std::string dispatch = "fused";  // tables before "dispatch" were full ELF
  if (j.contains("dispatch")) {
    if (!j.at("dispatch").is_string() ||
        (j.at("dispatch") != "fused" && j.at("dispatch") != "separate")) {
      out.skipped.push_back(
          absl::StrCat(path, ": dispatch is not \"fused\" or \"separate\""));
      return;
    }
    dispatch = j.at("dispatch").get<std::string>();
  }
  for (const auto& [key, row] : steps.items()) {
    absl::StatusOr<v1::Measurement> m = ReadStep(row, mode);
    if (!m.ok()) {
      out.skipped.push_back(absl::StrCat(
          path, ": steps[", key, "]: ", std::string(m.status().message())));
      continue;
    }
    out.figures.push_back({absl::StrCat(dispatch, "/", key), *std::move(m)});
  }
  for (const auto& [key, row] : calibrations.items()) {
    out.skipped.push_back(
        absl::StrCat(path, ": calibrations[", key,
                     "]: a configure calibration of a pair of designs; "
                     "irontune times each design's dispatch itself"));
  }
  if (j.contains("packs") && j.at("packs").is_object()) {
    for (const auto& [key, row] : j.at("packs").items()) {
      out.skipped.push_back(
          absl::StrCat(path, ": packs[", key,
                       "]: designs packed on one device; irontune times "
                       "designs one by one"));
    }
  }
}

}  // namespace

IronFileRead ReadIronCostFile(std::string_view path_view, std::string_view text,
                              PowerMode mode) {
  const std::string path(path_view);
  IronFileRead out;
  if (path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0) {
    out.skipped.push_back(absl::StrCat(
        path, ": not a .json file (a <key>.<pid> is IRON's unfinished write)"));
    return out;
  }
  const json j = json::parse(text.begin(), text.end(), nullptr,
                             /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    out.skipped.push_back(
        absl::StrCat(path, ": not a JSON object (not an IRON cost file)"));
    return out;
  }
  if (j.contains("steps") && j.contains("calibrations")) {
    ReadCostTable(path, j, mode, out);
  } else {
    ReadPerKeyFile(path, text, j, mode, out);
  }
  return out;
}

}  // namespace irontune
