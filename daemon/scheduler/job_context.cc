#include "daemon/scheduler/job_context.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "daemon/scheduler/replies.h"

namespace irontune {

JobContext::JobContext(JobPtr job, Device& device, Builder& builder,
                       Cache* cache, Events events, CacheWrites* writes)
    : job_(std::move(job)),
      writes_(writes),
      held_(events == Events::kHeld),
      meter_(&device),
      builder_(builder),
      cache_(cache),
      start_(absl::Now()) {}

bool JobContext::cancelled() {
  if (job_->cancelled()) return true;
  const Job::Bounds& bounds = job_->bounds();
  if (absl::Now() >= bounds.deadline) {
    job_->Cancel("the client's deadline passed",
                 absl::StatusCode::kDeadlineExceeded);
  } else if (device_seconds() > bounds.device_seconds) {
    job_->Cancel(
        absl::StrFormat("the job used %.3f s of device time, more than its "
                        "limit of %g s (--job-device-seconds)",
                        device_seconds(), bounds.device_seconds),
        absl::StatusCode::kResourceExhausted);
  }
  return job_->cancelled();
}

void JobContext::Log(const std::string& line) {
  v1::AutotuneEvent event;
  event.mutable_log()->set_text(line);
  Emit(std::move(event));
}

void JobContext::Emit(v1::AutotuneEvent event) {
  if (held_) {
    held_events_.push_back(std::move(event));
  } else {
    job_->Emit(std::move(event));
  }
}

void JobContext::SetShapes(uint32_t done, uint32_t total) {
  if (held_) {
    held_shapes_.emplace(done, total);
  } else {
    job_->SetShapes(done, total);
  }
  shapes_total_ = total;
}

void JobContext::Release() {
  held_ = false;
  for (v1::AutotuneEvent& event : held_events_) job_->Emit(std::move(event));
  held_events_.clear();
  if (held_shapes_) job_->SetShapes(held_shapes_->first, held_shapes_->second);
  held_shapes_.reset();
}

double JobContext::wall_seconds() const {
  return absl::ToDoubleSeconds(absl::Now() - start_);
}

void JobContext::OnShape(int index, int total, const std::string& key) {
  if (writes_ != nullptr) writes_->Expose(job_->id(), key);
  keys_[index] = key;
  shape_ = key;
  index_ = index;
  total_ = total;
  timed_ = 0;
  best_.reset();
  last_progress_ = absl::Now();
  Emit(Progress());
}

void JobContext::OnEstimate(const JobEstimate& estimate) {
  estimate_ = estimate;
  estimate_at_ = device_seconds();
  if (estimate.total == 0) return;
  SetShapes(estimate.done, estimate.total);
  if (estimate.done == estimate.total) {
    total_ = estimate.total;
    Emit(Progress());
  }
}

void JobContext::OnTrial(int index, const Comparison& trial) {
  OnTrials(index, {trial});
}

void JobContext::OnTrials(int index, const std::vector<Comparison>& trials) {
  if (trials.empty()) return;
  v1::AutotuneEvent event;
  v1::TrialEvent* t = event.mutable_trial();
  auto key = keys_.find(index);
  t->set_shape(key != keys_.end() ? key->second : shape_);
  for (const Comparison& trial : trials) *t->add_trials() = TrialOf(trial);
  Emit(std::move(event));
  // The progress counts follow the shape begun last.
  if (index != index_) return;
  timed_ += static_cast<uint32_t>(trials.size());
  // Progress is coalesced: at most one event per kProgressEvery.
  const absl::Time now = absl::Now();
  if (now - last_progress_ < kProgressEvery) return;
  last_progress_ = now;
  v1::AutotuneEvent progress = Progress();
  v1::ShapeProgress* p = progress.mutable_progress();
  p->set_settings_timed(timed_);
  if (best_) SetBest(*best_, p);
  Emit(std::move(progress));
}

void JobContext::OnPick(int index, const Comparison* pick) {
  if (index != index_) return;
  if (pick != nullptr) {
    best_ = *pick;
  } else {
    best_.reset();
  }
}

v1::AutotuneEvent JobContext::Progress() const {
  v1::AutotuneEvent event;
  v1::ShapeProgress* p = event.mutable_progress();
  p->set_index(index_);
  p->set_total(total_);
  p->set_shape(shape_);
  if (!estimate_) return event;
  // Within a shape, the device time it used since the estimate comes off
  // that shape's part of it.
  const double used = device_seconds();
  const double since = std::max(0.0, used - estimate_at_);
  const double remaining =
      std::max(0.0, estimate_->remaining_seconds -
                        std::min(since, estimate_->current_seconds));
  p->set_done(static_cast<uint32_t>(estimate_->done));
  p->set_planned_device_seconds(estimate_->planned_seconds);
  p->set_used_device_seconds(used);
  p->set_remaining_device_seconds(remaining);
  // Wall time follows device time at the job's ratio so far.
  p->set_eta_seconds(used > 0 ? remaining * wall_seconds() / used : remaining);
  return event;
}

}  // namespace irontune
