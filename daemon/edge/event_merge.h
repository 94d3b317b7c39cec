// Merging a job's events for a stream: the events a stream finds waiting
// together go out as fewer messages.
//
// A fully cached Autotune produces its few hundred log lines and trial
// events within milliseconds; writing each as its own message costs more
// than the job. A stream that keeps up sends events one by one; one that
// finds several waiting merges them here:
//   - consecutive LogLine events become one, their texts joined by '\n';
//   - consecutive TrialEvents of the same shape become one, their trials
//     (`trial` or `trials`) in order in `trials`.
// Every other event passes unchanged, and the order of what is said is
// kept. A merged message holds at most kMaxMergedEvents events' worth.
// Pure functions; thread-compatible.
#ifndef IRONTUNE_DAEMON_EDGE_EVENT_MERGE_H_
#define IRONTUNE_DAEMON_EDGE_EVENT_MERGE_H_

#include <cstddef>
#include <vector>

#include "irontune/v1/tuner.pb.h"

namespace irontune {

// The most events merged into one message, so that a stream far behind
// still sends messages of bounded size.
inline constexpr size_t kMaxMergedEvents = 256;

// `events` with runs of mergeable events merged, as described above.
std::vector<v1::AutotuneEvent> MergeEvents(
    std::vector<v1::AutotuneEvent> events);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_EVENT_MERGE_H_
