// The real NPU's path end to end, on test doubles: irontuned built against
// the XRT double (irontuned-fake-xrt) serving --device xrt:0, designs built
// by the fake build command (fake-builder-native, the compiled twin of
// tests/fakes/fake-builder: the same designs without a python3 start per
// build) as a real subprocess, irontune-client submitting a recording over a
// unix socket and writing the tuned profile. The double's runs take their
// scripted time on its virtual clock (tests/fakes/xrt/README.md), so the
// example recording is tuned in well under the bound. Bounded waits; no
// assertion on time.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "catch2/catch.hpp"
#include "google/protobuf/text_format.h"
#include "nlohmann/json.hpp"
#include "tests/testing/process.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

const std::string kSource = IRONTUNE_SOURCE_DIR;

// A /proc holding only a quiet thread-self/schedstat: a loaded test machine
// must not make the daemon refuse every figure for CPU wait. The completion
// IRQs are missing from it, which the daemon logs and carries on.
std::string QuietProc(const std::string& dir) {
  const std::string root = dir + "/proc";
  std::filesystem::create_directories(root + "/thread-self");
  std::ofstream(root + "/thread-self/schedstat") << "1000 0 1\n";
  return root;
}

class FakeNpuDaemon {
 public:
  // `env`: extra "K=V" entries for the daemon (and, for the fake's script
  // variables, which --builder-env passes, for the builder).
  // `flags`: more flags for irontuned; `builder`: its build command.
  explicit FakeNpuDaemon(
      const std::string& dir, const std::vector<std::string>& env = {},
      const std::vector<std::string>& flags = {},
      const std::string& builder = IRONTUNE_FAKE_BUILDER_NATIVE)
      : dir_(dir), socket_("unix:" + dir + "/sock") {
    std::vector<std::string> argv = {IRONTUNE_IRONTUNED_FAKE_XRT,
                                     "--device",
                                     "xrt:0",
                                     "--xrt-smi",
                                     IRONTUNE_FAKE_XRT_SMI,
                                     "--builder-command",
                                     builder,
                                     "--builder-env",
                                     "IRONTUNE_FAKE_BUILDER_*",
                                     "--test-proc-root",
                                     QuietProc(dir),
                                     "--state-dir",
                                     dir + "/state",
                                     "--listen",
                                     socket_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    process_ =
        std::make_unique<e2e::Process>("irontuned-fake-xrt", argv, dir, env);
    REQUIRE(process_->started());
    for (int i = 0; i < 300; ++i) {
      if (Client({"--timeout", "1", "status"}, 10).code == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL("irontuned-fake-xrt did not come up: " << process_->Stderr());
  }
  ~FakeNpuDaemon() {
    if (process_ != nullptr && process_->started()) {
      process_->Signal(SIGTERM);
      process_->Wait(15);
    }
  }

  e2e::Result Client(std::vector<std::string> args,
                     double seconds = 300) const {
    args.insert(args.begin(), {IRONTUNE_CLIENT, "--server", socket_});
    return e2e::Run(args, dir_, seconds);
  }

 private:
  std::string dir_;
  std::string socket_;
  std::unique_ptr<e2e::Process> process_;
};

std::string WriteModel(const std::string& dir,
                       const v1::Calls& calls = testing::AddSiluCalls()) {
  const std::string path = dir + "/model.txtpb";
  std::string text;
  google::protobuf::TextFormat::PrintToString(calls, &text);
  std::ofstream(path) << text;
  return path;
}

size_t ArtifactCount(const std::string& state_dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(state_dir + "/artifacts", ec)) {
    if (entry.is_directory() && entry.path().filename() != ".tmp") ++n;
  }
  return n;
}

TEST_CASE("xrt e2e: submit on xrt:0 with the fake XRT and fake builder",
          "[xrt][e2e]") {
  const std::string dir = e2e::TempDir("xrt-real-path");
  const std::string model = WriteModel(dir);
  const std::string profile = dir + "/profile.json";
  FakeNpuDaemon daemon(dir);

  const e2e::Result status = daemon.Client({"status"});
  INFO(status.out << status.err);
  CHECK_THAT(status.out, Catch::Contains("NPU Strix"));

  const e2e::Result tuned =
      daemon.Client({"submit", model, "--profile", profile, "--write",
                     "--rounds", "3", "--calls", "5"});
  INFO(tuned.out << tuned.err);
  REQUIRE(tuned.code == 0);
  CHECK_THAT(tuned.out, Catch::Contains("model:"));
  CHECK_THAT(tuned.err, Catch::Contains("wrote " + profile));
  CHECK(!e2e::ReadFile(profile).empty());
  // Every design came from the build command, kept once in the store.
  const size_t built = ArtifactCount(dir + "/state");
  CHECK(built > 0);

  // Submitted again, the store answers: no design is built twice.
  const e2e::Result again = daemon.Client(
      {"submit", model, "--profile", profile, "--rounds", "3", "--calls", "5"});
  INFO(again.out << again.err);
  CHECK(again.code == 0);
  CHECK(ArtifactCount(dir + "/state") == built);

  // The model's designs are full ELFs on npu2: each manifest names IRON's
  // arenas, and every buffer is a view of one.
  size_t elves = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir + "/state/artifacts")) {
    if (entry.path().filename() == ".tmp") continue;
    const auto e =
        nlohmann::json::parse(e2e::ReadFile(entry.path() / "entry.json"));
    CHECK(e["format"] == "irontune-artifact-entry/3");
    if (e["packaging"] != "full_elf") continue;
    ++elves;
    CHECK(e["arenas"].size() == 3);
    for (const auto& b : e["buffers"]) CHECK(b.contains("arena"));
  }
  CHECK(elves == built);
}

