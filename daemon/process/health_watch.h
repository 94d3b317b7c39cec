// HealthWatch: gRPC health follows the device worker. While the worker is
// hung (its heartbeat older than the stall limit: an NPU that stopped
// answering, a build that never returns) irontuned answers health checks
// NOT_SERVING, and SERVING again once the worker beats. So a client's
// channel that balances over healthy daemons (round_robin with health
// checking) and a Kubernetes readiness probe stop sending work to the box;
// its fleet box stops claiming on the same test (fleet_box.h).
//
// Threads: its own, polling every `period`; Start and Stop from one
// thread. `alive` and `set` are called on that thread only.
#ifndef IRONTUNE_DAEMON_PROCESS_HEALTH_WATCH_H_
#define IRONTUNE_DAEMON_PROCESS_HEALTH_WATCH_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace irontune {

class HealthWatch {
 public:
  // `set(serving)` is called on each change of `alive()`, the first call
  // only once it turns false (the server starts SERVING).
  HealthWatch(std::function<bool()> alive, std::function<void(bool)> set,
              absl::Duration period = absl::Seconds(1));
  ~HealthWatch();  // Stop()
  HealthWatch(const HealthWatch&) = delete;
  HealthWatch& operator=(const HealthWatch&) = delete;

  void Start();
  // Idempotent.
  void Stop();

 private:
  void Loop();

  const std::function<bool()> alive_;
  const std::function<void(bool)> set_;
  const absl::Duration period_;
  std::thread thread_;
  absl::Mutex mu_;
  absl::CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_PROCESS_HEALTH_WATCH_H_
