// QueueBudget: the bytes that jobs' requests hold in memory until they
// are planned, against two limits: what every job's may add up to
// (--queue-memory) and what one client's may (--client-queue-bytes). A
// submit whose request would pass either is refused before it is queued;
// its bytes are charged otherwise, and released when the job drops its
// request (Job::DropRequest: an Autotune once planned, a Measure as it
// ends, any job ending before it ran).
//
// The figure charged is the job's own (Job::request_bytes): the request's
// encoded size as it was received, unknown fields included
// (docs/operations.md, "Admission and limits").
//
// Threads: Reserve and the figures from any thread; a Charge is released
// on the thread that drops it. Ownership: a QueueBudget is shared
// (std::shared_ptr, made with Make); every Charge keeps it alive, so a
// charge may outlive whoever made the budget.
#ifndef IRONTUNE_DAEMON_SCHEDULER_QUEUE_BUDGET_H_
#define IRONTUNE_DAEMON_SCHEDULER_QUEUE_BUDGET_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace irontune {

class QueueBudget : public std::enable_shared_from_this<QueueBudget> {
 public:
  // The bytes one client's requests hold, charged to the budget until it
  // is released (or destroyed). Move-only; a default one holds nothing.
  class Charge {
   public:
    Charge() = default;
    Charge(Charge&& other) noexcept;
    Charge& operator=(Charge&& other) noexcept;
    Charge(const Charge&) = delete;
    Charge& operator=(const Charge&) = delete;
    ~Charge() { Release(); }

    uint64_t bytes() const { return bytes_; }
    // Gives the bytes back; a second call does nothing.
    void Release();

   private:
    friend class QueueBudget;
    Charge(std::shared_ptr<QueueBudget> budget, std::string client,
           uint64_t bytes)
        : budget_(std::move(budget)),
          client_(std::move(client)),
          bytes_(bytes) {}

    std::shared_ptr<QueueBudget> budget_;
    std::string client_;
    uint64_t bytes_ = 0;
  };

  // `total_bytes`: every charge together (--queue-memory); `client_bytes`:
  // one client's together (--client-queue-bytes).
  static std::shared_ptr<QueueBudget> Make(uint64_t total_bytes,
                                           uint64_t client_bytes);

  // Charges `bytes` of `client`'s. ResourceExhausted, charging nothing,
  // when the client's charges would pass client_bytes or everyone's
  // total_bytes: the message names the request's size, what is charged
  // already, the limit and its flag.
  absl::StatusOr<Charge> Reserve(const std::string& client, uint64_t bytes);

  // What is charged now: in all, and of `client`.
  uint64_t used() const;
  uint64_t used(const std::string& client) const;

 private:
  QueueBudget(uint64_t total_bytes, uint64_t client_bytes)
      : total_bytes_(total_bytes), client_bytes_(client_bytes) {}
  void Release(const std::string& client, uint64_t bytes)
      ABSL_LOCKS_EXCLUDED(mu_);

  const uint64_t total_bytes_;
  const uint64_t client_bytes_;
  mutable absl::Mutex mu_;
  uint64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  // Clients with a charge now; one is dropped when its charges are gone.
  std::map<std::string, uint64_t> by_client_ ABSL_GUARDED_BY(mu_);
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_QUEUE_BUDGET_H_