TEST_CASE("xrt e2e: a store entry of an older format is rebuilt, not loaded",
          "[xrt][e2e]") {
  const std::string dir = e2e::TempDir("xrt-real-path-v1");
  const std::string model = WriteModel(dir);
  const std::vector<std::string> submit = {"submit", model,     "--rounds",
                                           "2",      "--calls", "3"};
  {
    FakeNpuDaemon first(dir);
    REQUIRE(first.Client(submit).code == 0);
  }
  // As an older irontuned left them: every entry of format /1, and no
  // measurement, so every design is loaded again.
  for (const char* db : {"irontune.db", "irontune.db-wal", "irontune.db-shm"})
    std::filesystem::remove(dir + "/state/" + db);
  std::vector<std::string> entries;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir + "/state/artifacts")) {
    if (entry.path().filename() == ".tmp") continue;
    const std::string path = entry.path() / "entry.json";
    auto e = nlohmann::json::parse(e2e::ReadFile(path));
    e["format"] = "irontune-artifact-entry/1";
    std::ofstream(path) << e.dump();
    entries.push_back(path);
  }
  REQUIRE(!entries.empty());
  FakeNpuDaemon daemon(dir);
  const e2e::Result again = daemon.Client(submit);
  INFO(again.out << again.err);
  CHECK(again.code == 0);
  for (const std::string& path : entries) {
    INFO(path);
    CHECK(nlohmann::json::parse(e2e::ReadFile(path))["format"] ==
          "irontune-artifact-entry/3");
  }
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

const std::string kExample = kSource + "/examples/llama-3.2-1b.rec";
const std::string kExampleProfile = kSource + "/examples/profiles/npu2.json";

size_t Entries(const nlohmann::json& diff, const char* kind) {
  return diff.contains(kind) ? diff[kind].size() : 0;
}

