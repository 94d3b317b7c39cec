#include "daemon/scheduler/job_end.h"

#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "daemon/base/log_safe.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

// Settings given a figure, and those of them timed on the device.
struct SettingCounts {
  uint32_t settings = 0;
  uint32_t timed = 0;
};

SettingCounts CountSettings(const JobResultVariant& result) {
  SettingCounts counts;
  if (const auto* a = std::get_if<v1::AutotuneResult>(&result)) {
    counts.timed = a->stats().settings_timed();
    counts.settings = counts.timed + a->stats().cache_hits();
  } else if (const auto* m = std::get_if<v1::MeasureResult>(&result)) {
    for (const auto& s : m->settings()) {
      ++counts.settings;
      if (s.has_measurement() && !s.cached()) ++counts.timed;
    }
  }
  return counts;
}

v1::AutotuneStats MeasureStats(const SettingCounts& counts, double device_s,
                               double wall_s,
                               const std::optional<v1::BuildStats>& builds) {
  v1::AutotuneStats stats;
  stats.set_shapes(1);
  stats.set_settings_timed(counts.timed);
  stats.set_cache_hits(counts.settings - counts.timed);
  stats.set_device_seconds(device_s);
  stats.set_wall_seconds(wall_s);
  if (builds) *stats.mutable_builds() = *builds;
  return stats;
}

}  // namespace

const char* KindName(v1::JobKind kind) {
  return kind == v1::JOB_KIND_AUTOTUNE ? "autotune" : "measure";
}

absl::Status SaveJob(JobStore* store, const Job& job) {
  if (store == nullptr) return absl::OkStatus();
  absl::Status s = store->Save(job.Record());
  if (!s.ok()) {
    spdlog::warn("job {}: not saved in the job store: {}", job.id(),
                 s.ToString());
  }
  return s;
}

void EndJob(const JobPtr& job, absl::Status status, JobResultVariant result,
            const JobContext& context,
            const std::optional<v1::BuildStats>& builds, absl::Time wall_start,
            JobStore* store, std::string_view how) {
  if (!status.ok() && job->cancelled()) status = job->cancel_status();
  const SettingCounts counts =
      status.ok() ? CountSettings(result) : SettingCounts();
  if (auto* a = std::get_if<v1::AutotuneResult>(&result); a && builds) {
    *a->mutable_stats()->mutable_builds() = *builds;
  }
  job->Finish(status, std::move(result));
  // The job's runs, metered (the sim's clock is wall time on kRealTime).
  const double device_s = context.device_seconds();
  const double wall_s = absl::ToDoubleSeconds(absl::Now() - wall_start);
  if (job->kind() == v1::JOB_KIND_MEASURE && status.ok()) {
    job->SetStats(MeasureStats(counts, device_s, wall_s, builds));
  }
  SaveJob(store, *job).IgnoreError();
  spdlog::info(
      "job {} ended: client={} kind={} shapes={} settings_timed={}/{} "
      "device_time={:.3f}s wall={:.3f}s outcome={}{}",
      job->id(), LogSafe(job->client()), KindName(job->kind()),
      context.shapes_total(), counts.timed, counts.settings, device_s, wall_s,
      status.ok() ? std::string("OK")
                  : LogSafe(status.ToString(), kLogSafeLongBytes),
      std::string(how));
}

}  // namespace irontune
