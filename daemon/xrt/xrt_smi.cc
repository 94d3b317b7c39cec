#include "daemon/xrt/xrt_smi.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "daemon/base/subprocess.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

// What XRT prints as the power mode where the driver answers no power
// mode query (core/common/info_platform.cpp add_performance_info @
// 202420.2.18.179, 202510.2.19.194 and master 963c58ee).
constexpr char kPowerModeNotSupported[] = "not supported";

// A "Key : value" line's key, lowercased with single spaces, and its
// trimmed value; false for other lines and the device banner.
bool SplitField(absl::string_view line, std::string& key, std::string& value) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(line);
  if (trimmed.empty() || trimmed.front() == '[') return false;
  const size_t colon = trimmed.find(':');
  if (colon == absl::string_view::npos) return false;
  std::vector<absl::string_view> words =
      absl::StrSplit(trimmed.substr(0, colon), ' ', absl::SkipEmpty());
  key = absl::AsciiStrToLower(absl::StrJoin(words, " "));
  value = std::string(absl::StripAsciiWhitespace(trimmed.substr(colon + 1)));
  return true;
}

}  // namespace

absl::StatusOr<SmiPlatform> ParsePlatformReport(absl::string_view text) {
  bool have_name = false;
  bool have_mode = false;
  SmiPlatform p;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::string key, value;
    if (!SplitField(line, key, value)) continue;
    if (key == "name" && !have_name) {
      if (value.empty()) {
        return absl::InvalidArgumentError(
            "xrt-smi platform report: \"Name\" is empty");
      }
      p.name = value;
      have_name = true;
    } else if (key == "power mode" && !have_mode) {
      have_mode = true;
      if (absl::EqualsIgnoreCase(value, kPowerModeNotSupported)) {
        p.power_mode = PowerMode::kDefault;
        p.power_mode_supported = false;
        continue;
      }
      absl::StatusOr<PowerMode> mode = ParsePowerMode(value);
      if (!mode.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("xrt-smi platform report: \"Power Mode\": ",
                         mode.status().message()));
      }
      p.power_mode = *mode;
    }
  }
  std::vector<std::string> missing;
  if (!have_name) missing.push_back("\"Name\"");
  if (!have_mode) missing.push_back("\"Power Mode\"");
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "xrt-smi platform report has no ", absl::StrJoin(missing, " and "),
        " field (is the amdxdna driver loaded and XRT >= 2.19?)"));
  }
  return p;
}

namespace {

using nlohmann::json;

absl::Status BadJson(const std::string& where, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("xrt-smi aie-partitions report: ", where, ": ", what));
}

absl::StatusOr<int> PidOf(const json& pid, const std::string& where) {
  int64_t v = -1;
  if (pid.is_number_integer()) {
    v = pid.get<int64_t>();
  } else if (!pid.is_string() ||
             !absl::SimpleAtoi(pid.get<std::string>(), &v)) {
    return BadJson(where, "not a pid");
  }
  if (v <= 0 || v > (1 << 30)) return BadJson(where, "not a pid");
  return static_cast<int>(v);
}

// `j[key]` as an array, or empty when absent. Boost's property-tree
// writer, which xrt-smi writes with, prints a list with no items as "".
absl::StatusOr<json> ArrayAt(const json& j, const char* key,
                             const std::string& where) {
  if (!j.is_object()) return BadJson(where, "not an object");
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return json::array();
  if (it->is_string() && it->get<std::string>().empty()) return json::array();
  if (!it->is_array()) {
    return BadJson(absl::StrCat(where, ".", key),
                   "not an array (nor \"\", an empty one)");
  }
  return *it;
}

