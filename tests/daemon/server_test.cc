// The service in process, over a real unix socket in a temp dir, on the
// simulated NPU's virtual clock.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/value.h"
#include "daemon/process/daemon.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/client_unary_call.h"
#include "grpcpp/support/byte_buffer.h"
#include "irontune/v1/tuner.grpc.pb.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

std::string TempDir(const std::string& name) {
  // Short: a unix socket path must fit in 108 bytes.
  auto dir = std::filesystem::temp_directory_path() / ("irontune-srv-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

v1::Operator SmallGemm() {
  return testing::IronGemm(256, 256, 256, 64, 64, 64, 4);
}

struct Rig {
  explicit Rig(const std::string& name) : dir(TempDir(name)) {
    DaemonOptions options;
    options.state_dir = dir;
    options.listen = {"unix:" + dir + "/sock"};
    options.sim_clock = SimClock::kVirtual;
    auto started = Daemon::Start(std::move(options));
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    daemon = *std::move(started);
    channel = grpc::CreateChannel("unix:" + dir + "/sock",
                                  grpc::InsecureChannelCredentials());
    stub = v1::Tuner::NewStub(channel);
  }
  std::string dir;
  std::unique_ptr<Daemon> daemon;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Tuner::Stub> stub;
};

// grpc.health.v1.Health/Check of `service`, by hand: the health proto's
// generated code is not installed. Returns the status enum (1: SERVING, 2:
// NOT_SERVING) or -1 (an error, e.g. NOT_FOUND for an unknown service).
int HealthCheck(const std::shared_ptr<grpc::Channel>& channel,
                const std::string& service = "") {
  grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                   grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::ClientContext context;
  // HealthCheckRequest{service}: field 1, length-delimited; "" encodes to
  // no bytes. REQUIRES: service.size() < 128 (a one-byte length).
  std::string bytes;
  if (!service.empty()) {
    bytes = std::string(1, '\x0a') +
            std::string(1, static_cast<char>(service.size())) + service;
  }
  grpc::Slice slice_in(bytes);
  grpc::ByteBuffer request(&slice_in, 1), response;
  grpc::Status s = grpc::internal::BlockingUnaryCall(
      channel.get(), method, &context, request, &response);
  if (!s.ok()) return -1;
  grpc::Slice slice;
  if (!response.TrySingleSlice(&slice).ok()) {
    if (!response.DumpToSingleSlice(&slice).ok()) return -1;
  }
  // HealthCheckResponse{status = 1}: field 1, varint.
  if (slice.size() == 0) return 0;
  if (slice.size() != 2 || slice.begin()[0] != 0x08) return -1;
  return slice.begin()[1];
}

TEST_CASE("server: Measure streams Queued, Started and a result with deltas") {
  Rig rig("measure");
  v1::MeasureRequest request;
  *request.mutable_operator_() = SmallGemm();
  v1::Setting* s = request.add_settings();
  v1::Field* f = s->add_tunables();
  f->set_name("tile_m");
  *f->mutable_value() = IntValue(32);
  request.mutable_timing()->set_rounds(4);
  request.mutable_timing()->set_calls(5);
  request.set_client("test");

  grpc::ClientContext context;
  auto reader = rig.stub->Measure(&context, request);
  v1::MeasureEvent event;
  std::vector<v1::MeasureEvent> events;
  while (reader->Read(&event)) events.push_back(event);
  grpc::Status status = reader->Finish();
  INFO(status.error_message());
  REQUIRE(status.ok());
  REQUIRE(events.size() >= 3);
  CHECK(events.front().has_queued());
  CHECK(events.front().queued().position() == 0);
  CHECK(events[1].has_started());
  REQUIRE(events.back().has_result());
  const v1::MeasureResult& result = events.back().result();
  REQUIRE(result.settings_size() == 2);
  CHECK(result.settings(0).has_measurement());
  CHECK(!result.settings(0).has_delta());
  CHECK(result.settings(0).setting().tunables_size() == 4);
  INFO(result.settings(1).refused());
  CHECK(result.settings(1).has_measurement());
  CHECK(result.settings(1).has_delta());
  const std::string id = events.front().job_id();

  // The job's result outlives the stream.
  grpc::ClientContext rc;
  v1::GetResultRequest get;
  get.set_job_id(id);
  v1::JobResult stored;
  REQUIRE(rig.stub->GetResult(&rc, get, &stored).ok());
  CHECK(stored.summary().state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(stored.measure().settings_size() == 2);

  // A second Measure of the same settings is served from the cache.
  grpc::ClientContext again;
  auto reader2 = rig.stub->Measure(&again, request);
  v1::MeasureResult second;
  while (reader2->Read(&event)) {
    if (event.has_result()) second = event.result();
  }
  REQUIRE(reader2->Finish().ok());
  REQUIRE(second.settings_size() == 2);
  CHECK(second.settings(0).cached());
  CHECK(second.settings(1).cached());

  grpc::ClientContext sc;
  v1::StatusResponse st;
  REQUIRE(rig.stub->GetStatus(&sc, v1::GetStatusRequest(), &st).ok());
  CHECK(st.cache().hits() >= 2);
  CHECK(st.cache().rows() >= 2);
}

// spdlog's default logger writing "[level] message" lines to a string, for
// the test's life. Read it once the daemon has shut down.
struct CapturedLog {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> saved = spdlog::default_logger();
  CapturedLog() {
    auto logger = std::make_shared<spdlog::logger>(
        "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    logger->set_pattern("[%l] %v");
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(saved); }
  std::vector<std::string> Lines() const {
    return absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  }
};

TEST_CASE("server: a client field with a newline stays one escaped log line") {
  CapturedLog log;
  Rig rig("logsafe");
  const std::string forged = "[warning] FORGED: root cleared the cache";
  v1::MeasureRequest request;
  *request.mutable_operator_() = SmallGemm();
  request.mutable_timing()->set_rounds(2);
  request.mutable_timing()->set_calls(3);
  request.set_client("mallory\n" + forged + "\x1b[2K\r");
  grpc::ClientContext context;
  auto reader = rig.stub->Measure(&context, request);
  v1::MeasureEvent event;
  while (reader->Read(&event)) {
  }
  REQUIRE(reader->Finish().ok());
  rig.daemon->Shutdown();

  const std::string escaped =
      "mallory\\n" + forged + "\\x1B[2K\\r";  // as LogSafe writes it
  int queued = 0, started = 0, ended = 0;
  for (const std::string& line : log.Lines()) {
    INFO(line);
    CHECK(line.rfind("[warning] FORGED", 0) != 0);  // no line is forged
    CHECK(line.find('\x1b') == std::string::npos);
    CHECK(line.find('\r') == std::string::npos);
    if (line.find("mallory") == std::string::npos) continue;
    CHECK(line.find("client=" + escaped) != std::string::npos);
    queued += line.find(" queued: ") != std::string::npos;
    started += line.find(" started: ") != std::string::npos;
    ended += line.find(" ended: ") != std::string::npos;
  }
  CHECK(queued == 1);
  CHECK(started == 1);
  CHECK(ended == 1);
}

TEST_CASE("server: a bad recording is INVALID_ARGUMENT naming the field") {
  Rig rig("invalid");
  v1::AutotuneRequest request;
  request.mutable_calls()->set_format_version(1);
  request.mutable_calls()->add_operators();  // no class name
  grpc::ClientContext context;
  auto reader = rig.stub->Autotune(&context, request);
  v1::AutotuneEvent event;
  while (reader->Read(&event)) {
  }
  grpc::Status status = reader->Finish();
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(status.error_message().rfind("operators[0].class_name", 0) == 0);

  // A bad Measure setting names its path too.
  v1::MeasureRequest measure;
  *measure.mutable_operator_() = SmallGemm();
  v1::Field* f = measure.add_settings()->add_tunables();
  f->set_name("tile_q");
  *f->mutable_value() = IntValue(1);
  grpc::ClientContext mc;
  auto mreader = rig.stub->Measure(&mc, measure);
  v1::MeasureEvent me;
  while (mreader->Read(&me)) {
  }
  status = mreader->Finish();
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(status.error_message().rfind("settings[0].tunables[0].name", 0) == 0);

  // The server still answers.
  grpc::ClientContext sc;
  v1::StatusResponse st;
  grpc::Status ss = rig.stub->GetStatus(&sc, v1::GetStatusRequest(), &st);
  REQUIRE(ss.ok());
  CHECK(st.device() == "sim:npu2");
  CHECK(st.platform() == "NPU Strix");
  CHECK(st.generation() == "npu2");
  CHECK(st.columns() > 0);
  CHECK(st.device_state() == "idle");
  CHECK(st.queue_size() == 0);
  CHECK(HealthCheck(rig.channel) == 1);
  CHECK(HealthCheck(rig.channel, "irontune.v1.Tuner") == 1);
  CHECK(HealthCheck(rig.channel, "no.such.Service") == -1);
}

// One ElementwiseAdd of 2048 bf16 elements, recorded at tile_size 512 on
// 4 columns (testing::AddCalls).
v1::Calls SmallRecording() { return testing::AddCalls(); }

TEST_CASE("server: Autotune streams progress and returns the tuned profile") {
  Rig rig("autotune");
  v1::AutotuneRequest request;
  *request.mutable_calls() = SmallRecording();
  request.mutable_timing()->set_rounds(3);
  request.mutable_timing()->set_calls(5);
  request.set_client("test");
  grpc::ClientContext context;
  auto reader = rig.stub->Autotune(&context, request);
  v1::AutotuneEvent event;
  std::vector<v1::AutotuneEvent> events;
  while (reader->Read(&event)) events.push_back(event);
  grpc::Status status = reader->Finish();
  INFO(status.error_message());
  REQUIRE(status.ok());
  REQUIRE(!events.empty());
  CHECK(events.front().has_queued());
  int progress = 0, trials = 0;
  for (const auto& e : events) {
    progress += e.has_progress();
    trials += e.trial().trials_size();
  }
  CHECK(progress > 0);
  CHECK(trials > 1);
  REQUIRE(events.back().has_result());
  const v1::AutotuneResult& result = events.back().result();
  REQUIRE(result.profile().entries_size() == 1);
  CHECK(result.profile().entries(0).operator_class() == "ElementwiseAdd");
  CHECK(result.stats().shapes() == 1);
  CHECK(result.stats().settings_timed() > 1);
  CHECK(result.stats().device_seconds() > 0);

  grpc::ClientContext lc;
  v1::ListJobsResponse jobs;
  REQUIRE(rig.stub->ListJobs(&lc, v1::ListJobsRequest(), &jobs).ok());
  REQUIRE(jobs.jobs_size() == 1);
  CHECK(jobs.jobs(0).state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("server: a second daemon on the state dir refuses to start") {
  Rig rig("lock");
  DaemonOptions options;
  options.state_dir = rig.dir;
  options.listen = {"unix:" + rig.dir + "/sock2"};
  options.sim_clock = SimClock::kVirtual;
  auto second = Daemon::Start(std::move(options));
  REQUIRE(!second.ok());
  CHECK(absl::IsFailedPrecondition(second.status()));
  CHECK(second.status().message().find("pid ") != std::string_view::npos);
}

// The state dir holds the cache, the jobs and the artifacts: private
// whatever umask irontuned was started under; one made by hand or by
// systemd keeps its mode.
TEST_CASE("server: a state dir it makes is 0700 and its lock file 0600") {
  const std::string base = TempDir("mode");
  const mode_t old = ::umask(0);
  const std::string fresh = base + "/a/state";
  absl::StatusOr<std::filesystem::path> made = MakeStateDir(fresh);
  const std::string kept = base + "/kept";
  std::filesystem::create_directory(kept);  // 0777 under umask 0
  absl::StatusOr<std::filesystem::path> existing = MakeStateDir(kept);
  absl::StatusOr<int> lock = TakeLockFile(fresh + "/irontuned.lock");
  ::umask(old);
  REQUIRE(made.ok());
  REQUIRE(existing.ok());
  REQUIRE(lock.ok());
  ::close(*lock);
  auto mode = [](const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
  };
  CHECK(mode(fresh) == 0700);
  CHECK(mode(kept) == 0777);
  CHECK(mode(fresh + "/irontuned.lock") == 0600);
  std::filesystem::remove_all(base);
}

TEST_CASE("server: after shutdown health is gone and results stay stored") {
  std::string dir;
  std::string id;
  {
    Rig rig("restart");
    dir = rig.dir;
    v1::MeasureRequest request;
    *request.mutable_operator_() = SmallGemm();
    request.mutable_timing()->set_rounds(3);
    request.mutable_timing()->set_calls(3);
    grpc::ClientContext context;
    auto reader = rig.stub->Measure(&context, request);
    v1::MeasureEvent event;
    while (reader->Read(&event)) id = event.job_id();
    REQUIRE(reader->Finish().ok());
    rig.daemon->Shutdown();
    CHECK(HealthCheck(rig.channel) != 1);
  }
  Rig again("restart-2");
  // A daemon on the first state dir again finds the job.
  again.daemon->Shutdown();
  DaemonOptions options;
  options.state_dir = dir;
  options.listen = {"unix:" + dir + "/sock"};
  options.sim_clock = SimClock::kVirtual;
  auto daemon = Daemon::Start(std::move(options));
  REQUIRE(daemon.ok());
  auto channel = grpc::CreateChannel("unix:" + dir + "/sock",
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::Tuner::NewStub(channel);
  grpc::ClientContext rc;
  v1::GetResultRequest get;
  get.set_job_id(id);
  v1::JobResult stored;
  REQUIRE(stub->GetResult(&rc, get, &stored).ok());
  CHECK(stored.summary().state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(stored.measure().settings_size() == 1);
}

}  // namespace
}  // namespace irontune
