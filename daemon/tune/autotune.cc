#include "daemon/tune/autotune.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "daemon/base/log_safe.h"
#include "daemon/npu/metered.h"
#include "daemon/tune/device_turn.h"
#include "daemon/tune/inputs.h"
#include "daemon/tune/settings.h"
#include "daemon/tune/shape_memo.h"

namespace irontune {

// The run's context, its progress lines also in irontuned's log and its
// device metered for the budget and the estimate. Used under the turn.
class AutotuneRun::Logged : public TuneContextWrapper {
 public:
  explicit Logged(TuneContext& inner)
      : TuneContextWrapper(inner), meter_(&inner.device()) {}
  Device& device() override { return meter_; }
  void Log(const std::string& line) override {
    // Its shapes and settings quote the recording.
    spdlog::info("autotune: {}", LogSafe(line, kLogSafeLongBytes));
    TuneContextWrapper::Log(line);
  }
  double device_seconds() const { return meter_.device_us() / 1e6; }

 private:
  MeteredDevice meter_;
};

v1::Calls AutotuneRun::OperatorsOf(const v1::Calls& calls) {
  v1::Calls out;
  out.set_format_version(calls.format_version());
  *out.mutable_operators() = calls.operators();
  return out;
}

AutotuneRun::AutotuneRun(const v1::Calls& calls, const AutotuneOptions& options,
                         TuneContext& context)
    : calls_(OperatorsOf(calls)),
      options_(options),
      logged_(std::make_unique<Logged>(context)) {
  turn_.Take(0);
}

AutotuneRun::~AutotuneRun() {
  if (!lanes_.empty()) StopLanes();
  ahead_.reset();  // drops the spare builds, with the lanes stopped
}

absl::StatusOr<std::unique_ptr<AutotuneRun>> AutotuneRun::Start(
    const v1::Calls& calls, const Profile& profile,
    const AutotuneOptions& options, TuneContext& context) {
  std::unique_ptr<AutotuneRun> run(new AutotuneRun(calls, options, context));
  ASSIGN_OR_RETURN(run->platform_, context.device().GetPlatform());
  if (!options.cycles_path.empty()) {
    TuneContext& logged = *run->logged_;
    run->cycles_ =
        LoadKernelCycles(options.cycles_path,
                         [&logged](const std::string& l) { logged.Log(l); });
  }
  ASSIGN_OR_RETURN(run->shapes_,
                   Shapes(calls, options.space, run->platform_.generation));
  if (!options.only_shapes.empty()) {
    std::erase_if(run->shapes_, [&](const Shape& shape) {
      return !options.only_shapes.contains(shape.key);
    });
  }
  // From here on only the operators: `calls` may go once Start returns.
  const v1::Calls& operators = run->calls_;
  run->profile_ =
      std::make_unique<TunedProfile>(operators, profile, run->shapes_);
  ASSIGN_OR_RETURN(std::vector<ShapeCost> costs,
                   PlanShapes(run->shapes_, operators, run->platform_, options,
                              run->cycles_));
  run->order_ = TuneOrder(costs);
  AutotuneRun* self = run.get();
  run->ahead_ = std::make_unique<BuildAhead>(
      RunShapes{run->shapes_, run->order_, operators, run->platform_, options,
                run->cycles_, *run->profile_},
      costs, *run->logged_, [self](int p) { return self->Reaches(p); });
  run->estimator_ =
      std::make_unique<JobEstimator>(std::move(costs), options.budget_seconds);
  run->results_.resize(run->shapes_.size());
  run->tuned_.assign(run->shapes_.size(), false);
  run->untuned_.resize(run->shapes_.size());
  for (size_t s = 0; s < run->shapes_.size(); ++s) {
    run->results_[s].key = run->shapes_[s].key;
  }
  run->Tell(std::nullopt);
  return run;
}

double AutotuneRun::device_seconds() const { return logged_->device_seconds(); }

void AutotuneRun::Tell(std::optional<size_t> current) {
  logged_->OnEstimate(estimator_->Estimate(device_seconds(), current, 0));
}

bool AutotuneRun::BudgetSpent() const {
  return options_.budget_seconds > 0 &&
         device_seconds() >= options_.budget_seconds;
}

void AutotuneRun::LeaveUntuned() {
  const std::string why = absl::StrFormat(
      "the budget of %.4g s of device time was spent (%.4g s used)",
      options_.budget_seconds, device_seconds());
  logged_->Log(absl::StrCat(total() - done_, " of ", total(),
                            " shapes left untuned: ", why));
  for (; done_ < total(); ++done_) {
    const size_t s = order_[done_];
    untuned_[s] = why;
    estimator_->Finished(s, 0, /*tuned=*/false);
  }
  Tell(std::nullopt);
}

void AutotuneRun::PrefetchInputs(int position, TuneContext& lane) {
  std::vector<InputCache::Want> wants;
  for (const ShapeMember& m : shapes_[order_[position]].members) {
    AddDeclaredWants(calls_.operators(static_cast<int>(m.op)), m.inputs,
                     options_.seed, wants);
  }
  lane.inputs().Prefetch(wants, lane.lane());
}

bool AutotuneRun::Reaches(int position) const {
  if (options_.budget_seconds <= 0) return true;
  double planned = device_seconds();
  for (int p = done_; p < position; ++p) {
    planned += estimator_->cost(order_[p]).device_seconds;
  }
  return planned < options_.budget_seconds;
}

// One shape's search on a thread of its own, holding the run's turn
// (device_turn.h) at the rank of its place in the order while it runs:
// the run's context with the device metered for this shape alone and a
// builder that gives the turn up while it waits.
class AutotuneRun::Lane : public TuneContextWrapper {
 public:
  // With `own_thread`, queues for the turn, then starts the thread; else
  // RunHere runs the search. Each time the search gives the turn up, the
  // shapes after it start (StartLanes). REQUIRES: the run's thread holds
  // the turn.
  Lane(AutotuneRun& run, int position, bool own_thread)
      : TuneContextWrapper(*run.logged_),
        run_(run),
        position_(position),
        meter_(&run.logged_->device()),
        builds_(&run.logged_->builder(), &run.turn_, rank(),
                run.ahead_->QueueRank(position)) {
    builds_.OnYield([this] {
      run_.StartLanes();
      const int queued = run_.ahead_->QueueNext(builds_);
      if (queued >= 0) run_.ahead_->QueueSpare(queued, builds_);
    });
    if (!own_thread) return;
    run_.turn_.Queue(rank());
    thread_ = std::thread([this] {
      run_.turn_.TakeQueued(rank());
      RunHere();
      // Its place goes to the next shape not started.
      run_.StartLanes();
      // The run's thread waits for this one (JoinHead): the turn passes
      // to it straight, before any later lane's.
      if (run_.joining_ == position_) {
        handed_over_.Notify();
      } else {
        run_.turn_.Give();
      }
    });
  }
  ~Lane() override { Join(); }

