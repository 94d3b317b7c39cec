#include "daemon/scheduler/queue_budget.h"

#include "absl/strings/str_cat.h"
#include "daemon/scheduler/admission.h"

namespace irontune {

std::shared_ptr<QueueBudget> QueueBudget::Make(uint64_t total_bytes,
                                               uint64_t client_bytes) {
  return std::shared_ptr<QueueBudget>(
      new QueueBudget(total_bytes, client_bytes));
}

absl::StatusOr<QueueBudget::Charge> QueueBudget::Reserve(
    const std::string& client, uint64_t bytes) {
  return tally_.Take(client, bytes, [&](uint64_t used, uint64_t own) {
    if (bytes > client_bytes_ || own > client_bytes_ - bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "client \"", client, "\" has ", FormatBytes(own),
          " of requests queued: this one's ", FormatBytes(bytes),
          " would pass its limit of ", FormatBytes(client_bytes_),
          " (--client-queue-bytes); wait for some of its jobs to run"));
    }
    if (bytes > total_bytes_ || used > total_bytes_ - bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          FormatBytes(used), " of requests are queued: this one's ",
          FormatBytes(bytes), " would pass the limit of ",
          FormatBytes(total_bytes_), " (--queue-memory); try again later"));
    }
    return absl::OkStatus();
  });
}

}  // namespace irontune
