// JobNotices: wakes the callers following fleet jobs when the store
// announces a change to theirs (FleetQueue's NOTIFY on kJobsChannel).
//
// One thread holds one connection that LISTENs; each notification bumps
// the version of the job it names, for the jobs someone follows. A follower
// subscribes, then waits for a version past the one it saw. While the
// connection is down the thread reconnects once a second and, when it
// does, bumps every followed job (notifications sent meanwhile are lost):
// followers re-read their job then, and in any case read it again after
// their wait's timeout, so a lost notice delays an event, never loses it.
//
// Threads: Subscribe, Unsubscribe and WaitForChange from any thread.
// Lifetime: Start once, then Stop (also from the destructor), which joins.
#ifndef IRONTUNE_DAEMON_FLEET_JOB_NOTICES_H_
#define IRONTUNE_DAEMON_FLEET_JOB_NOTICES_H_

#include <cstdint>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/fleet/fleet_pool.h"

namespace irontune {

class JobNotices {
 public:
  // `open` gives the LISTEN connection (FleetPool's opener will do).
  explicit JobNotices(FleetPool::Opener open);
  ~JobNotices();
  JobNotices(const JobNotices&) = delete;
  JobNotices& operator=(const JobNotices&) = delete;

  void Start();
  void Stop();

  // Follows job `id` until the matching Unsubscribe; returns its version.
  uint64_t Subscribe(int64_t id);
  void Unsubscribe(int64_t id);
  // Waits until job `id`'s version passes `*seen` (then updates it and
  // returns true), `timeout` passes, or Stop. REQUIRES: subscribed to `id`.
  bool WaitForChange(int64_t id, uint64_t* seen, absl::Duration timeout);

  // Notifications received so far (for tests and logs).
  uint64_t received() const;

 private:
  struct Followed {
    uint64_t version = 0;
    int followers = 0;
  };
  void Loop();
  // Bumps job `id` (every followed job for -1) and wakes the waiters.
  void Bump(int64_t id);

  const FleetPool::Opener open_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t received_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, Followed> followed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_FLEET_JOB_NOTICES_H_
