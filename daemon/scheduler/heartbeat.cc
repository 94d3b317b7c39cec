#include "daemon/scheduler/heartbeat.h"

#include <chrono>
#include <utility>

namespace irontune {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Beats on entering and leaving, whatever the call returns.
class BeatScope {
 public:
  explicit BeatScope(Heartbeat* heartbeat) : heartbeat_(heartbeat) {
    heartbeat_->Beat();
  }
  ~BeatScope() { heartbeat_->Beat(); }
  BeatScope(const BeatScope&) = delete;
  BeatScope& operator=(const BeatScope&) = delete;

 private:
  Heartbeat* heartbeat_;
};

class HeartbeatImage : public ImageWrapper {
 public:
  HeartbeatImage(std::unique_ptr<Image> target, Heartbeat* heartbeat)
      : ImageWrapper(std::move(target)), heartbeat_(heartbeat) {}

  absl::Status WriteValues(
      const std::map<std::string, int64_t>& values) override {
    BeatScope beat(heartbeat_);
    return ImageWrapper::WriteValues(values);
  }
  absl::Status WriteBuffer(std::string_view name,
                           std::string_view bytes) override {
    BeatScope beat(heartbeat_);
    return ImageWrapper::WriteBuffer(name, bytes);
  }
  absl::Status ShareBuffer(std::string_view name,
                           std::shared_ptr<const std::string> bytes) override {
    BeatScope beat(heartbeat_);
    return ImageWrapper::ShareBuffer(name, std::move(bytes));
  }
  absl::StatusOr<std::string> ReadBuffer(std::string_view name) override {
    BeatScope beat(heartbeat_);
    return ImageWrapper::ReadBuffer(name);
  }
  absl::StatusOr<RunResult> Run() override {
    BeatScope beat(heartbeat_);
    return ImageWrapper::Run();
  }

 private:
  Heartbeat* heartbeat_;
};

}  // namespace

Heartbeat::Heartbeat() : last_ns_(NowNs()) {}

void Heartbeat::Beat() {
  last_ns_.store(NowNs(), std::memory_order_relaxed);
  waiting_.store(false, std::memory_order_release);
}

void Heartbeat::Waiting() {
  last_ns_.store(NowNs(), std::memory_order_relaxed);
  waiting_.store(true, std::memory_order_release);
}

void Heartbeat::Exited() { exited_.store(true, std::memory_order_release); }

bool Heartbeat::Alive(absl::Duration bound) const {
  if (exited_.load(std::memory_order_acquire)) return false;
  if (waiting_.load(std::memory_order_acquire)) return true;
  return SinceBeat() <= bound;
}

absl::Duration Heartbeat::SinceBeat() const {
  if (waiting_.load(std::memory_order_acquire)) return absl::ZeroDuration();
  return absl::Nanoseconds(NowNs() - last_ns_.load(std::memory_order_relaxed));
}

HeartbeatDevice::HeartbeatDevice(std::unique_ptr<Device> target,
                                 Heartbeat* heartbeat)
    : DeviceWrapper(target.get()),
      owned_(std::move(target)),
      heartbeat_(heartbeat) {}

absl::StatusOr<Platform> HeartbeatDevice::GetPlatform() {
  BeatScope beat(heartbeat_);
  return DeviceWrapper::GetPlatform();
}

absl::StatusOr<std::unique_ptr<Image>> HeartbeatDevice::Load(
    const Artifact& artifact) {
  BeatScope beat(heartbeat_);
  return DeviceWrapper::Load(artifact);
}

absl::StatusOr<std::vector<int>> HeartbeatDevice::OtherHolders() {
  BeatScope beat(heartbeat_);
  return DeviceWrapper::OtherHolders();
}

std::unique_ptr<Image> HeartbeatDevice::WrapImage(std::unique_ptr<Image> image,
                                                  const Artifact&) {
  return std::make_unique<HeartbeatImage>(std::move(image), heartbeat_);
}

}  // namespace irontune
