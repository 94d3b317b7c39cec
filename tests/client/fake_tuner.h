// A hand-written irontune.v1.Tuner for the client's tests, served
// in-process on a unix socket in a temporary directory. Its answers are
// canned but follow the request:
//  - Autotune tunes the recording's first tunable shape by moving its first
//    tunable with a choice to another value of its domain, keeps the rest of
//    the given profile, and diffs against it (so resubmitting the tuned
//    profile changes nothing), each changed and added entry's gain 12.5 +-
//    0.25 us a step. timing.rounds == 1 is refused with
//    INVALID_ARGUMENT naming the field. A detached request sends its job id
//    and waits for the client to leave.
//  - Measure times the recorded setting and each given one.
//  - Jobs "job-1" (a succeeded autotune of an empty profile), "job-m" (a
//    measurement) and "job-f" (failed) exist; others are NOT_FOUND.
//  - Autotune from client "weighted G N T" sends each changed and added
//    entry's gain weighted over the model's calls as G +- N us a pass, and
//    the model's time T us a pass; from any other client neither (as a
//    daemon older than those fields).
//  - Autotune from client "held" is UNAVAILABLE (the NPU held elsewhere);
//    Watch of "job-slow" waits for the client to give up.
//  - ExportCache sends two lines; ImportCache counts the lines it gets.
//  - GetStatus records the "authorization" metadata of each call it gets
//    ("" for a call without).
#ifndef IRONTUNE_TESTS_CLIENT_FAKE_TUNER_H_
#define IRONTUNE_TESTS_CLIENT_FAKE_TUNER_H_

#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/render.h"
#include "common/profile.h"
#include "common/shape.h"
#include "irontune/v1/tuner.grpc.pb.h"

namespace irontune {

class FakeTuner final : public v1::Tuner::Service {
 public:
  std::atomic<bool> detached_client_left{false};
  std::atomic<int> imported_lines{0};

  // The "authorization" metadata of each GetStatus so far, in order.
  std::vector<std::string> status_authorizations() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_authorizations_;
  }

  // The tuned profile for `calls` starting from `given`, with its diff.
  static v1::AutotuneResult Tune(const v1::Calls& calls, const Profile& given) {
    v1::ProfileEntry entry;
    for (const ShapeSummary& shape : SummarizeShapes(calls)) {
      const v1::Operator& op = calls.operators(shape.operators[0]);
      int choice = -1;
      for (int i = 0; i < op.tunables_size() && choice < 0; ++i) {
        if (op.tunables(i).domain_size() > 1) choice = i;
      }
      if (choice < 0) continue;
      entry.set_operator_class(shape.class_name);
      for (const v1::Field& d : shape.dims) *entry.add_dims() = d;
      for (int i = 0; i < op.tunables_size(); ++i) {
        const v1::Tunable& t = op.tunables(i);
        v1::Field* f = entry.add_tunables();
        f->set_name(t.name());
        *f->mutable_value() = t.value();
        if (i == choice) {
          for (const v1::Value& v : t.domain()) {
            if (v.SerializeAsString() != t.value().SerializeAsString()) {
              *f->mutable_value() = v;
              break;
            }
          }
        }
      }
      break;
    }
    if (entry.operator_class().empty()) {  // no recording: a canned entry
      entry.set_operator_class("GEMM");
      entry.add_dims()->set_name("M");
      entry.mutable_dims(0)->mutable_value()->set_int_value(256);
      entry.add_tunables()->set_name("tile_m");
      entry.mutable_tunables(0)->mutable_value()->set_int_value(128);
    }
    const std::string identity =
        EntryName(entry.operator_class(), entry.dims());
    Profile tuned;
    for (const v1::ProfileEntry& e : given.proto().entries()) {
      if (EntryName(e.operator_class(), e.dims()) != identity) tuned.Add(e);
    }
    tuned.Add(entry);
    v1::AutotuneResult result;
    *result.mutable_profile() = tuned.proto();
    *result.mutable_diff() = DiffProfiles(given, tuned);
    for (v1::EntryChange& c : *result.mutable_diff()->mutable_changed()) {
      c.set_has_gain(true);
      c.set_gain_us(12.5);
      c.set_noise_us(0.25);
    }
    for (int i = 0; i < result.diff().added_size(); ++i) {
      v1::EntryGain* g = result.mutable_diff()->add_added_gains();
      g->set_has_gain(true);
      g->set_gain_us(12.5);
      g->set_noise_us(0.25);
    }
    result.mutable_diff()->set_has_model_gain(true);
    result.mutable_diff()->set_model_gain_us(40.0);
    result.mutable_diff()->set_model_noise_us(1.5);
    result.mutable_stats()->set_shapes(3);
    result.mutable_stats()->set_settings_timed(42);
    result.mutable_stats()->set_cache_hits(7);
    result.mutable_stats()->set_device_seconds(12);
    result.mutable_stats()->set_wall_seconds(15);
    return result;
  }

