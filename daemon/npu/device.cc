#include "daemon/npu/device.h"

#include <utility>

namespace irontune {

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
