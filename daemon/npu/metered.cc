#include "daemon/npu/metered.h"

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

absl::StatusOr<BuildOutcome> MeteredBuilder::Build(
    const BuildRequest& request) {
  const absl::Time start = now_();
  absl::StatusOr<BuildOutcome> outcome = BuilderWrapper::Build(request);
  waited_seconds_ += absl::ToDoubleSeconds(now_() - start);
  return outcome;
}

absl::StatusOr<BuildOutcome> MeteredBuilder::Await(
    const BuildRequest& request, const std::function<bool()>& cancelled) {
  const absl::Time start = now_();
  absl::StatusOr<BuildOutcome> outcome =
      BuilderWrapper::Await(request, cancelled);
  waited_seconds_ += absl::ToDoubleSeconds(now_() - start);
  return outcome;
}

absl::StatusOr<std::string> MeteredBuilder::Fit(const BuildRequest& request) {
  const absl::Time start = now_();
  absl::StatusOr<std::string> verdict = BuilderWrapper::Fit(request);
  waited_seconds_ += absl::ToDoubleSeconds(now_() - start);
  return verdict;
}

}  // namespace irontune
