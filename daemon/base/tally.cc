#include "daemon/base/tally.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace irontune {

struct Tally::Counts {
  mutable absl::Mutex mu;
  uint64_t total ABSL_GUARDED_BY(mu) = 0;
  // Holders with an amount held now; one is dropped when its amounts are
  // given back.
  std::map<std::string, uint64_t> by_holder ABSL_GUARDED_BY(mu);

  uint64_t Of(const std::string& holder) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = by_holder.find(holder);
    return it == by_holder.end() ? 0 : it->second;
  }
};

Tally::Hold::Hold(std::shared_ptr<Counts> counts, std::string holder,
                  uint64_t amount)
    : counts_(std::move(counts)), holder_(std::move(holder)), amount_(amount) {}

Tally::Hold::Hold(Hold&& other) noexcept
    : counts_(std::move(other.counts_)),
      holder_(std::move(other.holder_)),
      amount_(std::exchange(other.amount_, 0)) {}

Tally::Hold& Tally::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    Release();
    counts_ = std::move(other.counts_);
    holder_ = std::move(other.holder_);
    amount_ = std::exchange(other.amount_, 0);
  }
  return *this;
}

void Tally::Hold::Release() {
  if (counts_ != nullptr) {
    absl::MutexLock lock(&counts_->mu);
    counts_->total -= std::min(counts_->total, amount_);
    auto it = counts_->by_holder.find(holder_);
    if (it != counts_->by_holder.end()) {
      it->second -= std::min(it->second, amount_);
      if (it->second == 0) counts_->by_holder.erase(it);
    }
  }
  counts_.reset();
  amount_ = 0;
}

Tally::Tally() : counts_(std::make_shared<Counts>()) {}

absl::StatusOr<Tally::Hold> Tally::Take(const std::string& holder,
                                        uint64_t amount, Rule rule) {
  absl::MutexLock lock(&counts_->mu);
  const uint64_t own = counts_->Of(holder);
  if (absl::Status s = rule(counts_->total, own); !s.ok()) return s;
  counts_->total += amount;
  counts_->by_holder[holder] = own + amount;
  return Hold(counts_, holder, amount);
}

uint64_t Tally::total() const {
  absl::MutexLock lock(&counts_->mu);
  return counts_->total;
}

uint64_t Tally::of(const std::string& holder) const {
  absl::MutexLock lock(&counts_->mu);
  return counts_->Of(holder);
}

}  // namespace irontune
