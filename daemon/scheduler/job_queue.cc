#include "daemon/scheduler/job_queue.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace irontune {

JobQueue::JobQueue(size_t limit, size_t client_quota)
    : limit_(std::max<size_t>(limit, 1)), client_quota_(client_quota) {}

absl::StatusOr<size_t> JobQueue::Push(JobPtr job) {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError("irontuned is shutting down");
  if (size_ >= limit_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the queue is full (", limit_, " jobs wait); try again later"));
  }
  if (client_quota_ > 0) {
    size_t waiting = 0;
    for (const auto& [priority, lane] : lanes_) {
      auto it = lane.fifo.find(job->client());
      if (it != lane.fifo.end()) waiting += it->second.size();
    }
    if (waiting >= client_quota_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("client \"", job->client(), "\" has ", waiting,
                       " jobs waiting, its quota (--client-queue-quota ",
                       client_quota_, "); wait for one to start"));
    }
  }
  Lane& lane = lanes_[job->priority()];
  std::deque<JobPtr>& fifo = lane.fifo[job->client()];
  if (fifo.empty()) lane.turns.push_back(job->client());
  fifo.push_back(job);
  ++size_;
  const std::vector<JobPtr> order = OrderLocked();
  const size_t position = static_cast<size_t>(
      std::find(order.begin(), order.end(), job) - order.begin());
  // Under the lock, so no worker can start the job before it says Queued.
  v1::AutotuneEvent queued;
  queued.mutable_queued()->set_position(static_cast<uint32_t>(position));
  job->Emit(std::move(queued));
  changed_.Signal();
  return position;
}

JobPtr JobQueue::Pop() {
  absl::MutexLock lock(&mu_);
  while (size_ == 0 && !closed_ && wakes_ == 0) changed_.Wait(&mu_);
  if (wakes_ > 0) {
    --wakes_;
    return nullptr;
  }
  if (closed_) return nullptr;
  return PopLocked();
}

JobPtr JobQueue::TryPop() {
  absl::MutexLock lock(&mu_);
  return PopLocked();
}

JobPtr JobQueue::PopLocked() {
  for (auto& [priority, lane] : lanes_) {
    if (lane.turns.empty()) continue;
    const std::string client = lane.turns.front();
    lane.turns.pop_front();
    std::deque<JobPtr>& fifo = lane.fifo[client];
    JobPtr job = std::move(fifo.front());
    fifo.pop_front();
    if (fifo.empty()) {
      lane.fifo.erase(client);
    } else {
      lane.turns.push_back(client);
    }
    --size_;
    return job;
  }
  return nullptr;
}

std::vector<JobPtr> JobQueue::OrderLocked() const {
  std::vector<JobPtr> order;
  for (const auto& [priority, lane] : lanes_) {
    // Replay the round robin on copies.
    std::list<std::string> turns = lane.turns;
    std::map<std::string, size_t> next;
    while (!turns.empty()) {
      const std::string client = turns.front();
      turns.pop_front();
      const std::deque<JobPtr>& fifo = lane.fifo.at(client);
      order.push_back(fifo[next[client]++]);
      if (next[client] < fifo.size()) turns.push_back(client);
    }
  }
  return order;
}

bool JobQueue::RemoveLocked(const JobPtr& job) {
  auto lane_it = lanes_.find(job->priority());
  if (lane_it == lanes_.end()) return false;
  Lane& lane = lane_it->second;
  auto fifo_it = lane.fifo.find(job->client());
  if (fifo_it == lane.fifo.end()) return false;
  std::deque<JobPtr>& fifo = fifo_it->second;
  auto it = std::find(fifo.begin(), fifo.end(), job);
  if (it == fifo.end()) return false;
  fifo.erase(it);
  if (fifo.empty()) {
    lane.fifo.erase(fifo_it);
    lane.turns.remove(job->client());
  }
  --size_;
  return true;
}

JobPtr JobQueue::TakeMeasure(const std::function<bool(const Job&)>& eligible) {
  absl::MutexLock lock(&mu_);
  for (const JobPtr& job : OrderLocked()) {
    if (job->kind() == v1::JOB_KIND_MEASURE && (!eligible || eligible(*job))) {
      RemoveLocked(job);
      return job;
    }
  }
  return nullptr;
}

JobPtr JobQueue::Remove(const std::string& id) {
  absl::MutexLock lock(&mu_);
  for (const JobPtr& job : OrderLocked()) {
    if (job->id() == id) {
      RemoveLocked(job);
      return job;
    }
  }
  return nullptr;
}

void JobQueue::Wake() {
  absl::MutexLock lock(&mu_);
  ++wakes_;
  changed_.Signal();
}

std::vector<JobPtr> JobQueue::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  std::vector<JobPtr> order = OrderLocked();
  lanes_.clear();
  size_ = 0;
  changed_.SignalAll();
  return order;
}

std::vector<JobPtr> JobQueue::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return OrderLocked();
}

std::optional<size_t> JobQueue::Position(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  const std::vector<JobPtr> order = OrderLocked();
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i]->id() == id) return i;
  }
  return std::nullopt;
}

size_t JobQueue::size() const {
  absl::MutexLock lock(&mu_);
  return size_;
}

}  // namespace irontune
