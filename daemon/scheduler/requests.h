// The wire boundary's inward half: every conversion from irontune.v1's
// requests to the method's own types, the checks a request must pass before
// it is queued, and the defaults a request's zero fields take (IRON's
// Timing and repeats, common/defaults.h; the platform's packaging,
// DefaultPackaging). The plans and options made here carry every default
// applied (a ResolvedTiming, a packaging, a repeats), so the method never
// resolves a request's field again.
//
// No gRPC here: the service turns the Status these return into a
// grpc::Status. Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_SCHEDULER_REQUESTS_H_
#define IRONTUNE_DAEMON_SCHEDULER_REQUESTS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "daemon/npu/device.h"
#include "daemon/tune/autotune.h"
#include "daemon/tune/measure.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// The largest runlist a request may ask for, and the most rounds and calls
// per round its Timing may ask for.
inline constexpr uint32_t kMaxRepeats = 65536;
inline constexpr uint32_t kMaxRounds = 1000;
inline constexpr uint32_t kMaxCalls = 100000;

// Checks what a Measure relies on: the operator validates as a recording's
// would, and every Setting names tunables of the operator, each once, with
// a value; values and inputs name the operator's call values and buffers,
// inputs of the buffer's size; repeats is 0 or in [2, kMaxRepeats]; the
// Timing (after its defaults) has at most kMaxRounds rounds of kMaxCalls
// calls, a given settle at most its rounds, and a cutoff of 0 or a finite ratio
// >= 1; the priority is a Priority; the platform is printable ASCII of at
// most 64 bytes and the power mode empty or one ParsePowerMode knows.
// InvalidArgument naming the field path
// ("operator.buffers[1]...", "settings[2].tunables[0].name: ...").
absl::Status ValidateMeasureRequest(const v1::MeasureRequest& request);

// Checks what an Autotune relies on: calls present and valid
// (ValidateRecording), Timing, priority and repeats as above, min_gain in
// [0, 1), budget_seconds finite and not negative (0: no budget), platform
// and power mode as above, each of shapes a shape the calls run.
// InvalidArgument naming the field path.
absl::Status ValidateAutotuneRequest(const v1::AutotuneRequest& request);

// OK when `platform` is what a request's platform and power_mode fields ask
// for (PlatformAnswersTo; an empty power mode asks for the NPU's present
// one); FailedPrecondition naming both otherwise: a box does not time a
// job meant for another NPU, or at another mode. REQUIRES: the request
// passed its Validate*Request.
absl::Status CheckRunsOn(const std::string& asked_platform,
                         const std::string& asked_mode,
                         const Platform& platform);

// Checks a job id a client names (Cancel, Watch, GetResult): not empty,
// printable ASCII, at most kMaxJobIdBytes. InvalidArgument "job_id: ...".
inline constexpr size_t kMaxJobIdBytes = 64;
absl::Status ValidateJobId(const std::string& id);

// The operator at `setting`: the recorded tunables with the setting's
// values applied. REQUIRES: ValidateMeasureRequest passed.
v1::Operator ApplySetting(const v1::Operator& op, const v1::Setting& setting);

// A request's repeats, 0 meaning the default.
int RepeatsOf(uint32_t repeats);

// A request's packaging on `platform`, PACKAGING_UNSPECIFIED meaning the
// platform's (DefaultPackaging).
v1::Packaging PackagingOf(v1::Packaging packaging, const Platform& platform);

// What a Measure request asks for on `platform`: the operator at its
// recorded setting, then at each Setting, every default applied. REQUIRES:
// ValidateMeasureRequest passed.
MeasurePlan MeasurePlanOf(const v1::MeasureRequest& request,
                          const Platform& platform);

// What an Autotune request asks for on `platform`, every default applied;
// `cycles_path` is the daemon's kernel cycles file ("" for none).
AutotuneOptions AutotuneOptionsOf(const v1::AutotuneRequest& request,
                                  const Platform& platform,
                                  const std::string& cycles_path);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_REQUESTS_H_
