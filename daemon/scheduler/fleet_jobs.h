// A submit as the fleet's work (docs/fleet.md): an Autotune request cut
// into one shard per shape, each shard's task the request naming that shape
// alone (AutotuneRequest.shapes), so a box tunes it in the context of the
// whole model (its points and weights) and keeps every other entry.
//
// No gRPC here. Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_SCHEDULER_FLEET_JOBS_H_
#define IRONTUNE_DAEMON_SCHEDULER_FLEET_JOBS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/fleet/fleet_queue.h"
#include "daemon/npu/platform.h"
#include "irontune/v1/tuner.pb.h"

namespace irontune {

// What identical submits share: the sha256 (hex) of the request's
// deterministic encoding without who sent it and how (client, priority,
// detach), and of the target. Two submits of one model, Timing and profile
// for one platform and mode get one digest whoever sends them.
std::string FleetRequestDigest(const v1::AutotuneRequest& request,
                               const std::string& platform_slug,
                               PowerMode power_mode);

// The fleet job of `request`, from `owner`, to run on `platform_slug` at
// `power_mode`: one shard per shape the calls run (those `request.shapes`
// names, where it names any), in the order the model first runs them; each
// shard's task the request with `shapes` that one shape's key and the
// target set, its client, priority and detach cleared. An interactive
// request's shards come first (priority 1, batch 0). REQUIRES: `request`
// passed ValidateAutotuneRequest. InvalidArgument when it names no shape.
absl::StatusOr<NewJob> FleetJobOf(const v1::AutotuneRequest& request,
                                  const std::string& owner,
                                  const std::string& platform_slug,
                                  PowerMode power_mode);

// The profile entry a shard's job decided for its shape: the entry of
// `result`'s profile covering the shape `task` names (its class at its
// dims), serialized; nullopt where none covers it (a shape with nothing to
// search and no entry). REQUIRES: `task` from FleetJobOf.
std::optional<std::string> ShardDecision(const v1::AutotuneRequest& task,
                                         const v1::AutotuneResult& result);

// A shard as the job that cut it sees it: its shape, and its job's result
// once done (unset while not, or when it failed).
struct ShardOutcomeView {
  std::string shape_key;
  std::optional<v1::JobResult> result;
};

// The fleet job's result from its shards', as a front answers the submit:
// the submitted profile with each done shard's decided entry put in place
// (replacing the entry of its class and dims, else appended, in shard
// order); the diff lists every shard's changed and added entries with
// their gains, the submitted entries no shard changed as kept, the model
// and recording gains summed (noise: the root of the summed squares), the
// model's time per pass summed over the shards that give it, and
// each shard not done as untuned with `why`; the stats summed. REQUIRES:
// `shards` in FleetJobOf's order for `request`.
v1::AutotuneResult AssembleResult(const v1::AutotuneRequest& request,
                                  const std::vector<ShardOutcomeView>& shards,
                                  const std::string& why);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_SCHEDULER_FLEET_JOBS_H_
