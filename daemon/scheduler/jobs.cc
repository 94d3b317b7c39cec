#include "daemon/scheduler/jobs.h"

#include <map>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace irontune {
namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// The name of `e`'s event: its field's in tuner.proto (queued, started,
// progress, log, trial, result), "other" when it has none.
std::string EventName(const v1::AutotuneEvent& e) {
  const google::protobuf::FieldDescriptor* field =
      v1::AutotuneEvent::descriptor()->FindFieldByNumber(e.event_case());
  return field == nullptr ? "other" : field->name();
}

}  // namespace

v1::Priority NormalizePriority(v1::Priority priority) {
  return priority == v1::PRIORITY_BATCH ? v1::PRIORITY_BATCH
                                        : v1::PRIORITY_INTERACTIVE;
}

bool IsTerminal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED || state == v1::JOB_STATE_INTERRUPTED;
}

std::string NewJobId() {
  static absl::Mutex mu(absl::kConstInit);
  static std::mt19937_64* rng = nullptr;
  absl::MutexLock lock(&mu);
  if (rng == nullptr) {
    std::random_device rd;
    rng = new std::mt19937_64((uint64_t{rd()} << 32) ^ rd() ^
                              static_cast<uint64_t>(NowMs()));
  }
  return absl::StrFormat("j-%016x", (*rng)());
}

Job::Job(std::string id, Request request, std::string client,
         v1::Priority priority, bool detach)
    : id_(std::move(id)),
      kind_(std::holds_alternative<v1::AutotuneRequest>(request)
                ? v1::JOB_KIND_AUTOTUNE
                : v1::JOB_KIND_MEASURE),
      client_(std::move(client)),
      priority_(NormalizePriority(priority)),
      detach_(detach),
      submitted_ms_(NowMs()) {
  // Sized in the constructor's own body, which the analysis exempts (no
  // other thread can see the job yet); a lambda writing the member is not.
  request_bytes_ = std::visit(
      [](auto& r) {
        const size_t bytes = r.ByteSizeLong();
        r.DiscardUnknownFields();
        return bytes;
      },
      request);
  request_ = std::make_shared<const Request>(std::move(request));
}

std::shared_ptr<const Job::Request> Job::request() const {
  absl::MutexLock lock(&mu_);
  return request_;
}

uint64_t Job::request_bytes() const {
  absl::MutexLock lock(&mu_);
  return request_bytes_;
}

void Job::set_charge(QueueBudget::Charge charge) {
  absl::MutexLock lock(&mu_);
  charge_ = std::move(charge);
}

std::pair<std::shared_ptr<const Job::Request>, QueueBudget::Charge>
Job::TakeRequestLocked() {
  request_bytes_ = 0;
  return {std::move(request_), std::move(charge_)};
}

void Job::DropRequest() {
  std::pair<std::shared_ptr<const Request>, QueueBudget::Charge> dropped;
  absl::MutexLock lock(&mu_);
  dropped = TakeRequestLocked();
  // `dropped` goes after the lock is released (declared before it).
}

void Job::set_cost(uint64_t memory_bytes, double device_seconds) {
  memory_bytes_ = memory_bytes;
  device_seconds_ = device_seconds;
}

void Job::Emit(v1::AutotuneEvent event) {
  absl::MutexLock lock(&mu_);
  if (IsTerminal(state_)) return;
  event.set_job_id(id_);
  event_bytes_ += event.ByteSizeLong();
  events_.push_back(std::move(event));
  changed_.SignalAll();
}

void Job::MarkStarted() {
  absl::MutexLock lock(&mu_);
  if (IsTerminal(state_)) return;
  state_ = v1::JOB_STATE_RUNNING;
  started_ms_ = NowMs();
  v1::AutotuneEvent event;
  event.set_job_id(id_);
  event.mutable_started();
  events_.push_back(std::move(event));
  changed_.SignalAll();
}