  // The search, holding the turn (but while it waits for builds).
  void RunHere() {
    if (!cancelled() && !run_.BudgetSpent()) {
      begun_ = true;
      result_ = run_.Search(position_, *this, &stats_);
      if (asked_inputs_) inputs().Release(lane());
      // Counted done now, though collected in order.
      if (result_.ok()) run_.Ended(position_, device_seconds());
    }
    ended_ = true;
  }

  // Its rank on the turn and in the build queue, and its input-cache
  // user: its place in the order, after the run's thread (0).
  int rank() const { return position_ + 1; }
  // Under the turn: whether the search has returned.
  bool ended() const { return ended_; }
  // Blocks until the lane, ending while the run's thread joins it, hands
  // the turn over to it.
  void AwaitHandOver() { handed_over_.WaitForNotification(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // REQUIRES: Join() returned.
  bool begun() const { return begun_; }
  absl::StatusOr<ShapeResult>& result() { return result_; }
  const TuneStats& stats() const { return stats_; }
  double device_seconds() const { return meter_.device_us() / 1e6; }

  Device& device() override { return meter_; }
  Builder& builder() override { return builds_; }
  InputCache& inputs() override {
    asked_inputs_ = true;
    return TuneContextWrapper::inputs();
  }
  int lane() override { return rank(); }
  bool cancelled() override {
    return run_.stopping_.load() || TuneContextWrapper::cancelled();
  }

 private:
  AutotuneRun& run_;
  const int position_;
  MeteredDevice meter_;
  TurnBuilder builds_;
  bool begun_ = false;
  bool ended_ = false;
  bool asked_inputs_ = false;  // its batches' inputs are kept for it
  absl::Notification handed_over_;
  absl::StatusOr<ShapeResult> result_ =
      absl::CancelledError("the job was cancelled before the shape began");
  TuneStats stats_;
  std::thread thread_;
};

absl::StatusOr<ShapeResult> AutotuneRun::Search(int position, TuneContext& lane,
                                                TuneStats* stats) {
  const size_t s = order_[position];
  const Shape& shape = shapes_[s];
  Tell(s);
  lane.OnShape(position, total(), shape.key);
  lane.Log(absl::StrCat("[", position + 1, "/", total(), "] ", shape.key));
  const TunableValues incumbent = profile_->Incumbent(
      s,
      RecordedSetting(calls_.operators(static_cast<int>(shape.members[0].op))));
  // Where its first designs are still to build, its inputs are made
  // meanwhile; a cached shape makes none.
  if (ahead_->Begin(position, lane.builder())) PrefetchInputs(position, lane);
  ASSIGN_OR_RETURN(
      ShapeResult timed,
      TimeShapeKept({shape, calls_, platform_, options_, cycles_, lane, stats,
                     position, profile_->Covered(s) ? &incumbent : nullptr}));
  if (timed.best != timed.incumbent) {
    const Comparison& gain = timed.against_incumbent.trial;
    lane.Log(absl::StrFormat("    %s: %+.1f ± %.1f us against the incumbent",
                             SettingText(gain.tunables), gain.delta_us,
                             gain.noise_us.value_or(0)));
  }
  return timed;
}

void AutotuneRun::StartLanes() {
  if (stopping_) return;
  const int most = std::max(1, options_.shapes_at_once);
  // The head is under way: searched on this thread (not in lanes_), or a
  // lane that has not ended.
  int under_way = lanes_.contains(done_) ? 0 : 1;
  for (const auto& [position, lane] : lanes_) under_way += !lane->ended();
  for (int p = done_ + 1; p < total() && under_way < most; ++p) {
    if (lanes_.contains(p)) continue;
    lanes_[p] = std::make_unique<Lane>(*this, p, /*own_thread=*/true);
    ++under_way;
  }
}

AutotuneRun::Lane& AutotuneRun::JoinHead() {
  Lane& head = *lanes_.at(done_);
  if (!head.ended()) {
    joining_ = done_;
    turn_.Give();
    head.AwaitHandOver();
    joining_ = -1;
  }
  head.Join();
  return head;
}

void AutotuneRun::StopLanes() {
  stopping_ = true;
  turn_.Give();
  lanes_.clear();  // each joined
  turn_.Take(0);
  stopping_ = false;
}

absl::Status AutotuneRun::Next() {
  if (!lanes_.contains(done_) && BudgetSpent()) {
    LeaveUntuned();
    return absl::OkStatus();
  }
  if (!lanes_.contains(done_)) {
    // Searched on this thread; the shapes after it start only once it
    // waits for a build, so a run that never waits starts no thread.
    Lane head(*this, done_, /*own_thread=*/false);
    head.RunHere();
    return Collect(head);
  }
  return Collect(JoinHead());
}

absl::Status AutotuneRun::Collect(Lane& head) {
  if (!head.begun() && !logged_->cancelled()) {
    // The budget was spent before it could begin, and so before any
    // shape after it.
    StopLanes();
    LeaveUntuned();
    return absl::OkStatus();
  }
  stats_ += head.stats();
  absl::StatusOr<ShapeResult> timed = std::move(head.result());
  lanes_.erase(done_);  // `head`, where it is a started lane
  if (absl::IsUnimplemented(timed.status())) {
    // The builder cannot build this class at all (the simulated NPU has no
    // kernel for it, sim_limits.h SimUnsupported): its shape is left
    // untuned with the reason, and the search goes on.
    const size_t s = order_[done_];
    untuned_[s] = std::string(timed.status().message());
    logged_->Log(absl::StrCat("    left untuned: ", untuned_[s]));
    estimator_->Finished(s, 0, /*tuned=*/false);
    ++done_;
    Tell(std::nullopt);
    return absl::OkStatus();
  }
  if (!timed.ok()) {
    StopLanes();
    return timed.status();
  }
  Finished(*std::move(timed));
  return absl::OkStatus();
}

void AutotuneRun::Ended(int position, double device_seconds) {
  ahead_->Ended(position);
  estimator_->Finished(order_[position], device_seconds, /*tuned=*/true);
  Tell(std::nullopt);
}

void AutotuneRun::Finished(ShapeResult timed) {
  const size_t s = order_[done_];
  results_[s] = std::move(timed);
  tuned_[s] = true;
  ++done_;
}

TuneResult AutotuneRun::Finish() && {
  // In Shapes() order, so the profile and the diff do not follow the order
  // the shapes were tuned in.
  for (size_t s = 0; s < shapes_.size(); ++s) {
    if (tuned_[s]) {
      profile_->Add(s, results_[s]);
    } else {
      profile_->Untuned(s, untuned_[s], estimator_->cost(s).device_seconds);
    }
  }
  TuneResult result;
  auto [profile, diff] = std::move(*profile_).Finish(results_);
  result.profile = std::move(profile);
  result.diff = std::move(diff);
  result.shapes = std::move(results_);
  result.stats = stats_;
  result.build_wait_seconds = turn_.idle_seconds();
  return result;
}

absl::StatusOr<TuneResult> Autotune(const v1::Calls& calls,
                                    const Profile& profile,
                                    const AutotuneOptions& options,
                                    TuneContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<AutotuneRun> run,
                   AutotuneRun::Start(calls, profile, options, context));
  while (!run->finished()) RETURN_IF_ERROR(run->Next());
  return std::move(*run).Finish();
}

}  // namespace irontune
