#include "daemon/builder/command_builder.h"

#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "nlohmann/json.hpp"
#include "tests/builder/builder_fixtures.h"

namespace irontune {
namespace {

using testing::FakeBuilderPath;
using testing::FakeScript;
using testing::GemmRequest;
using testing::ScriptFake;
namespace fs = std::filesystem;

// The JSON of a fake design file: after the "xclbin2" magic or the 64-byte
// ELF header (tests/fakes/xrt/README.md).
nlohmann::json DesignJson(const std::string& path) {
  const std::string bytes = e2e::ReadFile(path);
  return nlohmann::json::parse(bytes.substr(bytes.rfind("\x7f"
                                                        "ELF",
                                                        0) == 0
                                                ? 64
                                                : 8));
}

struct Fixture {
  FakeScript script;
  std::string dir = e2e::TempDir("command-builder");
  std::unique_ptr<ArtifactStore> store;
  std::unique_ptr<CommandBuilder> builder;

  explicit Fixture(int jobs = 1, absl::Duration timeout = absl::Seconds(60)) {
    store = *ArtifactStore::Open(dir + "/artifacts", 0);
    CommandBuilderOptions options;
    options.command = FakeBuilderPath();
    options.jobs = jobs;
    options.timeout = timeout;
    options.pass_env = {"IRONTUNE_FAKE_BUILDER_*"};  // its script
    absl::StatusOr<std::unique_ptr<CommandBuilder>> made =
        CommandBuilder::Create(options, store.get());
    REQUIRE(made.ok());
    builder = *std::move(made);
  }
  // The recipe hashes the fake was run for, one per build.
  std::vector<std::string> Builds() const {
    return absl::StrSplit(e2e::ReadFile(dir + "/builds.log"), '\n',
                          absl::SkipEmpty());
  }
  std::vector<std::string> TmpLeft() const {
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir + "/artifacts/.tmp"))
      left.push_back(e.path().string());
    return left;
  }
};

TEST_CASE("CommandBuilder's environment names the command and its version") {
  Fixture f;
  CHECK(f.builder->Environment() ==
        "command-builder/1 " + FakeBuilderPath() + "; fake-builder 1");
  ScriptFake("VERSION", "fail");
  CommandBuilderOptions options;
  options.command = FakeBuilderPath();
  options.pass_env = {"IRONTUNE_FAKE_BUILDER_VERSION"};
  auto failing = CommandBuilder::Create(options, f.store.get());
  REQUIRE(failing.ok());
  CHECK((*failing)->Environment().find("unknown (--version exited with "
                                       "status 3)") != std::string::npos);
}

// Sets `name` to `value` for the test's life, and unsets it after.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name(name) {
    setenv(name, value, 1);
  }
  ~ScopedEnv() { unsetenv(name); }
  const char* name;
};

TEST_CASE("The build command gets a minimal environment") {
  Fixture f;
  ScriptFake("LOG", f.dir);
  ScriptFake("FIT_CHECK", "1");
  const ScopedEnv notify("NOTIFY_SOCKET", "/run/systemd/notify");
  const ScopedEnv token("IRONTUNE_TOKEN", "0123456789abcdef-secret");
  const ScopedEnv secret("AWS_SECRET_ACCESS_KEY", "hunter2");
  const ScopedEnv xrt("XILINX_XRT", "/opt/xilinx/xrt");
  const ScopedEnv lang("LANG", "C.UTF-8");
  CommandBuilderOptions options;
  options.command = FakeBuilderPath();
  options.pass_env = {"XILINX_XRT", "IRONTUNE_FAKE_BUILDER_*"};
  auto made = CommandBuilder::Create(options, f.store.get());
  REQUIRE(made.ok());
  REQUIRE((*made)->ChecksFit());  // FIT_CHECK reached it
  REQUIRE((*made)->Fit(GemmRequest(64)).ok());
  REQUIRE((*made)->Build(GemmRequest(64)).ok());
  for (const char* run : {"version", "fit", "build"}) {
    INFO(run);
    const auto env =
        nlohmann::json::parse(e2e::ReadFile(f.dir + "/env." + run + ".json"));
    CHECK_FALSE(env.contains("NOTIFY_SOCKET"));
    CHECK_FALSE(env.contains("IRONTUNE_TOKEN"));
    CHECK_FALSE(env.contains("AWS_SECRET_ACCESS_KEY"));
    CHECK(env.value("XILINX_XRT", "") == "/opt/xilinx/xrt");
    CHECK(env.value("LANG", "") == "C.UTF-8");
    // Ours (a python launcher may put its own directories before it).
    CHECK(absl::EndsWith(env.value("PATH", ""), getenv("PATH")));
    CHECK(env.value("IRONTUNE_FAKE_BUILDER_LOG", "") == f.dir);
  }
  // That nothing else is passed: builder_env_test (the list) and
  // subprocess_test (exactly the list reaches the child). The fake's python
  // may be a launcher that adds variables of its own, so it is not checked
  // here.
}

