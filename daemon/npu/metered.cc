#include "daemon/npu/metered.h"

#include <memory>
#include <utility>

namespace irontune {

class MeteredDevice::MeteredImage : public ImageWrapper {
 public:
  MeteredImage(std::unique_ptr<Image> image, MeteredDevice* meter)
      : ImageWrapper(std::move(image)), meter_(meter) {}

  absl::StatusOr<RunResult> Run() override {
    absl::StatusOr<RunResult> r = ImageWrapper::Run();
    if (r.ok()) {
      meter_->device_us_ += r->elapsed_us;
      ++meter_->runs_;
    }
    return r;
  }

 private:
  MeteredDevice* meter_;  // outlives the image
};

std::unique_ptr<Image> MeteredDevice::WrapImage(std::unique_ptr<Image> image,
                                                const Artifact&) {
  return std::make_unique<MeteredImage>(std::move(image), this);
}

}  // namespace irontune
