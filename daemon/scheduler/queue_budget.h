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
// (std::shared_ptr, made with Make); a Charge shares the budget's counts
// (tally.h), so it may outlive the budget.
#ifndef IRONTUNE_DAEMON_SCHEDULER_QUEUE_BUDGET_H_
#define IRONTUNE_DAEMON_SCHEDULER_QUEUE_BUDGET_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/base/tally.h"

namespace irontune {

class QueueBudget {
 public:
  // The bytes one client's requests hold, charged to the budget until it
  // is released (or destroyed; Release gives them back, a second call does
  // nothing). Move-only; a default one holds nothing.
  using Charge = Tally::Hold;

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
  uint64_t used() const { return tally_.total(); }
  uint64_t used(const std::string& client) const { return tally_.of(client); }

 private:
  QueueBudget(uint64_t total_bytes, uint64_t client_bytes)
      : total_bytes_(total_bytes), client_bytes_(client_bytes) {}

  const uint64_t total_bytes_;
  const uint64_t client_bytes_;
  Tally tally_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_QUEUE_BUDGET_H_
