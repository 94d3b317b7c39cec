#include "daemon/tune/build_ahead.h"

#include <algorithm>
#include <utility>

#include "daemon/tune/settings.h"
#include "daemon/tune/shape_builds.h"
#include "daemon/tune/shape_task.h"

namespace irontune {
namespace {

// BuildAhead::QueueRank of each position in `order` (indices into
// `costs`): the first `together` ranked by planned device seconds per
// planned setting, most first (ties by place), the rest by place.
std::vector<int> QueueRanks(const std::vector<ShapeCost>& costs,
                            const std::vector<size_t>& order, int together) {
  const int n = static_cast<int>(order.size());
  together = std::min(n, std::max(1, together));
  auto per_setting = [&](int p) {
    const ShapeCost& c = costs[order[p]];
    return c.device_seconds /
           static_cast<double>(std::max<int64_t>(1, c.settings));
  };
  std::vector<int> starting(together);
  for (int p = 0; p < together; ++p) starting[p] = p;
  std::stable_sort(starting.begin(), starting.end(), [&](int a, int b) {
    return per_setting(a) > per_setting(b);
  });
  std::vector<int> ranks(n);
  for (int i = 0; i < together; ++i) ranks[starting[i]] = i + 1;
  for (int p = together; p < n; ++p) ranks[p] = p + 1;
  return ranks;
}

}  // namespace

BuildAhead::BuildAhead(const RunShapes& run,
                       const std::vector<ShapeCost>& costs,
                       TuneContext& context, ReachesFn reaches)
    : run_(run),
      context_(context),
      reaches_(std::move(reaches)),
      queue_rank_(QueueRanks(costs, run.order, run.options.shapes_at_once)) {
  absl::StatusOr<std::vector<bool>> before =
      SearchedBefore(run.shapes, run.calls, run.platform, run.options, context);
  // Only a hint for building ahead: none known where the cache fails.
  searched_before_ =
      before.ok() ? *std::move(before) : std::vector<bool>(run.shapes.size());
}

BuildAhead::~BuildAhead() {
  // Cancelled, failed, or shapes left untuned: nothing will ask for them.
  while (!spare_.empty()) Ended(spare_.begin()->first);
}

std::vector<BuildRequest> BuildAhead::BuildsOf(
    int position, std::vector<BuildRequest>* rest) {
  const size_t s = run_.order[position];
  if (searched_before_[s]) return {};
  const Shape& shape = run_.shapes[s];
  const TunableValues incumbent = run_.profile.Incumbent(
      s, RecordedSetting(
             run_.calls.operators(static_cast<int>(shape.members[0].op))));
  absl::StatusOr<std::vector<BuildRequest>> builds =
      ShapeBuilds({shape, run_.calls, run_.platform, run_.options, run_.cycles,
                   context_, nullptr, position, &incumbent},
                  rest);
  // Only a hint: the search meets an error of its own when it asks.
  return builds.ok() ? *std::move(builds) : std::vector<BuildRequest>();
}

bool BuildAhead::Begin(int position, Builder& builder) {
  std::vector<int> queued;
  if (ahead_to_ < 0) queued = QueueStart(builder);
  // The list made for this shape as one ahead, where it was.
  auto it = ahead_.find(position);
  const std::vector<BuildRequest> now =
      it != ahead_.end() ? std::move(it->second) : BuildsOf(position);
  if (it != ahead_.end()) ahead_.erase(it);
  for (const BuildRequest& r : now) builder.Prefetch(r);
  ahead_to_ = std::max(ahead_to_, position);
  // Every first list before any spare build, so no thread starts on a
  // spare one while a first list is still to come.
  for (int p = QueueNext(builder); p >= 0; p = QueueNext(builder)) {
    queued.push_back(p);
  }
  for (int p : queued) QueueSpare(p, builder);
  return !now.empty();
}

void BuildAhead::QueueSpare(int position, Builder& builder) {
  auto it = spare_.find(position);
  if (it == spare_.end()) return;
  for (const BuildRequest& r : it->second) builder.PrefetchSpare(r);
}

void BuildAhead::Ended(int position) {
  auto it = spare_.find(position);
  if (it == spare_.end()) return;
  for (const BuildRequest& r : it->second) context_.builder().Unprefetch(r);
  spare_.erase(it);
}

std::vector<int> BuildAhead::QueueStart(Builder& builder) {
  const int together =
      std::min(total(), std::max(1, run_.options.shapes_at_once));
  std::vector<int> starting;
  for (int p = 0; p < together && (p == 0 || reaches_(p)); ++p) {
    starting.push_back(p);
  }
  std::sort(starting.begin(), starting.end(),
            [&](int a, int b) { return QueueRank(a) < QueueRank(b); });
  std::vector<int> later;
  for (int p : starting) {
    std::vector<BuildRequest>& list = ahead_[p];
    list = BuildsOf(p, p == 0 ? nullptr : &spare_[p]);
    for (const BuildRequest& r : list) builder.PrefetchAt(r, QueueRank(p));
    ahead_to_ = std::max(ahead_to_, p);
    if (p > 0) later.push_back(p);
  }
  std::sort(later.begin(), later.end());
  return later;
}

int BuildAhead::QueueNext(Builder& builder) {
  const int next = ahead_to_ + 1;
  if (next >= total() || context_.cancelled()) return -1;
  // The next shape may not begin: the budget spent by the shapes not
  // finished before it, as planned.
  if (!reaches_(next)) return -1;
  ahead_to_ = next;
  std::vector<BuildRequest>& list = ahead_[next];
  list = BuildsOf(next, &spare_[next]);
  for (const BuildRequest& r : list) builder.PrefetchLater(r);
  return next;
}

}  // namespace irontune
