// Tally: amounts held by named holders, counted in all and by holder, each
// taken amount a Hold that gives it back when released. The mechanism under
// irontuned's admission counters: the open streams (StreamQuota, one a
// stream) and the queued requests' bytes (QueueBudget); each brings its own
// rule of what may be taken.
//
// Threads: Take, the figures and a Hold's Release from any thread; one
// Hold is used by one thread at a time. Ownership: the counts are shared
// by the Tally and its Holds, so a Hold may outlive the Tally.
#ifndef IRONTUNE_DAEMON_BASE_TALLY_H_
#define IRONTUNE_DAEMON_BASE_TALLY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace irontune {

class Tally {
  struct Counts;

 public:
  // An amount of one holder's, counted until released (or destroyed).
  // Move-only; a default one holds nothing.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept;
    Hold& operator=(Hold&& other) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { Release(); }

    uint64_t amount() const { return amount_; }
    // Gives the amount back; a second call does nothing.
    void Release();

   private:
    friend class Tally;
    Hold(std::shared_ptr<Counts> counts, std::string holder, uint64_t amount);

    std::shared_ptr<Counts> counts_;
    std::string holder_;
    uint64_t amount_ = 0;
  };

  // What may be taken: given what is held now in all and by the holder,
  // OK, or the Status refusing it.
  using Rule = absl::FunctionRef<absl::Status(uint64_t total, uint64_t own)>;

  Tally();

  // Asks `rule` with the amounts held now, under the tally's lock (so no
  // other Take comes between); when it answers OK, counts `amount` more of
  // `holder`'s and returns the Hold of it, else returns its Status,
  // counting nothing. REQUIRES: `rule` does not call back into the tally.
  absl::StatusOr<Hold> Take(const std::string& holder, uint64_t amount,
                            Rule rule);

  // What is held now: in all, and by `holder`.
  uint64_t total() const;
  uint64_t of(const std::string& holder) const;

 private:
  std::shared_ptr<Counts> counts_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_TALLY_H_