bool Job::Finish(
    absl::Status status,
    std::variant<std::monostate, v1::AutotuneResult, v1::MeasureResult>
        result) {
  // Let go of after the lock is released (declared before it). Whoever
  // runs the job holds its own pointer while it runs.
  std::pair<std::shared_ptr<const Request>, QueueBudget::Charge> dropped;
  absl::MutexLock lock(&mu_);
  if (IsTerminal(state_)) return false;
  ended_ms_ = NowMs();
  dropped = TakeRequestLocked();
  {
    // The charge goes before the end is seen, so whoever sees the job
    // ended sees its bytes free (the budget's lock is a leaf); the request
    // itself is freed after the lock.
    QueueBudget::Charge freed = std::move(dropped.second);
  }
  if (status.ok()) {
    state_ = v1::JOB_STATE_SUCCEEDED;
    if (auto* a = std::get_if<v1::AutotuneResult>(&result)) {
      result_bytes_ = a->ByteSizeLong();
      if (a->has_stats()) stats_ = a->stats();
      v1::AutotuneEvent event;
      event.set_job_id(id_);
      *event.mutable_result() = *a;
      event_bytes_ += id_.size() + result_bytes_;
      events_.push_back(std::move(event));
      autotune_result_ = std::move(*a);
    } else if (auto* m = std::get_if<v1::MeasureResult>(&result)) {
      result_bytes_ = m->ByteSizeLong();
      measure_result_ = std::move(*m);
    }
  } else {
    const bool asked =
        cancelled_ ? cancel_code_ == absl::StatusCode::kCancelled ||
                         cancel_code_ == absl::StatusCode::kDeadlineExceeded
                   : absl::IsCancelled(status);
    state_ = asked ? v1::JOB_STATE_CANCELLED : v1::JOB_STATE_FAILED;
    status_ = std::move(status);
  }
  changed_.SignalAll();
  return true;
}

void Job::Cancel(std::string reason, absl::StatusCode code) {
  absl::MutexLock lock(&mu_);
  if (cancelled_ || IsTerminal(state_)) return;
  cancelled_ = true;
  cancel_reason_ = std::move(reason);
  cancel_code_ = code;
  changed_.SignalAll();
}

absl::Status Job::cancel_status() const {
  absl::MutexLock lock(&mu_);
  return absl::Status(cancel_code_, cancel_reason_);
}

bool Job::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

std::string Job::cancel_reason() const {
  absl::MutexLock lock(&mu_);
  return cancel_reason_;
}

bool Job::WaitCancelled(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + timeout;
  while (!cancelled_) {
    if (changed_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return cancelled_;
}

std::vector<v1::AutotuneEvent> Job::EventsFrom(size_t from,
                                               absl::Duration timeout,
                                               bool* done,
                                               absl::Duration linger) const {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + timeout;
  while (events_.size() <= from && !IsTerminal(state_)) {
    if (changed_.WaitWithDeadline(&mu_, deadline)) break;
  }
  if (events_.size() > from && linger > absl::ZeroDuration()) {
    // Woken only by the end, not by each event meanwhile.
    mu_.AwaitWithTimeout(absl::Condition(this, &Job::EndedLocked), linger);
  }
  std::vector<v1::AutotuneEvent> out;
  for (size_t i = from; i < events_.size(); ++i) out.push_back(events_[i]);
  *done = IsTerminal(state_);
  return out;
}

bool Job::EndedLocked() const { return IsTerminal(state_); }

v1::JobState Job::state() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

absl::Status Job::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void Job::SetShapes(uint32_t done, uint32_t total) {
  absl::MutexLock lock(&mu_);
  shapes_done_ = done;
  shapes_total_ = total;
}

void Job::SetStats(const v1::AutotuneStats& stats) {
  absl::MutexLock lock(&mu_);
  stats_ = stats;
}

v1::JobSummary Job::Summary() const {
  absl::MutexLock lock(&mu_);
  v1::JobSummary s;
  s.set_job_id(id_);
  s.set_kind(kind());
  s.set_client(client_);
  s.set_priority(priority_);
  s.set_state(state_);
  s.set_submitted_unix_ms(submitted_ms_);
  s.set_started_unix_ms(started_ms_);
  s.set_ended_unix_ms(ended_ms_);
  s.set_shapes_done(shapes_done_);
  s.set_shapes_total(shapes_total_);
  s.set_detached(detach_);
  if (!status_.ok()) s.set_error(status_.ToString());
  *s.mutable_stats() = stats_;
  return s;
}

v1::JobResult Job::Result() const {
  v1::JobResult r;
  *r.mutable_summary() = Summary();
  absl::MutexLock lock(&mu_);
  if (autotune_result_) *r.mutable_autotune() = *autotune_result_;
  if (measure_result_) *r.mutable_measure() = *measure_result_;
  return r;
}

std::string Job::EventsSummary() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  for (const auto& e : events_) {
    std::string name = EventName(e);
    if (counts[name]++ == 0) order.push_back(std::move(name));
  }
  std::string out = absl::StrCat(events_.size(), " events");
  for (size_t i = 0; i < order.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? ": " : ", ", order[i], " ",
                    counts[order[i]]);
  }
  return out;
}

JobRecord Job::Record() const {
  return JobRecord{id(), client(), Result(), EventsSummary()};
}

size_t Job::RetainedBytes() const {
  absl::MutexLock lock(&mu_);
  return sizeof(Job) + request_bytes_ + event_bytes_ +
         events_.size() * sizeof(v1::AutotuneEvent) + result_bytes_;
}

}  // namespace irontune
