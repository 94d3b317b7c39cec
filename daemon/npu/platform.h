// What an NPU is, as irontuned keys its figures: the platform report and
// its power modes. A header of its own so that the store (daemon/store/)
// and the fleet can name a partition without the whole Device seam.
// Threads: plain values and pure functions.
#ifndef IRONTUNE_DAEMON_NPU_PLATFORM_H_
#define IRONTUNE_DAEMON_NPU_PLATFORM_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "irontune/v1/measurement.pb.h"

namespace irontune {

// The NPU's power modes (`xrt-smi configure --pmode`; docs/npu-facts.md,
// "Power modes").
enum class PowerMode { kDefault, kPowersaver, kBalanced, kPerformance, kTurbo };

// "default", "powersaver", ...
std::string_view PowerModeName(PowerMode mode);
// Case-insensitive and trimmed, as xrt-smi's output varies; InvalidArgument
// naming the text otherwise.
absl::StatusOr<PowerMode> ParsePowerMode(std::string_view text);

// The platform report (`xrt-smi examine -r platform`).
struct Platform {
  std::string name;        // "NPU Strix", "NPU Phoenix"
  std::string generation;  // "npu1" or "npu2": which profile file applies
  PowerMode power_mode = PowerMode::kDefault;
  int columns = 0;        // usable columns
  int core_mhz = 0;       // AIE core (H) clock at the present power mode
  int hw_contexts = 0;    // hardware contexts at once (hwctx_limit)
  bool full_elf = false;  // supports full-ELF packaging
};

// The software and firmware under an NPU, as the box reports them: what a
// figure timed on it depends on besides the platform and the builder, so
// the fleet keys figures by them too (daemon/fleet/fleet_toolchain.h).
// Each is one line of text, compared as it is; "" when it is not known.
struct StackVersions {
  // The NPU firmware's version as its driver reports it ("1.5.2.380").
  std::string firmware;
  // The amdxdna driver's: an out-of-tree module's version and git hash
  // ("2.21.0_20260821, 856409ca..."), or the kernel it is part of.
  std::string driver;
  // The XRT runtime's: its version and git hash ("2.19.0, 7d8151e6...").
  std::string xrt;
};

// One line for a log: "firmware F, driver D, XRT X", "unknown" for an
// empty one.
std::string DescribeStack(const StackVersions& stack);

// A platform name as a partition slug, as IRON spells its cache
// directories: lower case, each run of other characters than [a-z0-9] one
// '-', no '-' at either end ("NPU Strix" -> "npu-strix").
std::string PlatformSlug(std::string_view platform_name);

// The NPUs irontune knows by name, as xrt-smi names them, with their
// generation (NPU_FACTS.md): what a front accepts as a job's platform.
struct KnownPlatform {
  std::string_view name;        // "NPU Strix"
  std::string_view generation;  // "npu2"
};
absl::Span<const KnownPlatform> KnownPlatforms();

// Whether `asked` names `platform`: its name ("NPU Strix"), that name
// without its "NPU" prefix ("Strix"), or its generation ("npu2"), compared
// as slugs (PlatformSlug), so case, spaces and dashes do not matter. An
// empty `asked` names every platform.
bool PlatformAnswersTo(const Platform& platform, std::string_view asked);

// A packaging's word in the builder protocol, the artifact manifests and
// the sim's design payload: "full_elf", "xclbin_chain"; "unspecified"
// for any other value.
const char* PackagingWord(v1::Packaging packaging);
// The packaging `word` names (PackagingWord's inverse); nullopt for any
// other text, "unspecified" too.
std::optional<v1::Packaging> ParsePackaging(std::string_view word);

// The packaging a platform runs when none is asked for: full ELF where it
// has it, else the xclbin chain.
inline v1::Packaging DefaultPackaging(const Platform& platform) {
  return platform.full_elf ? v1::PACKAGING_FULL_ELF
                           : v1::PACKAGING_XCLBIN_CHAIN;
}

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_NPU_PLATFORM_H_
