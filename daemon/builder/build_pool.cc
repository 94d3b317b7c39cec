#include "daemon/builder/build_pool.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/base/thread_roles.h"

namespace irontune {
namespace {

// What one remembered outcome costs besides its payload.
constexpr uint64_t kEntryOverhead = 1024;

// How often Await looks at its cancellation.
constexpr absl::Duration kCancelPoll = absl::Milliseconds(20);

}  // namespace

BuildPoolStats StatsSince(const BuildPoolStats& after,
                          const BuildPoolStats& before) {
  using S = BuildPoolStats;
  // A field added to BuildPoolStats joins one of the lists below.
  static_assert(sizeof(S) == (12 + 5) * sizeof(int64_t));
  BuildPoolStats d;
  for (int64_t S::*count :
       {&S::builds, &S::prefetched, &S::later, &S::spare, &S::remembered,
        &S::merged, &S::asked_one_step, &S::asked_many_step, &S::needed,
        &S::built_one_step, &S::built_many_step, &S::fit_checks}) {
    d.*count = after.*count - before.*count;
  }
  for (double S::*seconds :
       {&S::build_seconds, &S::waited_seconds, &S::waited_unqueued_seconds,
        &S::waited_queued_seconds, &S::fit_seconds}) {
    d.*seconds = after.*seconds - before.*seconds;
  }
  return d;
}

BuildPool::BuildPool(std::unique_ptr<Builder> inner, BuildPoolOptions options)
    : BuildPool(inner.get(), options) {
  owned_ = std::move(inner);
}

BuildPool::BuildPool(Builder* inner, BuildPoolOptions options)
    : inner_(inner), options_(options) {
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] {
      BecomeHelperThread();
      Loop();
    });
  }
}

BuildPool::~BuildPool() {
  DropQueue();
  for (std::thread& t : threads_) t.join();
}

void BuildPool::DropQueue() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  for (Queue* q : {&queue_, &later_, &spare_}) {
    for (const auto& [slot, key] : *q) {
      entries_[key].queued = false;
      entries_[key].tier = Tier::kNow;
    }
    q->clear();
  }
}

void BuildPool::Stop() {
  DropQueue();
  inner_->Stop();
}

BuildPoolStats BuildPool::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

BuildPool::Entry& BuildPool::EntryFor(const std::string& key,
                                      const BuildRequest& request) {
  auto [it, made] = entries_.try_emplace(key);
  if (made) {
    it->second.request = request;
    ++(request.steps == 1 ? stats_.asked_one_step : stats_.asked_many_step);
  }
  return it->second;
}

absl::StatusOr<std::string> BuildPool::Fit(const BuildRequest& request) {
  if (!inner_->ChecksFit()) return Builder::Fit(request);
  const std::string key = RequestKey(request);
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.done && it->second.outcome.ok()) {
      ++stats_.remembered;
      return RefusalOf(*it->second.outcome);
    }
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> verdict = inner_->Fit(request);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  absl::MutexLock lock(&mu_);
  ++stats_.fit_checks;
  stats_.fit_seconds += seconds;
  return verdict;
}

bool BuildPool::Ready(const BuildRequest& request) {
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(RequestKey(request));
    if (it != entries_.end() && it->second.done && it->second.outcome.ok()) {
      return true;
    }
  }
  return inner_->Ready(request);
}

void BuildPool::Prefetch(const BuildRequest& request) {
  PrefetchAt(request, 0);
}

void BuildPool::PrefetchAt(const BuildRequest& request, int rank) {
  if (options_.threads == 0) return;
  Place(request, Tier::kNow, rank);
}

void BuildPool::PrefetchLater(const BuildRequest& request) {
  if (options_.threads == 0) return;
  Place(request, Tier::kLater);
}

void BuildPool::PrefetchSpare(const BuildRequest& request) {
  if (SpareThreads() == 0) return;
  Place(request, Tier::kSpare);
}

void BuildPool::Place(const BuildRequest& request, Tier tier, int64_t rank) {
  const std::string key = RequestKey(request);
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  Enqueue(key, request, tier, rank);
}

void BuildPool::Unprefetch(const BuildRequest& request) {
  const std::string key = RequestKey(request);
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.queued ||
      it->second.tier != Tier::kSpare) {
    return;
  }
  Unqueue(key);
  // Never built nor waited for: forgotten (its counts stay).
  if (!it->second.done) entries_.erase(it);
}

void BuildPool::Enqueue(const std::string& key, const BuildRequest& request,
                        Tier tier, int64_t rank) {
  Entry& e = EntryFor(key, request);
  // Wanted sooner than thought: out of a lower queue, or up the first.
  if (e.queued &&
      (tier < e.tier ||
       (tier == Tier::kNow && e.tier == Tier::kNow && rank < e.slot.first))) {
    Unqueue(key);
  }
  if (e.queued || e.running || (e.done && e.outcome.ok())) return;
  e.done = false;
  e.queued = true;
  e.tier = tier;
  e.prefetched = true;
  e.slot = {tier == Tier::kNow ? rank : 0, ++queued_};
  QueueOf(tier).emplace(e.slot, key);
}

