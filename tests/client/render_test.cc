#include "client/render.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/value.h"

namespace irontune {
namespace {

v1::Field F(const std::string& name, v1::Value v) {
  v1::Field f;
  f.set_name(name);
  *f.mutable_value() = std::move(v);
  return f;
}

v1::ProfileDiff SampleDiff() {
  v1::ProfileDiff diff;
  v1::EntryChange* c = diff.add_changed();
  c->set_operator_class("GEMM");
  *c->add_dims() = F("M", IntValue(256));
  *c->add_dims() = F("K", IntValue(2048));
  *c->add_old_tunables() = F("tile_m", IntValue(64));
  *c->add_old_tunables() = F("tile_n", IntValue(64));
  *c->add_new_tunables() = F("tile_m", IntValue(128));
  *c->add_new_tunables() = F("tile_n", IntValue(64));
  c->set_has_gain(true);
  c->set_gain_us(12.3);
  c->set_noise_us(0.4);
  v1::ProfileEntry* a = diff.add_added();
  a->set_operator_class("GEMV");
  *a->add_dims() = F("M", IntValue(2048));
  *a->add_tunables() = F("tile_size_output", IntValue(256));
  v1::ProfileEntry* r = diff.add_removed();
  r->set_operator_class("SiLU");
  *r->add_dims() = F("size", IntValue(8192));
  *r->add_tunables() = F("tile_size", IntValue(512));
  diff.add_kept()->set_operator_class("RMSNorm");
  diff.set_has_model_gain(true);
  diff.set_model_gain_us(45.2);
  diff.set_model_noise_us(1.1);
  return diff;
}

TEST_CASE(
    "the diff table shows each entry, the tunables that moved and the gain") {
  std::string table = RenderDiffTable(SampleDiff());
  CHECK_THAT(table, Catch::Contains("~  GEMM M=256 K=2048"));
  CHECK_THAT(table, Catch::Contains("tile_m 64 → 128"));
  CHECK_THAT(table, Catch::Contains("+12.30 ± 0.40"));
  CHECK_THAT(table, !Catch::Contains("tile_n 64"));  // unchanged: not shown
  CHECK_THAT(table, Catch::Contains("+  GEMV M=2048"));
  CHECK_THAT(table, Catch::Contains("(new) tile_size_output=256"));
  CHECK_THAT(table, Catch::Contains("-  SiLU size=8192"));
  // Columns line up in display width, whatever the UTF-8 arrows cost.
  std::vector<size_t> gain_columns;
  size_t start = 0;
  while (start < table.size()) {
    size_t end = table.find('\n', start);
    std::string line = table.substr(start, end - start);
    if (line.rfind("~", 0) == 0 || line.rfind(" ", 0) == 0) {
      size_t at = line.find(line[0] == '~' ? "+12.30" : "gain");
      gain_columns.push_back(DisplayWidth(line.substr(0, at)));
    }
    start = end + 1;
  }
  REQUIRE(gain_columns.size() == 2);
  CHECK(gain_columns[0] == gain_columns[1]);
}

TEST_CASE("an empty diff says nothing changed") {
  v1::ProfileDiff diff;
  diff.add_kept();
  diff.add_kept();
  CHECK(RenderDiffTable(diff) == "no changes: all 2 entries kept\n");
}

TEST_CASE("the summary counts entries and gives the model's gain and stats") {
  v1::AutotuneStats stats;
  stats.set_shapes(12);
  stats.set_settings_timed(340);
  stats.set_cache_hits(120);
  stats.set_device_seconds(31.2);
  stats.set_wall_seconds(125);
  std::string s = RenderDiffSummary(SampleDiff(), &stats);
  CHECK_THAT(s, Catch::Contains("1 changed, 1 added, 1 removed, 1 kept"));
  CHECK_THAT(s, Catch::Contains("model: 45.20 ± 1.10 µs faster per call"));
  CHECK_THAT(
      s, Catch::Contains("12 shapes, 340 settings timed, 120 from the cache"));
  CHECK_THAT(s, Catch::Contains("2m05s wall\n"));
  CHECK_THAT(s, !Catch::Contains("waiting for builds"));
  stats.set_build_wait_seconds(0.03);  // rounds to none
  CHECK_THAT(RenderDiffSummary(SampleDiff(), &stats),
             !Catch::Contains("waiting for builds"));
  stats.set_build_wait_seconds(61);
  CHECK_THAT(RenderDiffSummary(SampleDiff(), &stats),
             Catch::Contains("2m05s wall (1m01s of it waiting for builds)\n"));
  v1::ProfileDiff slower;
  slower.set_has_model_gain(true);
  slower.set_model_gain_us(-3);
  CHECK_THAT(RenderDiffSummary(slower, nullptr),
             Catch::Contains("3.00 ± 0.00 µs slower"));
}

TEST_CASE("durations") {
  CHECK(FormatDuration(3.25) == "3.2 s");
  CHECK(FormatDuration(45) == "45 s");
  CHECK(FormatDuration(200) == "3m20s");
  CHECK(FormatDuration(7500) == "2h05m");
  CHECK(FormatDuration(-1) == "-");
}

TEST_CASE("progress: a bar on a terminal, a sentence otherwise") {
  v1::ShapeProgress p;
  p.set_index(5);
  p.set_total(10);
  p.set_shape("GEMM M=256 K=2048 N=2048");
  p.set_settings_timed(41);
  p.set_cache_hits(12);
  p.set_has_best(true);
  *p.add_best() = F("tile_m", IntValue(128));
  p.set_best_delta_us(-3.2);
  p.set_best_noise_us(0.4);
  p.set_eta_seconds(80);
  std::string bar = RenderProgress(p, ProgressStyle::kBar, 200);
  CHECK(bar.rfind("[##########..........] 6/10 GEMM M=256 K=2048 N=2048", 0) ==
        0);
  CHECK_THAT(bar, Catch::Contains("best -3.20 ± 0.40 µs"));
  CHECK_THAT(bar, Catch::Contains("eta 1m20s"));
  CHECK(bar.find('\n') == std::string::npos);
  CHECK(DisplayWidth(RenderProgress(p, ProgressStyle::kBar, 40)) == 40);
  std::string line = RenderProgress(p, ProgressStyle::kLines, 40);
  CHECK(line ==
        "shape 6/10 GEMM M=256 K=2048 N=2048: 41 settings timed, 12 from the "
        "cache, best tile_m=128: -3.20 ± 0.40 µs, eta 1m20s");
}

TEST_CASE("progress: the NPU time used and to go, beside the eta") {
  v1::ShapeProgress p;
  p.set_index(1);
  p.set_total(3);
  p.set_shape("GEMV M=128256 K=2048");
  p.set_planned_device_seconds(600);
  p.set_used_device_seconds(75);
  p.set_remaining_device_seconds(192);
  p.set_eta_seconds(200);
  const std::string line = RenderProgress(p, ProgressStyle::kLines, 0);
  CHECK_THAT(line,
             Catch::EndsWith("eta 3m20s (NPU 1m15s used, about 3m12s to go)"));
  CHECK_THAT(RenderProgress(p, ProgressStyle::kBar, 200),
             Catch::EndsWith("eta 3m20s"));
  // The end of the job: nothing to go, no eta.
  p.set_remaining_device_seconds(0);
  p.set_eta_seconds(0);
  CHECK_THAT(RenderProgress(p, ProgressStyle::kLines, 0),
             Catch::EndsWith("NPU 1m15s used, about 0.0 s to go"));
}

TEST_CASE("the summary lists the shapes the budget left untuned") {
  v1::ProfileDiff diff;
  v1::UntunedShape* u = diff.add_untuned();
  u->set_shape("GEMM M=128 K=128 N=128");
  u->set_reason("the budget of 90.0 s of device time was spent (95.2 s used)");
  u->set_planned_device_seconds(42);
  const std::string out = RenderDiffSummary(diff, nullptr);
  CHECK_THAT(out, Catch::Contains("1 shape left untuned, their entries kept "
                                  "as submitted:\n  GEMM M=128 K=128 N=128: "
                                  "the budget of 90.0 s"));
  CHECK_THAT(out, Catch::Contains("(planned 42 s on the NPU)"));
  CHECK_THAT(RenderDiffSummary(v1::ProfileDiff(), nullptr),
             !Catch::Contains("untuned"));
}

TEST_CASE(
    "the status view shows the device, the running job, queue and cache") {
  v1::StatusResponse s;
  s.set_version("0.1.0");
  s.set_device("sim:npu2");
  s.set_platform("NPU Strix");
  s.set_generation("npu2");
  s.set_power_mode("performance");
  s.set_columns(8);
  s.set_device_state("running");
  s.set_uptime_seconds(3725);
  v1::JobSummary* r = s.mutable_running();
  r->set_job_id("job-7");
  r->set_kind(v1::JOB_KIND_AUTOTUNE);
  r->set_client("alice");
  r->set_shapes_done(3);
  r->set_shapes_total(12);
  r->set_started_unix_ms(1000);
  v1::JobSummary* q = s.add_queue();
  q->set_job_id("job-8");
  q->set_priority(v1::PRIORITY_BATCH);
  q->set_submitted_unix_ms(61000);
  s.mutable_cache()->set_rows(1234);
  s.mutable_cache()->set_hit_rate(0.78);
  std::string view = RenderStatus(s, 121000);
  CHECK_THAT(view, Catch::Contains("irontuned 0.1.0, up 1h02m"));
  CHECK_THAT(view, Catch::Contains(
                       "sim:npu2 (NPU Strix, npu2), power mode performance"));
  CHECK_THAT(view, Catch::Contains("job-7 autotune for alice (interactive): "
                                   "3/12 shapes, started 2m00s ago"));
  CHECK_THAT(view, Catch::Contains("queue    1 job"));
  CHECK_THAT(view, Catch::Contains("job-8"));
  CHECK_THAT(view, Catch::Contains("batch"));
  CHECK_THAT(view, Catch::Contains("hit rate 78.0%"));
  v1::StatusResponse idle;
  CHECK_THAT(RenderStatus(idle, 0), Catch::Contains("running  nothing"));
}

TEST_CASE(
    "jobs render as a table; measurements as rows against the recorded one") {
  google::protobuf::RepeatedPtrField<v1::JobSummary> jobs;
  CHECK(RenderJobs(jobs, 0) == "no jobs\n");
  v1::JobSummary* j = jobs.Add();
  j->set_job_id("job-1");
  j->set_state(v1::JOB_STATE_FAILED);
  j->set_error("boom");
  std::string table = RenderJobs(jobs, 0);
  CHECK_THAT(table, Catch::Contains("JOB"));
  CHECK_THAT(table, Catch::Contains("job-1"));
  CHECK_THAT(table, Catch::Contains("failed"));
  CHECK_THAT(table, Catch::Contains("boom"));

  v1::MeasureResult m;
  v1::SettingMeasurement* rec = m.add_settings();
  *rec->mutable_setting()->add_tunables() = F("tile_m", IntValue(64));
  rec->mutable_measurement()->set_t_step_us(100);
  v1::SettingMeasurement* other = m.add_settings();
  *other->mutable_setting()->add_tunables() = F("tile_m", IntValue(128));
  other->set_has_delta(true);
  other->set_delta_us(-1.5);
  other->set_noise_us(0.2);
  other->set_refused("output differs");
  std::string rows = RenderMeasureResult(m);
  CHECK_THAT(rows, Catch::Contains("(recorded)"));
  CHECK_THAT(rows, Catch::Contains("100.00"));
  CHECK_THAT(rows, Catch::Contains("-1.50 ± 0.20"));
  CHECK_THAT(rows, Catch::Contains("refused: output differs"));
}

TEST_CASE("the JSON result holds the profile in IRON's format and the diff") {
  v1::AutotuneResult r;
  v1::ProfileEntry* e = r.mutable_profile()->add_entries();
  e->set_operator_class("GEMM");
  *e->add_dims() = F("M", IntValue(256));
  *e->add_tunables() = F("tile_m", IntValue(128));
  *r.mutable_diff() = SampleDiff();
  nlohmann::json doc =
      nlohmann::json::parse(AutotuneResultJson("job-1", r, true));
  CHECK(doc["job_id"] == "job-1");
  CHECK(doc["changed"] == true);
  CHECK(doc["profile"]["entries"][0]["operator"] == "GEMM");
  CHECK(doc["profile"]["entries"][0]["tile_m"] == 128);
  CHECK(doc["diff"]["changed"][0]["gain_us"] == 12.3);
}

}  // namespace
}  // namespace irontune
