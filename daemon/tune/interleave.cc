#include "daemon/tune/interleave.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/base/stats.h"
#include "common/status_macros.h"

namespace irontune {
namespace {

// A round refused this many times over (for CPU waits) ends the timing.
constexpr int kMaxAttemptsPerRound = 20;

// Waits, bounded, until no other process holds the NPU.
absl::Status WaitIdle(const InterleaveEnv& env) {
  absl::Duration waited;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<int> holders, env.device->OtherHolders());
    if (holders.empty()) return absl::OkStatus();
    if (waited >= env.idle_timeout) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the NPU is held by process ", absl::StrJoin(holders, ", "),
          "; gave up waiting after ", absl::FormatDuration(waited)));
    }
    if (env.log && waited == absl::ZeroDuration()) {
      env.log(absl::StrCat("    the NPU is held by process ",
                           absl::StrJoin(holders, ", "), "; waiting"));
    }
    if (env.cancelled && env.cancelled()) {
      return absl::CancelledError("cancelled while waiting for the NPU");
    }
    env.sleep(env.idle_poll);
    waited += env.idle_poll;
  }
}

absl::StatusOr<bool> HeldByOthers(const InterleaveEnv& env) {
  ASSIGN_OR_RETURN(std::vector<int> holders, env.device->OtherHolders());
  return !holders.empty();
}

}  // namespace

absl::StatusOr<InterleaveResult> TimeInterleaved(
    const std::vector<Image*>& images, const std::vector<int>& groups,
    const v1::Timing& timing_in, double fastest_us,
    const InterleaveEnv& env_in) {
  InterleaveEnv env = env_in;
  if (!env.sleep) env.sleep = [](absl::Duration d) { absl::SleepFor(d); };
  const v1::Timing timing = WithDefaults(timing_in);
  const size_t n = images.size();
  InterleaveResult result;
  result.runs.resize(n);
  std::vector<bool> live(n, true);

  for (Image* image : images) {
    ASSIGN_OR_RETURN(RunResult warm, image->Run());
    (void)warm;
  }

  std::vector<double> call_us(timing.calls());
  std::vector<double> round_us(n);
  for (uint32_t round = 0; round < timing.rounds(); ++round) {
    int attempts = 0;
    while (true) {
      if (env.cancelled && env.cancelled()) {
        return absl::CancelledError("cancelled between rounds");
      }
      if (env.device != nullptr) RETURN_IF_ERROR(WaitIdle(env));
      bool refused = false;
      for (size_t i = 0; i < n && !refused; ++i) {
        if (!live[i]) continue;
        // Also between images, so a round of long runs stops promptly.
        if (env.cancelled && env.cancelled()) {
          return absl::CancelledError("cancelled within a round");
        }
        for (uint32_t c = 0; c < timing.calls(); ++c) {
          ASSIGN_OR_RETURN(RunResult r, images[i]->Run());
          if (r.cpu_wait_us > env.cpu_wait_us) {
            ++result.refused_calls;
            refused = true;
            break;
          }
          call_us[c] = r.elapsed_us;
        }
        if (!refused) round_us[i] = Median(call_us);
      }
      bool held = false;
      if (!refused && env.device != nullptr) {
        ASSIGN_OR_RETURN(held, HeldByOthers(env));
        if (held) ++result.discarded_rounds;
      }
      if (!refused && !held) break;
      if (++attempts >= kMaxAttemptsPerRound) {
        return absl::AbortedError(absl::StrCat(
            "round ", round + 1, " was repeated ", attempts, " times (",
            result.refused_calls, " calls waited over ", env.cpu_wait_us,
            " us for a CPU, ", result.discarded_rounds,
            " rounds overlapped another process)"));
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (live[i]) result.runs[i].rounds_us.push_back(round_us[i]);
    }
    if (round + 1 < timing.settle()) continue;
    // A group's figure is its slowest run's median so far.
    std::map<int, double> slowest;
    for (size_t i = 0; i < n; ++i) {
      if (!live[i]) continue;
      double m = Median(result.runs[i].rounds_us);
      auto [it, inserted] = slowest.emplace(groups[i], m);
      if (!inserted) it->second = std::max(it->second, m);
    }
    double fastest = fastest_us;
    for (const auto& [group, m] : slowest) fastest = std::min(fastest, m);
    for (size_t i = 0; i < n; ++i) {
      if (!live[i] || groups[i] == 0) continue;
      if (slowest[groups[i]] > timing.cutoff() * fastest) live[i] = false;
    }
  }
  return result;
}

}  // namespace irontune
