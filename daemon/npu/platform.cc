#include "daemon/npu/platform.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/power_modes.h"

namespace irontune {
namespace {

static_assert(kPowerModeNames.size() == 1 + static_cast<int>(PowerMode::kTurbo),
              "one name per PowerMode, in its order");

// Each packaging and its word.
constexpr std::pair<v1::Packaging, const char*> kPackagings[] = {
    {v1::PACKAGING_FULL_ELF, "full_elf"},
    {v1::PACKAGING_XCLBIN_CHAIN, "xclbin_chain"},
};

}  // namespace

std::string_view PowerModeName(PowerMode mode) {
  const size_t i = static_cast<size_t>(mode);
  return i < kPowerModeNames.size() ? kPowerModeNames[i] : kPowerModeNames[0];
}

absl::StatusOr<PowerMode> ParsePowerMode(std::string_view text) {
  std::string lower = absl::AsciiStrToLower(
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())));
  for (size_t i = 0; i < kPowerModeNames.size(); ++i) {
    if (lower == kPowerModeNames[i]) return static_cast<PowerMode>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown power mode \"", absl::string_view(text.data(), text.size()),
      "\" (expected ", PowerModeNamesText(), ")"));
}

std::string DescribeStack(const StackVersions& stack) {
  const auto known = [](const std::string& v) -> absl::string_view {
    return v.empty() ? "unknown" : absl::string_view(v);
  };
  return absl::StrCat("firmware ", known(stack.firmware), ", driver ",
                      known(stack.driver), ", XRT ", known(stack.xrt));
}

std::string PlatformSlug(std::string_view platform_name) {
  std::string slug;
  bool gap = false;
  for (char c : platform_name) {
    char lower = absl::ascii_tolower(static_cast<unsigned char>(c));
    if ((lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9')) {
      if (gap && !slug.empty()) slug.push_back('-');
      gap = false;
      slug.push_back(lower);
    } else {
      gap = true;
    }
  }
  return slug;
}

absl::Span<const KnownPlatform> KnownPlatforms() {
  static constexpr KnownPlatform kKnown[] = {
      {"NPU Phoenix", "npu1"},      {"NPU Hawk Point", "npu1"},
      {"NPU Strix A0", "npu2"},     {"NPU Strix", "npu2"},
      {"NPU Strix Halo", "npu2"},   {"NPU Krackan", "npu2"},
      {"NPU Gorgon Point", "npu2"},
  };
  return kKnown;
}

bool PlatformAnswersTo(const Platform& platform, std::string_view asked) {
  const std::string want = PlatformSlug(asked);
  if (want.empty()) return true;
  const std::string name = PlatformSlug(platform.name);
  return want == name || want == PlatformSlug(platform.generation) ||
         want == absl::StripPrefix(name, "npu-");
}

const char* PackagingWord(v1::Packaging packaging) {
  for (const auto& [p, word] : kPackagings) {
    if (p == packaging) return word;
  }
  return "unspecified";
}

std::optional<v1::Packaging> ParsePackaging(std::string_view word) {
  for (const auto& [p, w] : kPackagings) {
    if (word == w) return p;
  }
  return std::nullopt;
}

}  // namespace irontune