TEST_CASE("CommandBuilder refuses a --builder-env it may not pass") {
  FakeScript script;
  auto store = *ArtifactStore::Open(e2e::TempDir("env-names"), 0);
  CommandBuilderOptions options;
  options.command = FakeBuilderPath();
  options.pass_env = {"XILINX_XRT", "NOTIFY_SOCKET"};
  auto made = CommandBuilder::Create(options, store.get());
  REQUIRE_FALSE(made.ok());
  CHECK(made.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(made.status().message().find("--builder-env \"NOTIFY_SOCKET\": "
                                     "irontuned never passes") == 0);
  options.pass_env = {"MLIR AIE"};
  CHECK(CommandBuilder::Create(options, store.get())
            .status()
            .message()
            .find("not a variable's name") != std::string::npos);
}

TEST_CASE("CommandBuilder refuses a command that cannot be run") {
  FakeScript script;
  auto store = *ArtifactStore::Open(e2e::TempDir("cb-missing"), 0);
  CommandBuilderOptions options;
  options.command = "/nonexistent/iron-builder --flag";
  auto made = CommandBuilder::Create(options, store.get());
  REQUIRE_FALSE(made.ok());
  CHECK(made.status().code() == absl::StatusCode::kNotFound);
  CHECK(made.status().message().find("/nonexistent/iron-builder") !=
        std::string::npos);
  options.command = "  ";
  CHECK(CommandBuilder::Create(options, store.get()).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("CommandBuilder builds an xclbin chain into the store, once") {
  Fixture f;
  ScriptFake("LOG", f.dir);
  const BuildRequest request = GemmRequest(64, v1::PACKAGING_XCLBIN_CHAIN, 2);
  absl::StatusOr<BuildOutcome> built = f.builder->Build(request);
  REQUIRE(built.ok());
  REQUIRE(built->artifact);
  const Artifact& a = *built->artifact;
  CHECK(a.steps == 2);
  CHECK(a.buffers.size() == 6);  // 3 buffers x 2 distinct steps
  CHECK(a.buffers[4].name == "s1.B");
  CHECK(a.buffers[4].nbytes == 64 * 128 * 2);
  CHECK(a.symbols == std::vector<std::string>{"seq_len"});
  const auto manifest = nlohmann::json::parse(a.payload);
  CHECK(manifest["format"] == "irontune-xrt-artifact/2");
  CHECK(manifest["packaging"] == "xclbin_chain");
  // IRON's xclbin chain names a design's kernel f<hash>_op<idx>.
  CHECK(manifest["kernel"] == "f" + a.recipe_hash.substr(0, 8) + "_op0");
  const std::string xclbin = manifest["xclbin"];
  CHECK(xclbin == f.dir + "/artifacts/" + a.recipe_hash + "/design.xclbin");
  CHECK(e2e::ReadFile(xclbin).compare(0, 8, std::string("xclbin2", 8)) == 0);
  const auto design = DesignJson(xclbin);
  CHECK(design["kernel"] == manifest["kernel"]);
  CHECK(design["run_us"].get<double>() > 0);
  CHECK(manifest["symbols"][0]["insts_word"] == 16);
  CHECK(fs::file_size(manifest["insts"].get<std::string>()) % 4 == 0);

  // The second build of the same setting comes from the store.
  absl::StatusOr<BuildOutcome> again = f.builder->Build(request);
  REQUIRE(again.ok());
  REQUIRE(again->artifact);
  CHECK(again->artifact->artifact_hash == a.artifact_hash);
  CHECK(again->artifact->payload == a.payload);
  CHECK(f.Builds().size() == 1);
  CHECK(f.TmpLeft().empty());
}

TEST_CASE("CommandBuilder builds a full ELF of arenas and scratchpad values") {
  Fixture f;
  auto built = f.builder->Build(GemmRequest(64, v1::PACKAGING_FULL_ELF));
  REQUIRE(built.ok());
  REQUIRE(built->artifact);
  const auto manifest = nlohmann::json::parse(built->artifact->payload);
  CHECK(manifest["packaging"] == "full_elf");
  const std::string elf = manifest["elf"];
  CHECK(e2e::ReadFile(elf).compare(0, 4,
                                   "\x7f"
                                   "ELF") == 0);
  const auto design = DesignJson(elf);
  CHECK(design["kernel"] == "main:sequence");
  CHECK_FALSE(manifest.contains("xclbin"));
  // IRON's fused layout: arenas input, output, scratch; A and B in the
  // input arena one after the other, C in the output arena.
  REQUIRE(manifest["arenas"].size() == 3);
  const std::vector<ArtifactBuffer>& bufs = built->artifact->buffers;
  REQUIRE(bufs.size() == 3);
  CHECK(manifest["arenas"][0] ==
        nlohmann::json(
            {{"name", "input"}, {"nbytes", bufs[0].nbytes + bufs[1].nbytes}}));
  CHECK(manifest["buffers"]["s0.B"]["arena"] == "input");
  CHECK(manifest["buffers"]["s0.B"]["offset"] == bufs[0].nbytes);
  CHECK(manifest["buffers"]["s0.C"] ==
        nlohmann::json(
            {{"arena", "output"}, {"offset", 0}, {"nbytes", bufs[2].nbytes}}));
  CHECK(design["args"] == 3);
  // As IRON's: the value in a word of the ctrl scratchpad, with its kind.
  CHECK(manifest["symbols"][0]["scratchpad_word"] == 1);
  CHECK(manifest["symbols"][0]["kind"] == "core");
  CHECK_FALSE(manifest["symbols"][0].contains("arg"));
  CHECK(design["scratchpad_words"].get<int>() > 1);
}

TEST_CASE("A reply's value kind and missing kernel reach the manifest") {
  Fixture f;
  ScriptFake("VALUE_KIND", "addr");
  auto elf = f.builder->Build(GemmRequest(64, v1::PACKAGING_FULL_ELF));
  REQUIRE((elf.ok() && elf->artifact));
  CHECK(nlohmann::json::parse(elf->artifact->payload)["symbols"][0]["kind"] ==
        "addr");
  ScriptFake("KERNEL", "omit");
  auto chain = f.builder->Build(GemmRequest(64));
  REQUIRE((chain.ok() && chain->artifact));
  CHECK_FALSE(
      nlohmann::json::parse(chain->artifact->payload).contains("kernel"));
}

TEST_CASE("CommandBuilder refuses a full ELF whose values are arguments") {
  Fixture f;
  ScriptFake("ELF_VALUES", "arg");
  auto built = f.builder->Build(GemmRequest(64, v1::PACKAGING_FULL_ELF));
  REQUIRE_FALSE(built.ok());
  CHECK_THAT(std::string(built.status().message()),
             Catch::Contains("reply.symbols[0].arg is refused"));
}

TEST_CASE("The fake's designs say which buffers a run reads and writes") {
  Fixture f;
  auto good = f.builder->Build(GemmRequest(64));
  ScriptFake("WRONG", "tile_m=16");
  auto wrong = f.builder->Build(GemmRequest(16));
  REQUIRE((good.ok() && wrong.ok() && good->artifact && wrong->artifact));
  auto design = [](const Artifact& a) {
    const auto m = nlohmann::json::parse(a.payload);
    return DesignJson(m["xclbin"].get<std::string>());
  };
  const auto g = design(*good->artifact);
  CHECK(g["io"] == nlohmann::json({"in", "in", "out"}));
  CHECK(g["wrong_output"] == false);
  CHECK(design(*wrong->artifact)["wrong_output"] == true);
}

TEST_CASE("Settings of one operator get distinct recipes and fake times") {
  Fixture f;
  auto a = f.builder->Build(GemmRequest(64));
  auto b = f.builder->Build(GemmRequest(16));
  REQUIRE((a.ok() && b.ok() && a->artifact && b->artifact));
  CHECK(a->artifact->recipe_hash != b->artifact->recipe_hash);
  CHECK(a->artifact->artifact_hash != b->artifact->artifact_hash);
  auto run_us = [](const Artifact& x) {
    const auto m = nlohmann::json::parse(x.payload);
    return DesignJson(m["xclbin"])["run_us"].get<double>();
  };
  CHECK(run_us(*a->artifact) < run_us(*b->artifact));  // 64 is the sweet spot
}

TEST_CASE("A refusal is an outcome, not an error, and is not stored") {
  Fixture f;
  ScriptFake("REFUSE", "tile_m=16");
  auto refused = f.builder->Build(GemmRequest(16));
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->artifact);
  CHECK(refused->refusal == "fake: tile_m=16 does not fit in L1");
  auto fits = f.builder->Build(GemmRequest(32));
  REQUIRE(fits.ok());
  CHECK(fits->artifact);
  CHECK(f.TmpLeft().empty());
  CHECK(f.store->TotalBytes() > 0);
}

TEST_CASE("A command that announces fit-check answers fits without building") {
  Fixture f;
  ScriptFake("FIT_CHECK", "1");
  ScriptFake("LOG", f.dir);
  ScriptFake("REFUSE", "tile_m=16");
  CommandBuilderOptions options;
  options.command = FakeBuilderPath();
  options.pass_env = {"IRONTUNE_FAKE_BUILDER_*"};
  auto made = CommandBuilder::Create(options, f.store.get());
  REQUIRE(made.ok());
  CommandBuilder& checking = **made;
  CHECK(checking.ChecksFit());
  CHECK_FALSE(f.builder->ChecksFit());  // made before: no fit-check line
  // The same environment: a fit check keys nothing new.
  CHECK(checking.Environment() == f.builder->Environment());
  auto refused = checking.Fit(GemmRequest(16));
  REQUIRE(refused.ok());
  CHECK(*refused == "fake: tile_m=16 does not fit in L1");
  auto fits = checking.Fit(GemmRequest(32));
  REQUIRE(fits.ok());
  CHECK(fits->empty());
  const auto fit_log = [&f] {
    return std::vector<std::string>(absl::StrSplit(
        e2e::ReadFile(f.dir + "/fits.log"), '\n', absl::SkipEmpty()));
  };
  CHECK(fit_log().size() == 2);
  CHECK_FALSE(fs::exists(f.dir + "/builds.log"));
  CHECK(f.store->TotalBytes() == 0);
  // A design in the store fits without asking.
  REQUIRE(checking.Build(GemmRequest(32)).ok());
  REQUIRE(checking.Fit(GemmRequest(32)).ok());
  CHECK(fit_log().size() == 2);
  // A failed check is an error naming the command.
  ScriptFake("MODE", "failed");
  auto failed = checking.Fit(GemmRequest(64));
  CHECK(failed.status().code() == absl::StatusCode::kInternal);
  CHECK(failed.status().message().find("fake: no placer") != std::string::npos);
  ScriptFake("MODE", "");
  // A command without the line is asked by building: its refusal.
  auto by_build = f.builder->Fit(GemmRequest(16));
  REQUIRE(by_build.ok());
  CHECK(*by_build == *refused);
  CHECK(f.Builds().size() == 2);
}

// The error of one build in `mode`.
absl::Status FailedBuild(Fixture& f, const std::string& mode) {
  ScriptFake("MODE", mode);
  absl::StatusOr<BuildOutcome> outcome = f.builder->Build(GemmRequest(64));
  ScriptFake("MODE", "");
  CHECK(f.TmpLeft().empty());
  return outcome.status();
}

TEST_CASE("Builder failures are errors naming the command and the setting") {
  Fixture f;
  const absl::Status failing = FailedBuild(f, "failing");
  CHECK(failing.code() == absl::StatusCode::kInternal);
  const std::string text(failing.message());
  CHECK(text.find(FakeBuilderPath()) != std::string::npos);
  CHECK(text.find("GEMM {tile_m=64, tile_k=32, tile_n=32, num_aie_columns=4}"
                  " x1 xclbin_chain") != std::string::npos);
  CHECK(text.find("exited with status 1") != std::string::npos);
  CHECK(text.find("aiecc: error: cannot place the design") !=
        std::string::npos);

  const absl::Status failed = FailedBuild(f, "failed");
  CHECK(failed.code() == absl::StatusCode::kInternal);
  CHECK(failed.message().find("the build failed: fake: aiecc died") !=
        std::string::npos);

  const absl::Status crash = FailedBuild(f, "crash");
  CHECK(crash.code() == absl::StatusCode::kInternal);
  CHECK(crash.message().find("killed by signal 11") != std::string::npos);
  CHECK(crash.message().find("fake-builder: crash build") != std::string::npos);

  // After all that, the builder still builds.
  auto good = f.builder->Build(GemmRequest(64));
  REQUIRE(good.ok());
  CHECK(good->artifact);
}

TEST_CASE("Malformed replies are clear errors for the setting") {
  Fixture f;
  const absl::Status garbage = FailedBuild(f, "garbage");
  CHECK(garbage.code() == absl::StatusCode::kInternal);
  CHECK(garbage.message().find("malformed reply: the reply is not one JSON "
                               "object") != std::string::npos);
  const absl::Status missing = FailedBuild(f, "missing-file");
  CHECK(missing.message().find("reply.files.xclbin: artifact "
                               "\"design.xclbin\": the file does not "
                               "exist") != std::string::npos);
  const absl::Status symlink = FailedBuild(f, "symlink-dir");
  CHECK(symlink.message().find("reply.files.xclbin: artifact "
                               "\"sub/passwd\": a component (\"sub\") is "
                               "a symlink") != std::string::npos);
  const absl::Status wrong = FailedBuild(f, "wrong-recipe");
  CHECK(wrong.message().find("reply.recipe_hash is \"0000") !=
        std::string::npos);
  const absl::Status flood = FailedBuild(f, "flood");
  CHECK(flood.code() == absl::StatusCode::kResourceExhausted);
}

TEST_CASE("A hanging build is killed, its grandchildren with it") {
  Fixture f(1, absl::Milliseconds(1500));
  ScriptFake("LOG", f.dir);
  const absl::Status hang = FailedBuild(f, "hanging");
  CHECK(hang.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(hang.message().find("its process group was killed") !=
        std::string::npos);
  const std::string pid = e2e::ReadFile(f.dir + "/hanging.pid");
  if (!pid.empty()) CHECK(testing::Gone(std::stoi(pid)));
}

TEST_CASE("CommandBuilder rejects a bad request before running anything") {
  Fixture f;
  BuildRequest r = GemmRequest(64);
  r.steps = 0;
  CHECK(f.builder->Build(r).status().code() ==
        absl::StatusCode::kInvalidArgument);
  r = GemmRequest(64);
  r.packaging = v1::PACKAGING_UNSPECIFIED;
  CHECK(f.builder->Build(r).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Builds running at once are bounded by jobs") {
  Fixture f(2);
  ScriptFake("LOG", f.dir);
  ScriptFake("SLEEP", "0.3");
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      results[i] = f.builder->Build(GemmRequest(8 << i)).status();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) CHECK(s.ok());
  CHECK(f.Builds().size() == 6);
  CHECK(f.builder->peak_running() <= 2);
  CHECK(f.builder->peak_running() >= 1);
  // The fakes themselves never saw more than two of them running.
  const std::vector<std::string> running = absl::StrSplit(
      e2e::ReadFile(f.dir + "/running.log"), '\n', absl::SkipEmpty());
  CHECK(running.size() == 6);
  for (const std::string& n : running) CHECK(std::stoi(n) <= 2);
}

}  // namespace
}  // namespace irontune