BuildPool::Queue& BuildPool::QueueOf(Tier tier) {
  switch (tier) {
    case Tier::kLater:
      return later_;
    case Tier::kSpare:
      return spare_;
    case Tier::kNow:
      break;
  }
  return queue_;
}

void BuildPool::Unqueue(const std::string& key) {
  Entry& e = entries_[key];
  QueueOf(e.tier).erase(e.slot);
  e.queued = false;
  e.tier = Tier::kNow;
}

bool BuildPool::HasWork() const {
  if (!queue_.empty()) return true;
  if (kept_bytes_ >= options_.memory_bytes / 2) return false;
  return !later_.empty() ||
         (!spare_.empty() && spare_running_ < SpareThreads());
}

std::string BuildPool::NextWork() {
  Queue& q = !queue_.empty() ? queue_ : !later_.empty() ? later_ : spare_;
  std::string key = std::move(q.begin()->second);
  q.erase(q.begin());
  return key;
}

void BuildPool::Loop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(
        +[](BuildPool* p) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return p->stopping_ || p->HasWork();
        },
        this));
    if (stopping_) return;
    const std::string key = NextWork();
    Entry& e = entries_[key];
    if (e.tier == Tier::kLater) ++stats_.later;
    e.spare = e.tier == Tier::kSpare;
    if (e.spare) {
      ++stats_.spare;
      ++spare_running_;
    }
    e.queued = false;
    e.tier = Tier::kNow;
    if (e.prefetched) ++stats_.prefetched;
    RunBuild(key);
  }
}

void BuildPool::RunBuild(const std::string& key) {
  Entry& e = entries_[key];
  e.running = true;
  const BuildRequest request = e.request;
  mu_.Unlock();
  const absl::Time start = absl::Now();
  absl::StatusOr<BuildOutcome> outcome = inner_->Build(request);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  mu_.Lock();
  Entry& done = entries_[key];  // entries being built are never erased
  ++stats_.builds;
  ++(request.steps == 1 ? stats_.built_one_step : stats_.built_many_step);
  stats_.build_seconds += seconds;
  done.running = false;
  if (done.spare) --spare_running_;
  done.spare = false;
  done.done = true;
  done.bytes = kEntryOverhead;
  if (outcome.ok() && outcome->artifact) {
    done.bytes += outcome->artifact->payload.size();
  }
  done.outcome = std::move(outcome);
  if (done.outcome.ok()) {
    lru_.push_front(key);
    done.lru = lru_.begin();
    kept_bytes_ += done.bytes;
  }
}

absl::StatusOr<BuildOutcome> BuildPool::Take(const std::string& key) {
  Entry& e = entries_[key];
  absl::StatusOr<BuildOutcome> out = e.outcome;
  if (e.outcome.ok()) {
    lru_.splice(lru_.begin(), lru_, e.lru);
    Evict();
  }
  return out;
}

void BuildPool::Evict() {
  while (kept_bytes_ > options_.memory_bytes && !lru_.empty()) {
    const std::string key = lru_.back();
    lru_.pop_back();
    auto it = entries_.find(key);
    kept_bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
}

void BuildPool::AddWait(absl::Time start, double* as) {
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  stats_.waited_seconds += seconds;
  if (as != nullptr) *as += seconds;
}

absl::StatusOr<BuildOutcome> BuildPool::Build(const BuildRequest& request) {
  return Await(request, [] { return false; });
}

absl::StatusOr<BuildOutcome> BuildPool::Await(
    const BuildRequest& request, const std::function<bool()>& cancelled) {
  const std::string key = RequestKey(request);
  absl::MutexLock lock(&mu_);
  Entry* e = &EntryFor(key, request);
  if (!e->wanted) {
    e->wanted = true;
    ++stats_.needed;
  }
  if (e->done && e->outcome.ok()) {
    ++stats_.remembered;
    return Take(key);
  }
  const absl::Time start = absl::Now();
  if (e->running || e->queued) {
    ++stats_.merged;
  }
  double* waited_as = e->running  ? nullptr
                      : e->queued ? &stats_.waited_queued_seconds
                                  : &stats_.waited_unqueued_seconds;
  if (!e->running) {
    if (options_.threads == 0 || stopping_) {
      // Built here; an earlier error is tried again.
      e->done = false;
      RunBuild(key);
      return Take(key);
    }
    // Ahead of every Prefetch: the caller needs it now.
    if (e->queued) Unqueue(key);
    e->done = false;
    e->queued = true;
    e->prefetched = false;
    e->slot = {kAwaitedRank, ++queued_};
    queue_.emplace(e->slot, key);
  }
  // The entry is neither erased nor moved while it is not done.
  while (!e->done) {
    mu_.AwaitWithTimeout(absl::Condition(&e->done), kCancelPoll);
    if (e->done) break;
    if (cancelled()) {
      AddWait(start, waited_as);
      return absl::CancelledError("cancelled while waiting for a build");
    }
  }
  AddWait(start, waited_as);
  return Take(key);
}

}  // namespace irontune