absl::Status PartitionPids(const json& part, const std::string& where,
                           int own_pid, std::vector<int>& pids) {
  ASSIGN_OR_RETURN(const json ctxs, ArrayAt(part, "hw_contexts", where));
  for (size_t k = 0; k < ctxs.size(); ++k) {
    const std::string w = absl::StrCat(where, ".hw_contexts[", k, "]");
    if (!ctxs[k].is_object() || !ctxs[k].contains("pid")) {
      return BadJson(w, "has no pid");
    }
    ASSIGN_OR_RETURN(const int pid, PidOf(ctxs[k]["pid"], w + ".pid"));
    if (pid != own_pid) pids.push_back(pid);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseAiePartitions(absl::string_view text,
                                                    int own_pid) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return BadJson("file", "not JSON");
  std::vector<int> pids;
  ASSIGN_OR_RETURN(const json devices, ArrayAt(j, "devices", "report"));
  for (size_t d = 0; d < devices.size(); ++d) {
    const std::string dw = absl::StrCat("devices[", d, "]");
    if (!devices[d].is_object()) return BadJson(dw, "not an object");
    const auto aie = devices[d].find("aie_partitions");
    if (aie == devices[d].end() || *aie == "") continue;
    ASSIGN_OR_RETURN(const json parts,
                     ArrayAt(*aie, "partitions", dw + ".aie_partitions"));
    for (size_t i = 0; i < parts.size(); ++i) {
      RETURN_IF_ERROR(PartitionPids(
          parts[i], absl::StrCat(dw, ".aie_partitions.partitions[", i, "]"),
          own_pid, pids));
    }
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

namespace {

// docs/npu-facts.md: each generation's array, hwctx_limit, packaging and
// DPM H-clock table (lowest, level 3, top).
struct Generation {
  const char* name;
  int columns, contexts;
  bool full_elf;
  int low_mhz, balanced_mhz, top_mhz;
};
constexpr Generation kNpu1 = {"npu1", 4, 6, false, 800, 1024, 1600};
constexpr Generation kNpu2 = {"npu2", 8, 16, true, 792, 1267, 1800};

// An NPU family: the names its drivers report, lower case, and the one
// it is known by. The driver's names are the vbnv strings of
// drivers/accel/amdxdna/npu*_regs.c (torvalds/linux 1c1960f5) and of
// amd/xdna-driver src/driver/amdxdna/npu*_regs.c across its history
// (9075f91a renamed RyzenAI-npuN to the marketing names, 9e977382 fixed
// "Kracken", 01891bd5 added the firmware's board names, b341c114 dropped
// npu2, Strix A0). mlir-aie also takes both schemes (python/iron/config.py
// @ 07994622). Hawk Point is Phoenix's silicon (PCI 1502), which no
// driver's table names apart.
struct Family {
  const char* canonical;           // "NPU Krackan"; a board number is appended
  std::vector<const char*> names;  // lower case, no leading "npu "
  const Generation* generation;
};

const std::vector<Family>& Families() {
  static const auto* families = new std::vector<Family>{
      {"NPU Phoenix", {"phoenix", "ryzenai-npu1"}, &kNpu1},
      {"NPU Hawk Point", {"hawk point"}, &kNpu1},
      {"NPU Strix A0", {"strix a0", "ryzenai-npu2"}, &kNpu2},
      {"NPU Strix", {"strix", "ryzenai-npu4"}, &kNpu2},
      {"NPU Strix Halo", {"strix halo", "ryzenai-npu5"}, &kNpu2},
      {"NPU Krackan", {"krackan", "kracken", "ryzenai-npu6"}, &kNpu2},
      {"NPU Gorgon Point", {"gorgon point"}, &kNpu2},
  };
  return *families;
}

// `name` lower case, its words single-spaced, "npu " dropped from the
// front, and a trailing board number split off into `board`.
std::string NormalName(absl::string_view name, std::string& board) {
  std::vector<std::string> words = absl::StrSplit(
      absl::AsciiStrToLower(name), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (!words.empty() && words.front() == "npu") words.erase(words.begin());
  board.clear();
  if (words.size() >= 2 &&
      std::all_of(words.back().begin(), words.back().end(),
                  [](char c) { return absl::ascii_isdigit(c); })) {
    board = words.back();
    words.pop_back();
  }
  return absl::StrJoin(words, " ");
}

absl::StatusOr<const Family*> FamilyOf(absl::string_view reported,
                                       std::string& board) {
  const std::string name = NormalName(reported, board);
  for (const Family& f : Families()) {
    for (const char* n : f.names) {
      if (name == n) return &f;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown NPU \"", reported,
      "\" (irontune drives npu1 and the npu2 family: NPU Phoenix, NPU Hawk "
      "Point, NPU Strix, NPU Strix Halo, NPU Krackan, NPU Gorgon Point, each "
      "with or without a board number, and the amdxdna driver's "
      "RyzenAI-npu1, -npu2, -npu4, -npu5 and -npu6)"));
}

}  // namespace

absl::StatusOr<std::string> CanonicalNpuName(absl::string_view reported) {
  std::string board;
  ASSIGN_OR_RETURN(const Family* f, FamilyOf(reported, board));
  return board.empty() ? std::string(f->canonical)
                       : absl::StrCat(f->canonical, " ", board);
}

namespace {

const Generation& GenerationOf(absl::string_view canonical) {
  std::string board;
  return *(*FamilyOf(canonical, board))->generation;
}

}  // namespace

absl::StatusOr<Platform> PlatformOf(const SmiPlatform& smi) {
  Platform p;
  ASSIGN_OR_RETURN(p.name, CanonicalNpuName(smi.name));
  const Generation& g = GenerationOf(p.name);
  p.generation = g.name;
  p.power_mode = smi.power_mode;
  p.columns = g.columns;
  p.hw_contexts = g.contexts;
  p.full_elf = g.full_elf;
  p.core_mhz = smi.power_mode == PowerMode::kPowersaver ? g.low_mhz
               : smi.power_mode == PowerMode::kBalanced ? g.balanced_mhz
                                                        : g.top_mhz;
  return p;
}

XrtSmi::XrtSmi(XrtSmiOptions options) : options_(std::move(options)) {
  if (options_.path.empty()) {
    const char* xrt = std::getenv("XILINX_XRT");
    for (std::string dir : {std::string(xrt != nullptr ? xrt : ""),
                            std::string("/opt/xilinx/xrt")}) {
      const std::string p = dir + "/bin/xrt-smi";
      if (!dir.empty() && ::access(p.c_str(), X_OK) == 0) {
        options_.path = p;
        break;
      }
    }
    if (options_.path.empty()) options_.path = "xrt-smi";
  }
  if (options_.scratch_file.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    options_.scratch_file =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                     "/irontuned-aie-partitions-", ::getpid(), ".json");
  }
}

absl::StatusOr<std::string> XrtSmi::Run(const std::string& subcommand,
                                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = {options_.path, subcommand};
  if (!options_.bdf.empty()) {
    argv.push_back("-d");
    argv.push_back(options_.bdf);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string shown = absl::StrJoin(argv, " ");
  ProcessOptions process;
  process.timeout = options_.timeout;
  process.max_stdout = size_t{1} << 20;
  process.stderr_keep = 2000;
  absl::StatusOr<ProcessResult> r = RunProcess(argv, "", process);
  if (!r.ok()) {
    return absl::Status(r.status().code(),
                        absl::StrCat("`", shown, "`: ", r.status().message(),
                                     " (--xrt-smi names the program)"));
  }
  if (r->timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat("`", shown, "` ", DescribeEnd(*r, process)));
  }
  if (!r->exited || r->exit_code != 0) {
    const std::string said(
        absl::StripAsciiWhitespace(r->err_tail.empty() ? r->out : r->err_tail));
    return absl::UnavailableError(
        absl::StrCat("`", shown, "` failed (",
                     r->exited ? absl::StrCat("exit ", r->exit_code)
                               : DescribeEnd(*r, process),
                     ")", said.empty() ? "" : ": ", said.substr(0, 2000)));
  }
  return r->out;
}

absl::StatusOr<SmiPlatform> XrtSmi::ExaminePlatform() {
  ASSIGN_OR_RETURN(const std::string out, Run("examine", {"-r", "platform"}));
  return ParsePlatformReport(out);
}

absl::StatusOr<std::vector<int>> XrtSmi::HolderPids(int own_pid) {
  const std::string& file = options_.scratch_file;
  std::remove(file.c_str());
  RETURN_IF_ERROR(
      Run("examine", {"-r", "aie-partitions", "-f", "JSON", "-o", file})
          .status());
  std::ifstream in(file);
  if (!in) {
    return absl::UnavailableError(absl::StrCat(
        "`", options_.path, " examine -r aie-partitions` wrote no ", file));
  }
  std::stringstream text;
  text << in.rdbuf();
  in.close();
  std::remove(file.c_str());
  return ParseAiePartitions(text.str(), own_pid);
}

absl::Status XrtSmi::SetPowerMode(PowerMode mode) {
  ASSIGN_OR_RETURN(const SmiPlatform now, ExaminePlatform());
  if (!now.power_mode_supported) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the NPU", options_.bdf.empty() ? "" : " at ", options_.bdf,
        " reports its power mode as \"", kPowerModeNotSupported,
        "\" (its driver answers no power mode query, so none can be set); "
        "run without --power-mode (docs/npu-box.md)"));
  }
  if (mode == PowerMode::kTurbo) {
    ASSIGN_OR_RETURN(const std::vector<int> holders, HolderPids(0));
    if (!holders.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "power mode turbo is refused while hardware contexts are active "
          "(held by pid ",
          absl::StrJoin(holders, ", "),
          "); stop those processes or use --power-mode performance"));
    }
  }
  return Run("configure", {"--pmode", std::string(PowerModeName(mode))})
      .status();
}

}  // namespace irontune
