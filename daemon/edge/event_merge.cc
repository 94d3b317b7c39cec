#include "daemon/edge/event_merge.h"

#include <string>
#include <utility>

namespace irontune {
namespace {

// Whether `next` may be folded into `into`, which holds `merged` events.
bool Mergeable(const v1::AutotuneEvent& into, size_t merged,
               const v1::AutotuneEvent& next) {
  if (merged >= kMaxMergedEvents || into.job_id() != next.job_id() ||
      into.event_case() != next.event_case()) {
    return false;
  }
  switch (next.event_case()) {
    case v1::AutotuneEvent::kLog:
      return true;
    case v1::AutotuneEvent::kTrial:
      return into.trial().shape() == next.trial().shape();
    default:
      return false;
  }
}

// A trial event with its trials in `trials` alone.
void NormalizeTrials(v1::TrialEvent* t) {
  if (!t->has_trial()) return;
  v1::Trial one = std::move(*t->mutable_trial());
  t->clear_trial();
  t->mutable_trials()->Add(std::move(one));
}

void Fold(v1::AutotuneEvent* into, v1::AutotuneEvent&& next) {
  if (next.has_log()) {
    std::string* text = into->mutable_log()->mutable_text();
    text->push_back('\n');
    text->append(next.log().text());
    return;
  }
  NormalizeTrials(into->mutable_trial());
  v1::TrialEvent* t = next.mutable_trial();
  NormalizeTrials(t);
  for (v1::Trial& trial : *t->mutable_trials()) {
    into->mutable_trial()->mutable_trials()->Add(std::move(trial));
  }
}

}  // namespace

std::vector<v1::AutotuneEvent> MergeEvents(
    std::vector<v1::AutotuneEvent> events) {
  std::vector<v1::AutotuneEvent> out;
  out.reserve(events.size());
  size_t merged = 0;  // events folded into out.back()
  for (v1::AutotuneEvent& e : events) {
    if (!out.empty() && Mergeable(out.back(), merged, e)) {
      Fold(&out.back(), std::move(e));
      ++merged;
      continue;
    }
    out.push_back(std::move(e));
    merged = 1;
  }
  return out;
}

}  // namespace irontune