  grpc::Status Autotune(
      grpc::ServerContext* context, const v1::AutotuneRequest* request,
      grpc::ServerWriter<v1::AutotuneEvent>* writer) override {
    if (request->timing().rounds() == 1) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "timing.rounds: 1 round cannot give a noise; use "
                          "0 (default 8) or at least 2");
    }
    if (request->client() == "held") {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "the NPU is held by another process");
    }
    v1::AutotuneEvent e;
    e.set_job_id(request->detach() ? "job-9" : "job-1");
    e.mutable_queued()->set_position(1);
    writer->Write(e);
    if (request->detach()) {
      for (int i = 0; i < 500 && !context->IsCancelled(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      detached_client_left = context->IsCancelled();
      return grpc::Status::OK;
    }
    Stream(request->calls(), Profile(request->profile()), writer,
           request->client());
    return grpc::Status::OK;
  }

  grpc::Status Watch(grpc::ServerContext* context,
                     const v1::WatchRequest* request,
                     grpc::ServerWriter<v1::AutotuneEvent>* writer) override {
    if (request->job_id() == "job-slow") {  // never finishes on its own
      for (int i = 0; i < 500 && !context->IsCancelled(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return grpc::Status::OK;
    }
    if (request->job_id() != "job-1") return NoJob(request->job_id());
    Stream(v1::Calls(), Profile(), writer);
    return grpc::Status::OK;
  }

  grpc::Status Measure(grpc::ServerContext*, const v1::MeasureRequest* request,
                       grpc::ServerWriter<v1::MeasureEvent>* writer) override {
    v1::MeasureEvent e;
    e.set_job_id("job-m");
    e.mutable_started();
    writer->Write(e);
    v1::MeasureEvent r;
    r.set_job_id("job-m");
    *r.mutable_result() = MeasureResultFor(*request);
    writer->Write(r);
    return grpc::Status::OK;
  }

  grpc::Status GetStatus(grpc::ServerContext* context,
                         const v1::GetStatusRequest*,
                         v1::StatusResponse* s) override {
    {
      std::string seen;
      auto it = context->client_metadata().find("authorization");
      if (it != context->client_metadata().end()) {
        seen.assign(it->second.data(), it->second.size());
      }
      std::lock_guard<std::mutex> lock(mu_);
      status_authorizations_.push_back(seen);
    }
    s->set_version("0.1.0-fake");
    s->set_device("sim:npu2");
    s->set_platform("NPU Strix");
    s->set_generation("npu2");
    s->set_power_mode("performance");
    s->set_columns(8);
    s->set_core_mhz(1800);
    s->set_hw_contexts(6);
    s->set_device_state("running");
    *s->mutable_running() = Job("job-2", v1::JOB_STATE_RUNNING);
    *s->add_queue() = Job("job-3", v1::JOB_STATE_QUEUED);
    s->mutable_cache()->set_rows(1234);
    s->mutable_cache()->set_bytes(5 << 20);
    s->mutable_cache()->set_hits(90);
    s->mutable_cache()->set_misses(10);
    s->mutable_cache()->set_hit_rate(0.9);
    s->set_uptime_seconds(3725);
    return grpc::Status::OK;
  }

  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* r,
                        v1::ListJobsResponse* response) override {
    const char* ids[] = {"job-3", "job-2", "job-1"};
    const v1::JobState states[] = {v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING,
                                   v1::JOB_STATE_SUCCEEDED};
    uint32_t limit = r->limit() == 0 ? 50 : r->limit();
    for (uint32_t i = 0; i < 3 && i < limit; ++i) {
      *response->add_jobs() = Job(ids[i], states[i]);
    }
    return grpc::Status::OK;
  }

  grpc::Status Cancel(grpc::ServerContext*, const v1::CancelRequest* r,
                      v1::CancelResponse* response) override {
    if (r->job_id() != "job-1") return NoJob(r->job_id());
    response->set_state(v1::JOB_STATE_CANCELLED);
    return grpc::Status::OK;
  }

  grpc::Status GetResult(grpc::ServerContext*, const v1::GetResultRequest* r,
                         v1::JobResult* response) override {
    if (r->job_id() == "job-1") {
      *response->mutable_summary() = Job("job-1", v1::JOB_STATE_SUCCEEDED);
      *response->mutable_autotune() = Tune(v1::Calls(), Profile());
    } else if (r->job_id() == "job-m") {
      *response->mutable_summary() = Job("job-m", v1::JOB_STATE_SUCCEEDED);
      response->mutable_summary()->set_kind(v1::JOB_KIND_MEASURE);
      *response->mutable_measure() = MeasureResultFor(v1::MeasureRequest());
    } else if (r->job_id() == "job-f") {
      *response->mutable_summary() = Job("job-f", v1::JOB_STATE_FAILED);
      response->mutable_summary()->set_error("the NPU was held elsewhere");
    } else {
      return NoJob(r->job_id());
    }
    return grpc::Status::OK;
  }

  grpc::Status ExportCache(grpc::ServerContext*, const v1::ExportCacheRequest*,
                           grpc::ServerWriter<v1::CacheLine>* writer) override {
    for (const char* text : {"{\"key\": \"a\"}", "{\"key\": \"b\"}"}) {
      v1::CacheLine line;
      line.set_line(text);
      writer->Write(line);
    }
    return grpc::Status::OK;
  }

  grpc::Status ImportCache(grpc::ServerContext*,
                           grpc::ServerReader<v1::CacheLine>* reader,
                           v1::ImportCacheResponse* response) override {
    v1::CacheLine line;
    uint64_t n = 0;
    while (reader->Read(&line)) ++n;
    imported_lines = static_cast<int>(n);
    response->set_imported(n);
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> status_authorizations_;  // guarded by mu_

  static grpc::Status NoJob(const std::string& id) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no job " + id);
  }

  static v1::JobSummary Job(const std::string& id, v1::JobState state) {
    v1::JobSummary j;
    j.set_job_id(id);
    j.set_kind(v1::JOB_KIND_AUTOTUNE);
    j.set_client("ci-nightly");
    j.set_priority(v1::PRIORITY_BATCH);
    j.set_state(state);
    j.set_shapes_done(state == v1::JOB_STATE_SUCCEEDED ? 3 : 1);
    j.set_shapes_total(3);
    return j;
  }

  static v1::MeasureResult MeasureResultFor(const v1::MeasureRequest& r) {
    v1::MeasureResult result;
    v1::SettingMeasurement* recorded = result.add_settings();
    for (const v1::Tunable& t : r.operator_().tunables()) {
      v1::Field* f = recorded->mutable_setting()->add_tunables();
      f->set_name(t.name());
      *f->mutable_value() = t.value();
    }
    recorded->mutable_measurement()->set_t_step_us(100);
    recorded->set_cached(true);
    for (int i = 0; i < r.settings_size(); ++i) {
      v1::SettingMeasurement* s = result.add_settings();
      *s->mutable_setting() = r.settings(i);
      s->mutable_measurement()->set_t_step_us(100 - 1.5 * (i + 1));
      s->set_has_delta(true);
      s->set_delta_us(-1.5 * (i + 1));
      s->set_noise_us(0.2);
    }
    return result;
  }

  // With `client` "weighted G N T", the weighted gains and model time
  // above into `diff`.
  static void Weigh(const std::string& client, v1::ProfileDiff& diff) {
    double gain = 0, noise = 0, model = 0;
    if (std::sscanf(client.c_str(), "weighted %lf %lf %lf", &gain, &noise,
                    &model) != 3) {
      return;
    }
    for (v1::EntryChange& c : *diff.mutable_changed()) {
      c.set_has_weighted_gain(true);
      c.set_weighted_gain_us(gain);
      c.set_weighted_noise_us(noise);
    }
    for (v1::EntryGain& g : *diff.mutable_added_gains()) {
      g.set_has_weighted_gain(true);
      g.set_weighted_gain_us(gain);
      g.set_weighted_noise_us(noise);
    }
    diff.set_has_model_time(true);
    diff.set_model_time_us(model);
  }

  static void Stream(const v1::Calls& calls, const Profile& given,
                     grpc::ServerWriter<v1::AutotuneEvent>* writer,
                     const std::string& client = "") {
    v1::AutotuneEvent e;
    e.set_job_id("job-1");
    e.mutable_started();
    writer->Write(e);
    for (uint32_t i = 0; i < 3; ++i) {
      v1::AutotuneEvent p;
      p.set_job_id("job-1");
      v1::ShapeProgress* sp = p.mutable_progress();
      sp->set_index(i);
      sp->set_total(3);
      sp->set_shape("GEMM M=256 K=2048 N=2048");
      sp->set_settings_timed(10 * (i + 1));
      sp->set_cache_hits(i);
      sp->set_eta_seconds(30.0 * (2 - i));
      writer->Write(p);
    }
    v1::AutotuneEvent log;
    log.set_job_id("job-1");
    log.mutable_log()->set_text("fake: all shapes timed");
    writer->Write(log);
    v1::AutotuneEvent r;
    r.set_job_id("job-1");
    *r.mutable_result() = Tune(calls, given);
    Weigh(client, *r.mutable_result()->mutable_diff());
    writer->Write(r);
  }
};

// FakeTuner served in plaintext for the test's lifetime: on
// unix:<temp dir>/tuner.sock, or on TCP `host`:<a free port>.
class FakeServer {
 public:
  explicit FakeServer(const std::string& host = "") {
    char templ[] = "/tmp/irontune-client-XXXXXX";
    dir_ = mkdtemp(templ);
    grpc::ServerBuilder builder;
    int port = 0;
    if (host.empty()) {
      address_ = "unix:" + dir_ + "/tuner.sock";
      builder.AddListeningPort(address_, grpc::InsecureServerCredentials());
    } else {
      builder.AddListeningPort(host + ":0", grpc::InsecureServerCredentials(),
                               &port);
    }
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    if (!host.empty()) address_ = host + ":" + std::to_string(port);
    port_ = port;
  }
  ~FakeServer() {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
    std::filesystem::remove_all(dir_);
  }

  const std::string& address() const { return address_; }
  const std::string& dir() const { return dir_; }
  int port() const { return port_; }  // 0 on a unix socket
  FakeTuner& service() { return service_; }

 private:
  std::string dir_;
  std::string address_;
  int port_ = 0;
  FakeTuner service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace irontune

#endif  // IRONTUNE_TESTS_CLIENT_FAKE_TUNER_H_
