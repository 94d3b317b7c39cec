#include "daemon/tune/interleave.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "daemon/base/stats.h"

namespace irontune {
namespace {

// A round refused this many times over (for CPU waits) ends the timing.
constexpr int kMaxAttemptsPerRound = 20;

// Waits, bounded, until no other process holds the NPU.
absl::Status WaitIdle(const IdleRules& rules, TuneContext& context) {
  absl::Duration waited;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<int> holders, context.device().OtherHolders());
    if (holders.empty()) return absl::OkStatus();
    if (waited >= rules.idle_timeout) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the NPU is held by process ", absl::StrJoin(holders, ", "),
          "; gave up waiting after ", absl::FormatDuration(waited)));
    }
    if (waited == absl::ZeroDuration()) {
      context.Log(absl::StrCat("    the NPU is held by process ",
                               absl::StrJoin(holders, ", "), "; waiting"));
    }
    if (context.cancelled()) {
      return absl::CancelledError("cancelled while waiting for the NPU");
    }
    context.Sleep(rules.idle_poll);
    waited += rules.idle_poll;
  }
}

// One interleaved loop over `images`: its state between rounds.
class Interleaver {
 public:
  Interleaver(const std::vector<Image*>& images, const std::vector<int>& groups,
              const ResolvedTiming& timing, const IdleRules& rules,
              TuneContext& context)
      : images_(images),
        groups_(groups),
        timing_(timing),
        rules_(rules),
        context_(context),
        live_(images.size(), true),
        call_us_(timing.calls()),
        round_us_(images.size()) {
    result_.runs.resize(images.size());
  }

  absl::StatusOr<InterleaveResult> Run(double fastest_us) {
    for (Image* image : images_) RETURN_IF_ERROR(image->Run().status());
    for (uint32_t round = 0; round < timing_.rounds(); ++round) {
      RETURN_IF_ERROR(TimeRound(round));
      for (size_t i = 0; i < images_.size(); ++i) {
        if (live_[i]) result_.runs[i].rounds_us.push_back(round_us_[i]);
      }
      if (round + 1 >= timing_.settle()) CutSlow(fastest_us);
    }
    return std::move(result_);
  }

 private:
  // Times one round, repeating it while it does not count.
  absl::Status TimeRound(uint32_t round) {
    for (int attempts = 1;; ++attempts) {
      if (context_.cancelled()) {
        return absl::CancelledError("cancelled between rounds");
      }
      RETURN_IF_ERROR(WaitIdle(rules_, context_));
      ASSIGN_OR_RETURN(bool counts, TryRound());
      if (counts) return absl::OkStatus();
      if (attempts >= kMaxAttemptsPerRound) {
        return absl::AbortedError(absl::StrCat(
            "round ", round + 1, " was repeated ", attempts, " times (",
            result_.refused_calls, " calls waited over ", rules_.cpu_wait_us,
            " us for a CPU, ", result_.discarded_rounds,
            " rounds overlapped another process)"));
      }
    }
  }

  // Every live image's calls once; false where a call waited for a CPU or
  // another process held the NPU meanwhile.
  absl::StatusOr<bool> TryRound() {
    for (size_t i = 0; i < images_.size(); ++i) {
      if (!live_[i]) continue;
      // Also between images, so a round of long runs stops promptly.
      if (context_.cancelled()) {
        return absl::CancelledError("cancelled within a round");
      }
      ASSIGN_OR_RETURN(bool timed, TimeCalls(*images_[i]));
      if (!timed) return false;
      round_us_[i] = Median(call_us_);
    }
    ASSIGN_OR_RETURN(std::vector<int> holders,
                     context_.device().OtherHolders());
    if (holders.empty()) return true;
    ++result_.discarded_rounds;
    return false;
  }

  // One image's calls of a round into call_us_; false where one waited.
  absl::StatusOr<bool> TimeCalls(Image& image) {
    for (uint32_t c = 0; c < timing_.calls(); ++c) {
      ASSIGN_OR_RETURN(RunResult r, image.Run());
      if (r.cpu_wait_us > rules_.cpu_wait_us) {
        ++result_.refused_calls;
        return false;
      }
      call_us_[c] = r.elapsed_us;
    }
    return true;
  }

  // Stops timing the groups slower than `cutoff` times the fastest; a
  // group's figure is its slowest run's median so far.
  void CutSlow(double fastest_us) {
    std::map<int, double> slowest;
    for (size_t i = 0; i < images_.size(); ++i) {
      if (!live_[i]) continue;
      const double m = Median(result_.runs[i].rounds_us);
      auto [it, inserted] = slowest.emplace(groups_[i], m);
      if (!inserted) it->second = std::max(it->second, m);
    }
    double fastest = fastest_us;
    for (const auto& [group, m] : slowest) fastest = std::min(fastest, m);
    for (size_t i = 0; i < images_.size(); ++i) {
      if (!live_[i] || groups_[i] == 0) continue;
      if (slowest[groups_[i]] > timing_.cutoff() * fastest) live_[i] = false;
    }
  }

  const std::vector<Image*>& images_;
  const std::vector<int>& groups_;
  const ResolvedTiming timing_;
  const IdleRules& rules_;
  TuneContext& context_;
  InterleaveResult result_;
  std::vector<bool> live_;
  std::vector<double> call_us_;
  std::vector<double> round_us_;
};

}  // namespace

absl::StatusOr<InterleaveResult> TimeInterleaved(
    const std::vector<Image*>& images, const std::vector<int>& groups,
    const ResolvedTiming& timing, double fastest_us, const IdleRules& rules,
    TuneContext& context) {
  return Interleaver(images, groups, timing, rules, context).Run(fastest_us);
}

}  // namespace irontune
