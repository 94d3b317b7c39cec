#include "daemon/scheduler/fleet_jobs.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/design.h"
#include "common/profile.h"
#include "common/shape.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "daemon/base/sha256.h"
#include "daemon/scheduler/jobs.h"

namespace irontune {
namespace {

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
  return Sha256Hex(DeterministicBytes(task));
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
  job.request = DeterministicBytes(task);
  for (const ShapeGroup& group : groups) {
    if (!asked.empty() && !asked.contains(group.key)) continue;
    task.clear_shapes();
    task.add_shapes(group.key);
    job.shards.push_back({group.key, DeterministicBytes(task)});
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
    return DeterministicBytes(**entry);
  }
  return std::nullopt;
}

namespace {

// Adds `from`'s figures to `into`'s, noise as the root of summed squares.
void AddGain(bool has, double gain, double noise, bool* into_has,
             double* into_gain, double* into_noise) {
  if (!has) return;
  *into_has = true;
  *into_gain += gain;
  *into_noise = std::sqrt(*into_noise * *into_noise + noise * noise);
}

void AddStats(const v1::AutotuneStats& from, v1::AutotuneStats& into) {
  into.set_shapes(into.shapes() + from.shapes());
  into.set_settings_timed(into.settings_timed() + from.settings_timed());
  into.set_cache_hits(into.cache_hits() + from.cache_hits());
  into.set_device_seconds(into.device_seconds() + from.device_seconds());
  into.set_wall_seconds(std::max(into.wall_seconds(), from.wall_seconds()));
  into.set_build_wait_seconds(into.build_wait_seconds() +
                              from.build_wait_seconds());
}

// Whether `entry` has `change`'s class and dims.
bool SameShape(const v1::ProfileEntry& entry, const v1::EntryChange& change) {
  if (entry.operator_class() != change.operator_class() ||
      entry.dims_size() != change.dims_size()) {
    return false;
  }
  for (int i = 0; i < entry.dims_size(); ++i) {
    if (entry.dims(i).name() != change.dims(i).name() ||
        !ValuesEqual(entry.dims(i).value(), change.dims(i).value())) {
      return false;
    }
  }
  return true;
}

// One done shard's part: its decided entry into `profile`, its changes and
// additions into `diff`.
void TakeShard(const v1::AutotuneResult& shard, Profile& profile,
               v1::ProfileDiff& diff) {
  const v1::ProfileDiff& part = shard.diff();
  for (const v1::EntryChange& c : part.changed()) {
    *diff.add_changed() = c;
    v1::ProfileEntry entry;
    entry.set_operator_class(c.operator_class());
    *entry.mutable_dims() = c.dims();
    *entry.mutable_tunables() = c.new_tunables();
    profile.Put(std::move(entry));
  }
  for (int i = 0; i < part.added_size(); ++i) {
    *diff.add_added() = part.added(i);
    if (i < part.added_gains_size())
      *diff.add_added_gains() = part.added_gains(i);
    profile.Put(part.added(i));
  }
  bool has = diff.has_model_gain();
  double gain = diff.model_gain_us(), noise = diff.model_noise_us();
  AddGain(part.has_model_gain(), part.model_gain_us(), part.model_noise_us(),
          &has, &gain, &noise);
  diff.set_has_model_gain(has);
  diff.set_model_gain_us(gain);
  diff.set_model_noise_us(noise);
  has = diff.has_recording_gain();
  gain = diff.recording_gain_us();
  noise = diff.recording_noise_us();
  AddGain(part.has_recording_gain(), part.recording_gain_us(),
          part.recording_noise_us(), &has, &gain, &noise);
  diff.set_has_recording_gain(has);
  diff.set_recording_gain_us(gain);
  diff.set_recording_noise_us(noise);
  if (part.has_model_time()) {  // the shapes' times per pass add up
    diff.set_has_model_time(true);
    diff.set_model_time_us(diff.model_time_us() + part.model_time_us());
  }
  for (const v1::UntunedShape& u : part.untuned()) *diff.add_untuned() = u;
}

}  // namespace

v1::AutotuneResult AssembleResult(const v1::AutotuneRequest& request,
                                  const std::vector<ShardOutcomeView>& shards,
                                  const std::string& why) {
  v1::AutotuneResult out;
  Profile profile(request.profile());
  v1::ProfileDiff& diff = *out.mutable_diff();
  for (const ShardOutcomeView& shard : shards) {
    if (!shard.result || !shard.result->has_autotune()) {
      v1::UntunedShape* u = diff.add_untuned();
      u->set_shape(shard.shape_key);
      u->set_reason(why);
      continue;
    }
    TakeShard(shard.result->autotune(), profile, diff);
    AddStats(shard.result->autotune().stats(), *out.mutable_stats());
  }
  for (const v1::ProfileEntry& e : request.profile().entries()) {
    bool changed = false;
    for (const v1::EntryChange& c : diff.changed()) {
      changed = changed || SameShape(e, c);
    }
    if (!changed) *diff.add_kept() = e;
  }
  *out.mutable_profile() = profile.proto();
  return out;
}

}  // namespace irontune