// The example's settings are each built twice, by the compiled twin of the
// fake build command (fake-builder-native; a python3 per build would take
// longer than the NPU's time, which the double's clock skips). Its lm head
// holds ~8 GB of host buffers per batch, as on an NPU box, so ctest runs it
// alone (tests/CMakeLists.txt: xrt/example_e2e, RUN_SERIAL). A ranked
// search times a shape in rounds, a batch or two each, and every batch of
// the lm head moves its 8 GB: the job takes several minutes of host time.
TEST_CASE("xrt e2e: the example recording tuned on xrt:0, with its diff",
          "[xrt][e2e][.example]") {
  const std::string dir = e2e::TempDir("xrt-example");
  FakeNpuDaemon daemon(dir, {}, {"--build-jobs", "2"});
  const e2e::Result tuned =
      daemon.Client({"submit", kExample, "--profile", kExampleProfile,
                     "--rounds", "2", "--calls", "3", "--json"},
                    2300);
  INFO(tuned.out << tuned.err);
  REQUIRE(tuned.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(tuned.out);
  const nlohmann::json& stats = doc.at("stats");
  CHECK(stats.value("settings_timed", 0) > 0);
  CHECK(stats.value("device_seconds", 0.0) > 0);
  const size_t shapes = stats.value("shapes", 0);
  CHECK(shapes > 10);
  // Every entry of the tuned profile is in the diff against the example's
  // profile: kept, changed or added.
  const nlohmann::json& diff = doc.at("diff");
  const size_t entries = doc.at("profile").at("entries").size();
  CHECK(entries > 0);
  CHECK(Entries(diff, "kept") + Entries(diff, "changed") +
            Entries(diff, "added") ==
        entries);
  const size_t built = ArtifactCount(dir + "/state");
  CHECK(built > 0);

  // Again, as a person reads it: the diff table and its summary, every
  // figure from the cache and no design built again.
  const e2e::Result again =
      daemon.Client({"submit", kExample, "--profile", kExampleProfile,
                     "--rounds", "2", "--calls", "3"},
                    900);
  INFO(again.out << again.err);
  CHECK(again.code == 0);
  CHECK_THAT(again.out,
             Catch::Contains(std::to_string(Entries(diff, "kept")) + " kept"));
  CHECK(ArtifactCount(dir + "/state") == built);
}

// The judge on the real path: the double writes each setting's outputs from
// its inputs, the same for every setting, except where the fake builder
// scripts a setting wrong.
std::string CacheExport(const FakeNpuDaemon& daemon, const std::string& dir) {
  const std::string file = dir + "/export.jsonl";
  const e2e::Result r = daemon.Client({"cache", "export", file}, 60);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  return e2e::ReadFile(file);
}

std::string TunedTileSize(const std::string& profile) {
  const nlohmann::json doc = nlohmann::json::parse(e2e::ReadFile(profile));
  for (const nlohmann::json& e : doc.at("entries")) {
    if (e.at("operator") == "ElementwiseAdd") return e.at("tile_size").dump();
  }
  return "none";
}

TEST_CASE("xrt e2e: a setting whose output is wrong is refused by the judge",
          "[xrt][e2e][judge]") {
  const std::string dir = e2e::TempDir("xrt-judge");
  const std::string model = WriteModel(dir, testing::AddCalls());
  const std::string profile = dir + "/profile.json";
  FakeNpuDaemon daemon(dir, {"IRONTUNE_FAKE_BUILDER_WRONG=tile_size=256"});
  const e2e::Result tuned =
      daemon.Client({"submit", model, "--profile", profile, "--write",
                     "--rounds", "3", "--calls", "5"});
  INFO(tuned.out << tuned.err);
  REQUIRE(tuned.code == 0);
  CHECK(TunedTileSize(profile) == "512");
  const std::string exported = CacheExport(daemon, dir);
  INFO(exported);
  CHECK_THAT(exported, Catch::Contains("\"environment\":\"judge:"));
  CHECK_THAT(exported, Catch::Contains("refused: c under "));
}

TEST_CASE("xrt e2e: settings with the recorded setting's output are not judged",
          "[xrt][e2e][judge]") {
  const std::string dir = e2e::TempDir("xrt-judge-none");
  const std::string model = WriteModel(dir, testing::AddCalls());
  FakeNpuDaemon daemon(dir);
  const e2e::Result tuned =
      daemon.Client({"submit", model, "--rounds", "3", "--calls", "5"});
  INFO(tuned.out << tuned.err);
  REQUIRE(tuned.code == 0);
  const std::string exported = CacheExport(daemon, dir);
  INFO(exported);
  CHECK_THAT(exported, Catch::Contains("\"kind\":\"measurement\""));
  CHECK_THAT(exported, !Catch::Contains("\"environment\":\"judge:"));
}

}  // namespace
}  // namespace irontune
