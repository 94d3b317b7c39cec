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
      // Runs are one at a time: no other writer between load and store.
      meter_->device_us_.store(meter_->device_us() + r->elapsed_us,
                               std::memory_order_relaxed);
      meter_->runs_.fetch_add(1, std::memory_order_relaxed);
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
