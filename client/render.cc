#include "client/render.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/profile.h"
#include "common/value.h"

namespace irontune {
namespace {

// A table of display-aligned columns; the last column is not padded.
class Table {
 public:
  void Row(std::vector<std::string> cells) {
    rows_.push_back(std::move(cells));
  }

  std::string Render(std::string_view indent = "") const {
    std::vector<int> widths;
    for (const auto& row : rows_) {
      if (widths.size() < row.size()) widths.resize(row.size(), 0);
      for (size_t i = 0; i < row.size(); ++i) {
        widths[i] = std::max(widths[i], DisplayWidth(row[i]));
      }
    }
    std::string out;
    for (const auto& row : rows_) {
      std::string line(indent);
      for (size_t i = 0; i < row.size(); ++i) {
        line += row[i];
        if (i + 1 < row.size()) {
          line.append(widths[i] - DisplayWidth(row[i]) + 2, ' ');
        }
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      absl::StrAppend(&out, line, "\n");
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

const v1::Field* FindField(const Fields& fields, std::string_view name) {
  for (const v1::Field& f : fields) {
    if (f.name() == name) return &f;
  }
  return nullptr;
}

std::string Ago(int64_t then_ms, int64_t now_ms) {
  if (then_ms <= 0) return "-";
  return absl::StrCat(FormatDuration((now_ms - then_ms) / 1000.0), " ago");
}

std::string Bytes(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  if (bytes < (1 << 20)) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  if (bytes < (1 << 30)) {
    return absl::StrFormat("%.1f MiB", bytes / 1048576.0);
  }
  return absl::StrFormat("%.1f GiB", bytes / 1073741824.0);
}

std::string ShapesText(const v1::JobSummary& job) {
  if (job.shapes_total() == 0) return "-";
  return absl::StrCat(job.shapes_done(), "/", job.shapes_total());
}

constexpr std::pair<v1::JobState, std::string_view> kJobStateNames[] = {
    {v1::JOB_STATE_QUEUED, "queued"},
    {v1::JOB_STATE_RUNNING, "running"},
    {v1::JOB_STATE_SUCCEEDED, "succeeded"},
    {v1::JOB_STATE_FAILED, "failed"},
    {v1::JOB_STATE_CANCELLED, "cancelled"},
    {v1::JOB_STATE_INTERRUPTED, "interrupted"},
};

constexpr std::pair<v1::JobKind, std::string_view> kJobKindNames[] = {
    {v1::JOB_KIND_AUTOTUNE, "autotune"},
    {v1::JOB_KIND_MEASURE, "measure"},
};

// `value`'s name in `names`; "unknown" if it has none.
template <typename Enum, size_t N>
std::string_view NameIn(const std::pair<Enum, std::string_view> (&names)[N],
                        Enum value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "unknown";
}

// Cuts `text` to `width` display columns, marking the cut with "…".
std::string Truncate(std::string_view text, int width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  std::string out;
  int columns = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    bool starts = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts && ++columns > width - 1) break;
    out += text[i];
  }
  return out + "…";
}

}  // namespace

int DisplayWidth(std::string_view text) {
  int n = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string FieldsText(const Fields& fields) {
  if (fields.empty()) return "(none)";
  return absl::StrJoin(fields, " ", [](std::string* out, const v1::Field& f) {
    absl::StrAppend(out, f.name(), "=", ValueToString(f.value()));
  });
}

std::string EntryName(std::string_view operator_class, const Fields& dims) {
  std::string out(operator_class);
  for (const v1::Field& f : dims) {
    absl::StrAppend(&out, " ", f.name(), "=", ValueToString(f.value()));
  }
  return out;
}

std::string TunablesChange(const Fields& before, const Fields& after) {
  std::vector<std::string> parts;
  for (const v1::Field& a : after) {
    const v1::Field* b = FindField(before, a.name());
    if (b != nullptr && ValuesEqual(b->value(), a.value())) continue;
    parts.push_back(absl::StrCat(a.name(), " ",
                                 b ? ValueToString(b->value()) : "-", " → ",
                                 ValueToString(a.value())));
  }
  for (const v1::Field& b : before) {
    if (FindField(after, b.name()) != nullptr) continue;
    parts.push_back(
        absl::StrCat(b.name(), " ", ValueToString(b.value()), " → -"));
  }
  if (parts.empty()) return "(same)";
  return absl::StrJoin(parts, ", ");
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  if (seconds < 60) {
    return seconds < 10 ? absl::StrFormat("%.1f s", seconds)
                        : absl::StrFormat("%.0f s", seconds);
  }
  int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

std::string FormatGain(double gain_us, double noise_us) {
  return absl::StrFormat("%+.2f ± %.2f", gain_us, noise_us);
}

std::string RenderDiffTable(const v1::ProfileDiff& diff) {
  if (diff.added().empty() && diff.changed().empty() &&
      diff.removed().empty()) {
    return absl::StrCat("no changes: all ", diff.kept_size(),
                        " entries kept\n");
  }
  Table table;
  table.Row({"", "entry", "old → new", "gain µs (+ is faster)"});
  for (const v1::EntryChange& c : diff.changed()) {
    table.Row({"~", EntryName(c.operator_class(), c.dims()),
               TunablesChange(c.old_tunables(), c.new_tunables()),
               c.has_gain() ? FormatGain(c.gain_us(), c.noise_us()) : "-"});
  }
  for (int i = 0; i < diff.added_size(); ++i) {
    const v1::ProfileEntry& e = diff.added(i);
    const bool gain =
        i < diff.added_gains_size() && diff.added_gains(i).has_gain();
    table.Row({"+", EntryName(e.operator_class(), e.dims()),
               absl::StrCat("(new) ", FieldsText(e.tunables())),
               gain ? FormatGain(diff.added_gains(i).gain_us(),
                                 diff.added_gains(i).noise_us())
                    : "-"});
  }
  for (const v1::ProfileEntry& e : diff.removed()) {
    table.Row({"-", EntryName(e.operator_class(), e.dims()),
               absl::StrCat(FieldsText(e.tunables()), " (removed)"), "-"});
  }
  return table.Render();
}

namespace {

// "LABEL: |gain| ± noise µs faster (or slower) per call than THAN", a line.
void AppendGain(std::string* out, const char* label, double gain_us,
                double noise_us, const char* than) {
  absl::StrAppendFormat(out, "%s: %.2f ± %.2f µs %s per call than %s\n", label,
                        std::fabs(gain_us), noise_us,
                        gain_us >= 0 ? "faster" : "slower", than);
}

}  // namespace

std::string RenderDiffSummary(const v1::ProfileDiff& diff,
                              const v1::AutotuneStats* stats) {
  std::string out = absl::StrFormat(
      "%d changed, %d added, %d removed, %d kept\n", diff.changed_size(),
      diff.added_size(), diff.removed_size(), diff.kept_size());
  if (diff.has_model_gain()) {
    AppendGain(&out, "model", diff.model_gain_us(), diff.model_noise_us(),
               "the submitted profile (weighted over its calls)");
  }
  if (diff.has_recording_gain()) {
    AppendGain(&out, "per recording", diff.recording_gain_us(),
               diff.recording_noise_us(), "the recorded settings");
  }
  if (diff.untuned_size() > 0) {
    absl::StrAppendFormat(&out,
                          "%d %s left untuned, their entries kept as "
                          "submitted:\n",
                          diff.untuned_size(),
                          diff.untuned_size() == 1 ? "shape" : "shapes");
    for (const v1::UntunedShape& u : diff.untuned()) {
      absl::StrAppendFormat(&out, "  %s: %s (planned %s on the NPU)\n",
                            u.shape(), u.reason(),
                            FormatDuration(u.planned_device_seconds()));
    }
  }
  if (stats != nullptr) {
    absl::StrAppendFormat(
        &out,
        "%d shapes, %d settings timed, %d from the cache; %s on the NPU, "
        "%s wall",
        stats->shapes(), stats->settings_timed(), stats->cache_hits(),
        FormatDuration(stats->device_seconds()),
        FormatDuration(stats->wall_seconds()));
    if (stats->build_wait_seconds() >= 0.1) {  // what rounds to 0.0 s is none
      absl::StrAppend(&out, " (", FormatDuration(stats->build_wait_seconds()),
                      " of it waiting for builds)");
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string RenderProgress(const v1::ShapeProgress& p, ProgressStyle style,
                           int width) {
  const uint32_t total = std::max<uint32_t>(p.total(), 1);
  const uint32_t done = std::min(p.index(), total);
  std::string best;
  if (p.has_best()) {
    best = absl::StrFormat("best %s: %+.2f ± %.2f µs", FieldsText(p.best()),
                           p.best_delta_us(), p.best_noise_us());
  }
  std::string eta;
  if (p.eta_seconds() > 0)
    eta = absl::StrCat("eta ", FormatDuration(p.eta_seconds()));
  if (style == ProgressStyle::kLines) {
    if (p.planned_device_seconds() > 0) {
      absl::StrAppendFormat(&eta, "%sNPU %s used, about %s to go",
                            eta.empty() ? "" : " (",
                            FormatDuration(p.used_device_seconds()),
                            FormatDuration(p.remaining_device_seconds()));
      if (p.eta_seconds() > 0) absl::StrAppend(&eta, ")");
    }
    std::string line = absl::StrFormat(
        "shape %d/%d %s: %d settings timed, %d from the cache", p.index() + 1,
        p.total(), p.shape(), p.settings_timed(), p.cache_hits());
    if (!best.empty()) absl::StrAppend(&line, ", ", best);
    if (!eta.empty()) absl::StrAppend(&line, ", ", eta);
    return line;
  }
  constexpr int kBarWidth = 20;
  const int filled = static_cast<int>(kBarWidth * done / total);
  std::string line = absl::StrFormat(
      "[%s%s] %d/%d %s  %d timed %d cached", std::string(filled, '#'),
      std::string(kBarWidth - filled, '.'), p.index() + 1, p.total(), p.shape(),
      p.settings_timed(), p.cache_hits());
  if (p.has_best()) {
    absl::StrAppendFormat(&line, "  best %+.2f ± %.2f µs", p.best_delta_us(),
                          p.best_noise_us());
  }
  if (!eta.empty()) absl::StrAppend(&line, "  ", eta);
  return width > 1 ? Truncate(line, width) : line;
}

std::string_view JobStateName(v1::JobState state) {
  return NameIn(kJobStateNames, state);
}

std::string_view JobKindName(v1::JobKind kind) {
  return NameIn(kJobKindNames, kind);
}

std::string_view PriorityName(v1::Priority priority) {
  return priority == v1::PRIORITY_BATCH ? "batch" : "interactive";
}

std::string RenderStatus(const v1::StatusResponse& s, int64_t now_unix_ms) {
  std::string out = absl::StrFormat("irontuned %s, up %s\n", s.version(),
                                    FormatDuration(s.uptime_seconds()));
  Table table;
  table.Row({"device",
             absl::StrFormat("%s (%s, %s), power mode %s", s.device(),
                             s.platform(), s.generation(), s.power_mode())});
  table.Row({"", absl::StrFormat("%d columns, %d MHz, %d hardware contexts",
                                 s.columns(), s.core_mhz(), s.hw_contexts())});
  table.Row({"state", s.device_state().empty() ? "-" : s.device_state()});
  if (s.has_running()) {
    const v1::JobSummary& r = s.running();
    table.Row({"running",
               absl::StrFormat("%s %s for %s (%s): %s shapes, started %s",
                               r.job_id(), JobKindName(r.kind()), r.client(),
                               PriorityName(r.priority()), ShapesText(r),
                               Ago(r.started_unix_ms(), now_unix_ms))});
  } else {
    table.Row({"running", "nothing"});
  }
  table.Row({"queue", s.queue().empty()
                          ? std::string("empty")
                          : absl::StrCat(s.queue_size(), " job",
                                         s.queue_size() == 1 ? "" : "s")});
  if (s.has_cache()) {
    const v1::CacheSummary& c = s.cache();
    table.Row(
        {"cache", absl::StrFormat("%d rows, %s, hit rate %.1f%% (%d hits, %d "
                                  "misses)",
                                  c.rows(), Bytes(c.bytes()),
                                  100 * c.hit_rate(), c.hits(), c.misses())});
  }
  out += table.Render();
  if (!s.queue().empty()) {
    Table queue;
    for (int i = 0; i < s.queue_size(); ++i) {
      const v1::JobSummary& j = s.queue(i);
      queue.Row(
          {absl::StrCat(i + 1, "."), j.job_id(),
           std::string(JobKindName(j.kind())), j.client(),
           std::string(PriorityName(j.priority())),
           absl::StrCat("queued ", Ago(j.submitted_unix_ms(), now_unix_ms))});
    }
    out += queue.Render("  ");
  }
  return out;
}

std::string RenderJobs(
    const google::protobuf::RepeatedPtrField<v1::JobSummary>& jobs,
    int64_t now_unix_ms) {
  if (jobs.empty()) return "no jobs\n";
  Table table;
  table.Row({"JOB", "KIND", "STATE", "CLIENT", "PRIORITY", "SHAPES",
             "SUBMITTED", "ERROR"});
  for (const v1::JobSummary& j : jobs) {
    table.Row({j.job_id(), std::string(JobKindName(j.kind())),
               std::string(JobStateName(j.state())),
               j.client().empty() ? "-" : j.client(),
               std::string(PriorityName(j.priority())), ShapesText(j),
               Ago(j.submitted_unix_ms(), now_unix_ms), j.error()});
  }
  return table.Render();
}

std::string RenderJob(const v1::JobSummary& j, int64_t now_unix_ms) {
  Table table;
  table.Row({"job", j.job_id()});
  table.Row({"kind", std::string(JobKindName(j.kind()))});
  table.Row({"state", std::string(JobStateName(j.state()))});
  table.Row({"client", j.client().empty() ? "-" : j.client()});
  table.Row({"priority", std::string(PriorityName(j.priority()))});
  table.Row({"submitted", Ago(j.submitted_unix_ms(), now_unix_ms)});
  table.Row({"started", Ago(j.started_unix_ms(), now_unix_ms)});
  table.Row({"ended", Ago(j.ended_unix_ms(), now_unix_ms)});
  table.Row({"shapes", ShapesText(j)});
  if (j.detached()) table.Row({"detached", "yes"});
  if (!j.error().empty()) table.Row({"error", j.error()});
  return table.Render();
}

std::string RenderMeasureResult(const v1::MeasureResult& result) {
  Table table;
  table.Row({"#", "setting", "t_step µs", "vs recorded µs", "cached", "note"});
  for (int i = 0; i < result.settings_size(); ++i) {
    const v1::SettingMeasurement& s = result.settings(i);
    std::string t_step = "-";
    if (s.has_measurement()) {
      t_step = s.measurement().has_t_step_noise_us()
                   ? absl::StrFormat("%.2f ± %.2f", s.measurement().t_step_us(),
                                     s.measurement().t_step_noise_us())
                   : absl::StrFormat("%.2f", s.measurement().t_step_us());
    }
    std::string delta =
        s.has_delta()
            ? absl::StrFormat("%+.2f ± %.2f", s.delta_us(), s.noise_us())
            : std::string("(recorded)");
    std::string note;
    if (!s.refused().empty()) {
      note = absl::StrCat("refused: ", s.refused());
    } else if (s.has_measurement() && s.measurement().discarded_rounds() > 0) {
      note =
          absl::StrCat(s.measurement().discarded_rounds(), " rounds discarded");
    }
    table.Row({absl::StrCat(i), FieldsText(s.setting().tunables()), t_step,
               delta, s.cached() ? "yes" : "no", note});
  }
  return table.Render();
}

namespace {

// The moved entry `e` of `diff`: its mark (~ + -) and name.
std::pair<std::string, std::string> MovedEntry(const v1::ProfileDiff& diff,
                                               const CheckedEntry& e) {
  switch (e.kind) {
    case CheckedEntry::Kind::kChanged: {
      const v1::EntryChange& c = diff.changed(e.index);
      return {"~", EntryName(c.operator_class(), c.dims())};
    }
    case CheckedEntry::Kind::kAdded: {
      const v1::ProfileEntry& a = diff.added(e.index);
      return {"+", EntryName(a.operator_class(), a.dims())};
    }
    case CheckedEntry::Kind::kRemoved:
      break;
  }
  const v1::ProfileEntry& r = diff.removed(e.index);
  return {"-", EntryName(r.operator_class(), r.dims())};
}

}  // namespace

std::string RenderCheck(const v1::ProfileDiff& diff,
                        const CheckVerdict& verdict,
                        const CheckMinGain& min_gain) {
  if (verdict.entries.empty()) return "";
  if (!verdict.weighed) {
    return absl::StrCat("--check: ", verdict.fallback,
                        "; every moved entry counts, whatever "
                        "--check-min-gain\n");
  }
  int counted = 0;
  Table table;
  for (const CheckedEntry& e : verdict.entries) {
    counted += e.counts ? 1 : 0;
    const auto [mark, name] = MovedEntry(diff, e);
    table.Row({e.counts ? "counts" : "below", mark, name,
               e.has_gain ? absl::StrCat(FormatGain(e.gain_us, e.noise_us),
                                         " µs per pass")
                          : "gain unknown"});
  }
  std::string base =
      min_gain.unit == CheckMinGain::Unit::kShare
          ? absl::StrFormat("%s of the model's %.2f µs per pass: %.2f µs",
                            CheckMinGainText(min_gain), verdict.model_time_us,
                            verdict.threshold_us)
          : CheckMinGainText(min_gain);
  return absl::StrFormat(
             "--check: %d of %d moved %s counts (weighted gain less %g "
             "noises above %s per pass)\n",
             counted, static_cast<int>(verdict.entries.size()),
             verdict.entries.size() == 1 ? "entry" : "entries", kCheckGainZ,
             base) +
         table.Render("  ");
}

std::string CheckJson(const v1::ProfileDiff& diff, const CheckVerdict& verdict,
                      const CheckMinGain& min_gain) {
  nlohmann::json doc;
  doc["min_gain"] = CheckMinGainText(min_gain);
  doc["weighed"] = verdict.weighed;
  doc["fallback"] = verdict.fallback;
  doc["threshold_us"] = verdict.threshold_us;
  doc["model_time_us"] = verdict.model_time_us;
  doc["fails"] = verdict.fails;
  nlohmann::json entries = nlohmann::json::array();
  for (const CheckedEntry& e : verdict.entries) {
    const auto [mark, name] = MovedEntry(diff, e);
    entries.push_back({{"kind", mark == "~"   ? "changed"
                                : mark == "+" ? "added"
                                              : "removed"},
                       {"entry", name},
                       {"has_gain", e.has_gain},
                       {"weighted_gain_us", e.gain_us},
                       {"weighted_noise_us", e.noise_us},
                       {"counts", e.counts}});
  }
  doc["entries"] = std::move(entries);
  return doc.dump();
}

std::string MessageJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options)
           .ok()) {
    return "{}";
  }
  return out;
}

std::string AutotuneResultJson(std::string_view job_id,
                               const v1::AutotuneResult& result, bool changed,
                               const std::string& check) {
  nlohmann::json doc;
  doc["job_id"] = std::string(job_id);
  doc["changed"] = changed;
  doc["profile"] = nlohmann::json::parse(Profile(result.profile()).ToJson(),
                                         nullptr, /*allow_exceptions=*/false);
  doc["diff"] = nlohmann::json::parse(MessageJson(result.diff()), nullptr,
                                      /*allow_exceptions=*/false);
  doc["stats"] = nlohmann::json::parse(MessageJson(result.stats()), nullptr,
                                       /*allow_exceptions=*/false);
  if (!check.empty()) {
    doc["check"] =
        nlohmann::json::parse(check, nullptr, /*allow_exceptions=*/false);
  }
  return doc.dump(2) + "\n";
}

}  // namespace irontune
