// The flags every job-submitting command shares (submit, measure): who asks,
// at which priority, and how long to time. One definition, so their --help
// and their meaning agree.
#ifndef IRONTUNE_CLIENT_JOB_FLAGS_H_
#define IRONTUNE_CLIENT_JOB_FLAGS_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "client/environment.h"
#include "irontune/v1/tuner.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace irontune {

struct JobFlags {
  std::string priority = "interactive";
  std::string client;
  uint32_t rounds = 0;
  uint32_t calls = 0;
  uint32_t settle = 0;
  double cutoff = 0;
  uint32_t repeats = 0;
  std::string packaging;
  uint64_t seed = 0;
  bool remeasure = false;
  // --min-gain (submit only): NaN unless given.
  double min_gain = std::numeric_limits<double>::quiet_NaN();
  // --budget (submit only): as given, "" unless given; checked by
  // ParseBudget when parsed.
  std::string budget;
  // --platform and --power-mode: the NPU and mode the job must run on, ""
  // unless given (the daemon's).
  std::string platform;
  std::string power_mode;
};

// A --budget DURATION ("90s", "15m", "1h30m"; absl::ParseDuration's units)
// in seconds. InvalidArgument naming the flag and the value for text that
// is not a duration, or one that is not positive and finite.
absl::StatusOr<double> ParseBudget(const std::string& text);

// Registers the flags on `cmd`, bound to `*f`, which must outlive the
// parse. The Timing and --repeats help quotes common/defaults.h. A command
// named "submit" also gets --min-gain and --budget.
void AddJobFlags(CLI::App& cmd, JobFlags* f);

// The client name a request carries: --client, else $USER, else
// "irontune-client".
std::string ClientName(const JobFlags& f, const ClientEnvironment& env);

v1::Priority PriorityOf(const JobFlags& f);
v1::Packaging PackagingOf(const JobFlags& f);

// Sets the fields an AutotuneRequest and a MeasureRequest share.
template <typename Request>
void ApplyJobFlags(const JobFlags& f, const ClientEnvironment& env,
                   Request* request) {
  request->mutable_timing()->set_rounds(f.rounds);
  request->mutable_timing()->set_calls(f.calls);
  request->mutable_timing()->set_settle(f.settle);
  request->mutable_timing()->set_cutoff(f.cutoff);
  request->set_repeats(f.repeats);
  request->set_packaging(PackagingOf(f));
  request->set_remeasure(f.remeasure);
  request->set_priority(PriorityOf(f));
  request->set_client(ClientName(f, env));
  request->set_seed(f.seed);
  request->set_platform(f.platform);
  request->set_power_mode(f.power_mode);
  if constexpr (std::is_same_v<Request, v1::AutotuneRequest>) {
    if (!std::isnan(f.min_gain)) request->set_min_gain(f.min_gain);
    if (!f.budget.empty()) {
      // Checked when parsed; a bad one would be 0, no budget.
      request->set_budget_seconds(ParseBudget(f.budget).value_or(0));
    }
  }
}

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_JOB_FLAGS_H_
