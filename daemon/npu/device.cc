#include "daemon/npu/device.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace irontune {

std::string_view PowerModeName(PowerMode mode) {
  switch (mode) {
    case PowerMode::kDefault:
      return "default";
    case PowerMode::kPowersaver:
      return "powersaver";
    case PowerMode::kBalanced:
      return "balanced";
    case PowerMode::kPerformance:
      return "performance";
    case PowerMode::kTurbo:
      return "turbo";
  }
  return "default";
}

absl::StatusOr<PowerMode> ParsePowerMode(std::string_view text) {
  std::string lower = absl::AsciiStrToLower(
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())));
  for (PowerMode mode :
       {PowerMode::kDefault, PowerMode::kPowersaver, PowerMode::kBalanced,
        PowerMode::kPerformance, PowerMode::kTurbo}) {
    if (lower == PowerModeName(mode)) return mode;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown power mode \"", absl::string_view(text.data(), text.size()),
      "\" (expected default, powersaver, balanced, performance or turbo)"));
}

absl::StatusOr<std::unique_ptr<Image>> DeviceWrapper::Load(
    const Artifact& artifact) {
  absl::StatusOr<std::unique_ptr<Image>> image = target_->Load(artifact);
  if (!image.ok()) return image.status();
  return WrapImage(*std::move(image), artifact);
}

std::unique_ptr<Image> DeviceWrapper::WrapImage(std::unique_ptr<Image> image,
                                                const Artifact&) {
  return image;
}

}  // namespace irontune
