#include "daemon/process/health_watch.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace irontune {

HealthWatch::HealthWatch(std::function<bool()> alive,
                         std::function<void(bool)> set, absl::Duration period)
    : alive_(std::move(alive)), set_(std::move(set)), period_(period) {}

HealthWatch::~HealthWatch() { Stop(); }

void HealthWatch::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void HealthWatch::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void HealthWatch::Loop() {
  bool serving = true;
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    wake_.WaitWithTimeout(&mu_, period_);
    if (stopping_) break;
    const bool alive = alive_();
    if (alive == serving) continue;
    serving = alive;
    if (serving) {
      spdlog::info("health: the device worker beats again; SERVING");
    } else {
      spdlog::warn(
          "health: the device worker is hung (no heartbeat within the stall "
          "limit); NOT_SERVING until it beats");
    }
    set_(serving);
  }
}

}  // namespace irontune
