// FleetPool: the fleet store's connections shared by a front's concurrent
// calls (docs/fleet.md, "Fronts").
//
// A caller takes a connection (Acquire), uses it alone and hands it back
// as its Handle goes; a connection found broken then is closed, not kept,
// and the idle ones with it.
// At most `size` are open; a caller waits up to a second for one.
//
// A store that cannot be reached is remembered for `retry_after`: until
// then Acquire answers Unavailable at once, naming the last error, instead
// of every call waiting on its own connection attempt; so a front answers
// UNAVAILABLE within a second while its store is down, and tries again
// when a call comes after that.
//
// Threads: Acquire from any thread; a Handle is used by one thread.
// Ownership: the pool owns its connections; it must outlive its Handles.
#ifndef IRONTUNE_DAEMON_FLEET_FLEET_POOL_H_
#define IRONTUNE_DAEMON_FLEET_FLEET_POOL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/fleet/fleet_store.h"

namespace irontune {

class FleetPool {
 public:
  // Opens one connection (FleetStore::Open in production; a seam for
  // tests). Called without the pool's lock, from the acquiring thread.
  using Opener = std::function<absl::StatusOr<std::unique_ptr<FleetStore>>()>;

  // REQUIRES: size >= 1.
  FleetPool(Opener open, int size,
            absl::Duration retry_after = absl::Seconds(1));
  FleetPool(const FleetPool&) = delete;
  FleetPool& operator=(const FleetPool&) = delete;

  // A connection held by one caller; handed back as it is destroyed.
  class Handle {
   public:
    Handle(Handle&& other) noexcept;
    Handle& operator=(Handle&&) = delete;
    ~Handle();
    FleetStore& operator*() const { return *store_; }
    FleetStore* operator->() const { return store_.get(); }

   private:
    friend class FleetPool;
    Handle(FleetPool* pool, std::unique_ptr<FleetStore> store)
        : pool_(pool), store_(std::move(store)) {}
    FleetPool* pool_;
    std::unique_ptr<FleetStore> store_;
  };

  // A connection: an idle one, else a new one while fewer than `size` are
  // open, else the first handed back within `wait`. Unavailable while the
  // store is remembered down, when it cannot be reached (naming why), or
  // when every connection stayed busy for `wait`; an Opener's other errors
  // as it returns them.
  absl::StatusOr<Handle> Acquire(absl::Duration wait = absl::Seconds(1));

  // Remembers the store down for `retry_after`, with `status` (an
  // Unavailable a call on a connection returned).
  void MarkDown(const absl::Status& status);

  // Connections open now, idle or held.
  int open() const;

 private:
  void Release(std::unique_ptr<FleetStore> store);
  absl::Status DownStatus() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A waiting Acquire may go on: a connection idle or room for one, or
  // the store marked down.
  bool Freed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Opener opener_;
  const int size_;
  const absl::Duration retry_after_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<FleetStore>> idle_ ABSL_GUARDED_BY(mu_);
  int open_count_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time down_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_FLEET_FLEET_POOL_H_
