// The NPU's power modes by name, as xrt-smi's `configure --pmode` takes
// them: the one list the daemon's PowerMode (daemon/npu/platform.h), its
// flags and the client's flags read. Thread-safe (constants).
#ifndef IRONTUNE_COMMON_POWER_MODES_H_
#define IRONTUNE_COMMON_POWER_MODES_H_

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace irontune {

// In the order of daemon/npu/platform.h's PowerMode.
inline constexpr std::array<std::string_view, 5> kPowerModeNames = {
    "default", "powersaver", "balanced", "performance", "turbo"};

// The names as a flag's allowed values (CLI::IsMember takes strings).
inline std::vector<std::string> PowerModeNameList() {
  return {kPowerModeNames.begin(), kPowerModeNames.end()};
}

// "default, powersaver, balanced, performance or turbo", for messages.
inline std::string PowerModeNamesText() {
  std::string text;
  for (size_t i = 0; i < kPowerModeNames.size(); ++i) {
    if (i > 0) text += i + 1 == kPowerModeNames.size() ? " or " : ", ";
    text += kPowerModeNames[i];
  }
  return text;
}

}  // namespace irontune

#endif  // IRONTUNE_COMMON_POWER_MODES_H_
