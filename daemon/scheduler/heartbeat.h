// Heartbeat: how the device worker shows it is alive, for systemd's
// watchdog (daemon/process/systemd_notify.h).
//
// The worker beats at every turn of its loop, around every task, and
// (through HeartbeatDevice) on entering and leaving every device call. It
// marks itself waiting while it blocks for the next job, which is not a
// hang however long it lasts. Alive(bound) is then false exactly when the
// worker has exited, or has spent longer than `bound` since its last beat
// without waiting: stuck in one device call, build or task.
//
// Threads: Beat, Waiting and Exited from the worker thread; Alive and
// SinceBeat from any thread (lock-free atomics).
#ifndef IRONTUNE_DAEMON_SCHEDULER_HEARTBEAT_H_
#define IRONTUNE_DAEMON_SCHEDULER_HEARTBEAT_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/time/time.h"
#include "daemon/npu/device.h"

namespace irontune {

class Heartbeat {
 public:
  Heartbeat();

  // Progress: the worker is doing something now (and not waiting).
  void Beat();
  // The worker blocks waiting for work from now on, until its next Beat.
  void Waiting();
  // The worker thread has ended.
  void Exited();

  // Not exited, and waiting or beaten within `bound`.
  bool Alive(absl::Duration bound) const;
  // Time since the last Beat (or Waiting); zero while waiting.
  absl::Duration SinceBeat() const;

 private:
  std::atomic<int64_t> last_ns_;  // steady clock
  std::atomic<bool> waiting_{false};
  std::atomic<bool> exited_{false};
};

// A Device (and its Images) that beats `heartbeat` on entering and leaving
// every call, then forwards it to the owned `target`. `heartbeat` is not
// owned and must outlive the device.
class HeartbeatDevice : public DeviceWrapper {
 public:
  HeartbeatDevice(std::unique_ptr<Device> target, Heartbeat* heartbeat);

  absl::StatusOr<Platform> GetPlatform() override;
  absl::StatusOr<std::unique_ptr<Image>> Load(
      const Artifact& artifact) override;
  absl::StatusOr<std::vector<int>> OtherHolders() override;

 protected:
  std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                   const Artifact& artifact) override;

 private:
  std::unique_ptr<Device> owned_;
  Heartbeat* const heartbeat_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_HEARTBEAT_H_
