#include "daemon/scheduler/fleet_jobs.h"

#include <set>

#include "common/profile.h"
#include "common/shape.h"
#include "common/status_macros.h"
#include "daemon/base/sha256.h"
#include "daemon/scheduler/jobs.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace irontune {
namespace {

// `message` encoded the same way every time (map entries in key order).
std::string Deterministic(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// The request as every shard runs it: the target set, who sent it cleared.
v1::AutotuneRequest TaskBase(const v1::AutotuneRequest& request,
                             const std::string& platform_slug,
                             PowerMode power_mode) {
  v1::AutotuneRequest task = request;
  task.clear_client();
  task.clear_priority();
  task.clear_detach();
  task.clear_shapes();
  task.set_platform(platform_slug);
  task.set_power_mode(std::string(PowerModeName(power_mode)));
  return task;
}

}  // namespace

std::string FleetRequestDigest(const v1::AutotuneRequest& request,
                               const std::string& platform_slug,
                               PowerMode power_mode) {
  v1::AutotuneRequest task = TaskBase(request, platform_slug, power_mode);
  *task.mutable_shapes() = request.shapes();
  return Sha256Hex(Deterministic(task));
}

absl::StatusOr<NewJob> FleetJobOf(const v1::AutotuneRequest& request,
                                  const std::string& owner,
                                  const std::string& platform_slug,
                                  PowerMode power_mode) {
  ASSIGN_OR_RETURN(std::vector<ShapeGroup> groups,
                   GroupShapes(request.calls()));
  const std::set<std::string> asked(request.shapes().begin(),
                                    request.shapes().end());
  NewJob job;
  job.kind = "autotune";
  job.owner = owner;
  job.request_digest = FleetRequestDigest(request, platform_slug, power_mode);
  job.platform = platform_slug;
  job.power_mode = power_mode;
  job.interactive =
      NormalizePriority(request.priority()) == v1::PRIORITY_INTERACTIVE;
  job.priority = job.interactive ? 1 : 0;
  v1::AutotuneRequest task = TaskBase(request, platform_slug, power_mode);
  job.request = Deterministic(task);
  for (const ShapeGroup& group : groups) {
    if (!asked.empty() && !asked.contains(group.key)) continue;
    task.clear_shapes();
    task.add_shapes(group.key);
    job.shards.push_back({group.key, Deterministic(task)});
  }
  if (job.shards.empty()) {
    return absl::InvalidArgumentError("the request names no shape to tune");
  }
  return job;
}

std::optional<std::string> ShardDecision(const v1::AutotuneRequest& task,
                                         const v1::AutotuneResult& result) {
  if (task.shapes_size() != 1) return std::nullopt;
  absl::StatusOr<std::vector<ShapeGroup>> groups = GroupShapes(task.calls());
  if (!groups.ok()) return std::nullopt;
  const Profile profile(result.profile());
  for (const ShapeGroup& group : *groups) {
    if (group.key != task.shapes(0)) continue;
    const google::protobuf::RepeatedPtrField<v1::Field> dims(group.dims.begin(),
                                                             group.dims.end());
    absl::StatusOr<const v1::ProfileEntry*> entry =
        profile.Match(group.class_name, dims);
    if (!entry.ok() || *entry == nullptr) return std::nullopt;
    return Deterministic(**entry);
  }
  return std::nullopt;
}

}  // namespace irontune
