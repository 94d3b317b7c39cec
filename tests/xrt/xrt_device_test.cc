// XrtDevice against the test double of XRT (tests/fakes/xrt/).
#include "daemon/xrt/xrt_device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <system_error>

#include "catch2/catch.hpp"
#include "daemon/xrt/artifact_manifest.h"
#include "tests/fakes/xrt/fake_xrt.h"
#include "tests/testing/process.h"
#include "xrt/experimental/xrt_elf.h"
#include "xrt/experimental/xrt_ext.h"
#include "xrt/experimental/xrt_xclbin.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_hw_context.h"
#include "xrt/xrt_kernel.h"

namespace irontune {
namespace {

const std::string kData = IRONTUNE_SOURCE_DIR "/tests/xrt/testdata/";

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A fake NPU for one test: its script, design files and xrt-smi.
struct FakeNpu {
  explicit FakeNpu(const std::string& tag, const std::string& script = "")
      : dir(e2e::TempDir(tag)) {
    if (script.empty()) {
      unsetenv("IRONTUNE_FAKE_XRT_SCRIPT");
    } else {
      WriteText(dir + "/script.json", script);
      setenv("IRONTUNE_FAKE_XRT_SCRIPT", (dir + "/script.json").c_str(), 1);
    }
    setenv("IRONTUNE_FAKE_XRT_SMI_PMODE", (dir + "/pmode").c_str(), 1);
    fake_xrt::Reset();
  }
  ~FakeNpu() {
    for (const char* v :
         {"IRONTUNE_FAKE_XRT_SCRIPT", "IRONTUNE_FAKE_XRT_SMI_PMODE",
          "IRONTUNE_FAKE_XRT_SMI_PARTITIONS", "IRONTUNE_FAKE_XRT_SMI_PLATFORM"})
      unsetenv(v);
    fake_xrt::Reset();
  }
  XrtDeviceOptions Options() const {
    XrtDeviceOptions o;
    o.smi.path = IRONTUNE_FAKE_XRT_SMI;
    o.smi.scratch_file = dir + "/partitions.json";
    o.hygiene.enabled = false;
    return o;
  }
  std::unique_ptr<XrtDevice> Open() const {
    absl::StatusOr<std::unique_ptr<XrtDevice>> d = XrtDevice::Open(Options());
    REQUIRE(d.ok());
    return *std::move(d);
  }
  // A fake design file taking `run_us` per run: an xclbin, or an ELF when
  // `name` ends in ".elf" (tests/fakes/xrt/README.md); `more` adds keys
  // (", \"io\": [...]").
  std::string Design(const std::string& name, const std::string& kernel,
                     double run_us = 20, const std::string& more = "") const {
    const std::string path = dir + "/" + name;
    const std::string json =
        "{\"uuid\": \"0123456789abcdef0123456789abcdef\", \"kernel\": \"" +
        kernel + "\", \"run_us\": " + std::to_string(run_us) + more + "}";
    const bool elf = name.size() > 4 && name.substr(name.size() - 4) == ".elf";
    WriteText(path, elf ? fake_xrt::ElfFile(json) : fake_xrt::XclbinFile(json));
    return path;
  }
  std::string Insts(int words) const {
    const std::string path = dir + "/insts.bin";
    std::string bytes(words * 4, '\0');
    for (int i = 0; i < words; ++i) bytes[i * 4] = static_cast<char>(i);
    WriteText(path, bytes);
    return path;
  }
  // One step (or `steps` distinct ones) of two 64-byte buffers, a and c.
  static void AddBuffers(Artifact& a, int steps) {
    a.steps = steps;
    for (int s = 0; s < steps; ++s) {
      a.buffers.push_back(
          {"s" + std::to_string(s) + ".a", s, 0, 64, true, false});
      a.buffers.push_back(
          {"s" + std::to_string(s) + ".c", s, 1, 64, false, true});
    }
  }
  Artifact Chain(int steps = 1, int insts_words = 100, double run_us = 20,
                 const std::string& more = "") const {
    XrtManifest m;
    m.packaging = v1::PACKAGING_XCLBIN_CHAIN;
    m.xclbin = Design("design.xclbin", "f1a2b3c4_op0", run_us, more);
    m.kernel = "f1a2b3c4_op0";
    m.insts = Insts(insts_words);
    m.symbols = {{"seq_len", 57, -1}};
    Artifact a;
    a.packaging = v1::PACKAGING_XCLBIN_CHAIN;
    a.symbols = {"seq_len"};
    a.payload = XrtManifestJson(m);
    AddBuffers(a, steps);
    return a;
  }
  // IRON's fused layout of one step: s0.a at byte 0 of the 64-byte input
  // arena, s0.c at byte 64 of the 192-byte output arena, scratch empty; the
  // ELF declares the three arenas and reads a, writes c. `symbol` places
  // seq_len (none when its name is empty); `more` as Design's.
  Artifact Elf(XrtManifestSymbol symbol = {"seq_len", -1, 2, ValueKind::kCore},
               const std::string& more = R"(, "scratchpad_words": 8)") const {
    XrtManifest m;
    m.packaging = v1::PACKAGING_FULL_ELF;
    m.elf = Design("design.elf", "main:sequence", 20,
                   R"(, "args": 3, "views": [
                     {"arena": 0, "offset": 0, "nbytes": 64, "io": "in"},
                     {"arena": 1, "offset": 64, "nbytes": 64, "io": "out"}])" +
                       more);
    m.arenas = {{"input", 64}, {"output", 192}, {"scratch", 0}};
    m.views = {{"s0.a", {0, 0, 64}}, {"s0.c", {1, 64, 64}}};
    Artifact a;
    a.packaging = v1::PACKAGING_FULL_ELF;
    if (!symbol.name.empty()) {
      m.symbols = {symbol};
      a.symbols = {symbol.name};
    }
    a.payload = XrtManifestJson(m);
    AddBuffers(a, 1);
    return a;
  }
  std::string dir;
};

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST_CASE("an XrtDevice opens NPU 0 and reads its platform", "[xrt][device]") {
  FakeNpu npu("xrt-open");
  std::unique_ptr<XrtDevice> device = npu.Open();
  absl::StatusOr<Platform> p = device->GetPlatform();
  REQUIRE(p.ok());
  CHECK(p->name == "NPU Strix");
  CHECK(p->generation == "npu2");
  CHECK(p->full_elf);
  CHECK(device->contexts_held() == 0);
}

TEST_CASE("no NPU is a clear error", "[xrt][device]") {
  FakeNpu npu("xrt-nodev", R"({"no_device": true})");
  absl::StatusOr<std::unique_ptr<XrtDevice>> d = XrtDevice::Open(npu.Options());
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(Message(d.status()), Catch::Contains("cannot open NPU 0"));
  CHECK_THAT(Message(d.status()), Catch::Contains("amdxdna"));
}

TEST_CASE("an xclbin chain runs opcode 3 with its patched instructions",
          "[xrt][device]") {
  FakeNpu npu("xrt-chain");
  std::unique_ptr<XrtDevice> device = npu.Open();
  absl::StatusOr<std::unique_ptr<Image>> image = device->Load(npu.Chain());
  REQUIRE(image.ok());
  CHECK(device->contexts_held() == 1);
  CHECK(fake_xrt::LiveContexts() == 1);
  REQUIRE((*image)->WriteValues({{"seq_len", 4096}}).ok());
  absl::StatusOr<RunResult> r = (*image)->Run();
  REQUIRE(r.ok());
  CHECK(r->elapsed_us > 0);
  CHECK(r->cpu_wait_us >= 0);
  const fake_xrt::StartedRun run = fake_xrt::LastStarted();
  CHECK(run.kernel == "f1a2b3c4_op0");
  CHECK(run.scalars.at(0) == 3);
  CHECK(run.scalars.at(2) == 100);
  REQUIRE(run.insts.size() == 100);
  CHECK(run.insts[57] == 4096);
  CHECK(run.insts[56] == 56);      // the other words as built
  CHECK(run.buffers.size() == 3);  // the instructions and two data buffers
  CHECK(run.buffers.count(1) == 1);
  CHECK(run.buffers.count(3) == 1);
  CHECK(run.buffers.count(4) == 1);
  image->reset();
  CHECK(device->contexts_held() == 0);
  CHECK(fake_xrt::LiveContexts() == 0);
}

TEST_CASE("buffers are synced outside the timed span", "[xrt][device]") {
  FakeNpu npu("xrt-sync");
  std::unique_ptr<XrtDevice> device = npu.Open();
  std::unique_ptr<Image> image = *device->Load(npu.Chain());
  const std::string in(64, 'x');
  REQUIRE(image->WriteBuffer("s0.a", in).ok());
  REQUIRE(image->WriteValues({{"seq_len", 7}}).ok());
  REQUIRE(image->Run().ok());
  REQUIRE(image->Run().ok());
  absl::StatusOr<std::string> out = image->ReadBuffer("s0.a");
  REQUIRE(out.ok());
  CHECK(*out == in);
  const std::vector<std::string> events = fake_xrt::Events();
  int starts = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i] != "start") continue;
    ++starts;
    REQUIRE(i + 1 < events.size());
    CHECK(events[i + 1] == "wait");  // nothing between start and wait
  }
  CHECK(starts == 2);
  CHECK(events.back().rfind("sync_from_device", 0) == 0);
  const auto first_start = std::find(events.begin(), events.end(), "start");
  CHECK(std::count_if(events.begin(), first_start, [](const std::string& e) {
          return e.rfind("sync_to_device", 0) == 0;
        }) == 3);  // instructions at load, s0.a, instructions patched
}

TEST_CASE("bad buffer and value writes are refused", "[xrt][device]") {
  FakeNpu npu("xrt-badwrite");
  std::unique_ptr<XrtDevice> device = npu.Open();
  std::unique_ptr<Image> image = *device->Load(npu.Chain());
  absl::Status s = image->WriteBuffer("s0.a", "short");
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(s), Catch::Contains("holds 64 bytes, not 5"));
  CHECK(image->WriteBuffer("nope", std::string(64, 0)).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(image->ReadBuffer("nope").status().code() ==
        absl::StatusCode::kInvalidArgument);
  s = image->WriteValues({{"heads", 2}});
  CHECK_THAT(Message(s), Catch::Contains("no per-call value \"heads\""));
  s = image->WriteValues({{"seq_len", int64_t{1} << 40}});
  CHECK_THAT(Message(s), Catch::Contains("does not fit 32 bits"));
}

TEST_CASE("artifacts the device cannot take are refused", "[xrt][device]") {
  FakeNpu npu("xrt-badartifact");
  std::unique_ptr<XrtDevice> device = npu.Open();
  Artifact a = npu.Chain();
  a.payload = "{}";
  CHECK(device->Load(a).status().code() == absl::StatusCode::kInvalidArgument);
  a = npu.Chain(1, 40);  // word 57 is past the instructions
  absl::Status s = device->Load(a).status();
  CHECK_THAT(Message(s), Catch::Contains("patches word 57"));
  a = npu.Chain();
  a.symbols.push_back("heads");
  s = device->Load(a).status();
  CHECK_THAT(Message(s), Catch::Contains("\"heads\" has no place"));
  XrtManifest m = *ParseXrtManifest(npu.Chain().payload);
  m.xclbin = npu.dir + "/missing.xclbin";
  a = npu.Chain();
  a.payload = XrtManifestJson(m);
  s = device->Load(a).status();
  CHECK_THAT(Message(s), Catch::Contains("missing.xclbin"));
  CHECK(device->contexts_held() == 0);
  CHECK(fake_xrt::LiveContexts() == 0);
}

TEST_CASE("npu1 has no full ELF", "[xrt][device]") {
  FakeNpu npu("xrt-npu1");
  setenv("IRONTUNE_FAKE_XRT_SMI_PLATFORM",
         (kData + "platform_phoenix_crlf.txt").c_str(), 1);
  std::unique_ptr<XrtDevice> device = npu.Open();
  absl::Status s = device->Load(npu.Elf()).status();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(s), Catch::Contains("NPU Phoenix (npu1) has no full-ELF"));
  CHECK(device->Load(npu.Chain()).ok());
}

TEST_CASE(
    "out of contexts on the out-of-tree driver (ENOENT) says how many are "
    "held",
    "[xrt][device][context]") {
  // The npu4 family's context limit is 32 (amd/xdna-driver npu4_family.h);
  // other processes hold 30 of them.
  FakeNpu npu("xrt-ctxlimit", R"({"other_contexts": 30})");
  std::unique_ptr<XrtDevice> device = npu.Open();
  std::unique_ptr<Image> a = *device->Load(npu.Chain());
  std::unique_ptr<Image> b = *device->Load(npu.Elf());
  absl::StatusOr<std::unique_ptr<Image>> c = device->Load(npu.Chain());
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(Message(c.status()),
             Catch::Contains("no hardware context is free (irontuned holds 2 "
                             "hardware contexts"));
  CHECK_THAT(Message(c.status()), Catch::Contains("err=-2"));
  a.reset();
  CHECK(device->Load(npu.Chain()).ok());
}

TEST_CASE("a design wider than the NPU (ENOSPC, out-of-tree) names columns",
          "[xrt][device][context]") {
  FakeNpu npu("xrt-enospc");
  std::unique_ptr<XrtDevice> device = npu.Open();
  absl::Status s =
      device->Load(npu.Chain(1, 100, 20, R"(, "columns": 16)")).status();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(s), Catch::Contains("needs more columns than NPU 0 has "
                                         "(8 usable columns)"));
  CHECK(device->contexts_held() == 0);
}

TEST_CASE("the in-tree driver's firmware limit (EINVAL) is a full NPU",
          "[xrt][device][context]") {
  // In-tree, the firmware holds 16 hardware contexts on the npu4 family.
  FakeNpu npu("xrt-intree-fw",
              R"({"driver": "in-tree", "other_contexts": 15})");
  std::unique_ptr<XrtDevice> device = npu.Open();
  std::unique_ptr<Image> a = *device->Load(npu.Chain());
  absl::Status s = device->Load(npu.Elf()).status();
  CHECK(s.code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(Message(s), Catch::Contains("no hardware context is free"));
  CHECK_THAT(Message(s), Catch::Contains("err=-22"));
  CHECK_THAT(Message(s), Catch::Contains("wider than the NPU's 8 columns"));
}

TEST_CASE("the in-tree driver out of partitions (ENODEV) is a full NPU",
          "[xrt][device][context]") {
  FakeNpu npu("xrt-intree-part", R"({"driver": "in-tree"})");
  std::unique_ptr<XrtDevice> device = npu.Open();
  // A design of all 8 columns; one of 4 then finds no free columns and no
  // partition of its width to share.
  std::unique_ptr<Image> wide =
      *device->Load(npu.Chain(1, 100, 20, R"(, "columns": 8)"));
  absl::Status s =
      device
          ->Load(npu.Elf({"seq_len", -1, 2, ValueKind::kCore},
                         R"(, "scratchpad_words": 8, "columns": 4)"))
          .status();
  CHECK(s.code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(Message(s), Catch::Contains("err=-19"));
  // Another 8-column design shares the partition.
  CHECK(device->Load(npu.Chain(1, 100, 20, R"(, "columns": 8)")).ok());
  wide.reset();
}

TEST_CASE("a run ending ERROR or TIMEOUT fails that call only",
          "[xrt][device]") {
  FakeNpu npu("xrt-runfail", R"({"run_failures": [
      {"call": 2, "state": "ERROR"}, {"call": 3, "state": "TIMEOUT"}]})");
  std::unique_ptr<XrtDevice> device = npu.Open();
  std::unique_ptr<Image> image = *device->Load(npu.Chain());
  CHECK(image->Run().ok());
  absl::StatusOr<RunResult> r = image->Run();
  CHECK(r.status().code() == absl::StatusCode::kInternal);
  CHECK_THAT(Message(r.status()), Catch::Contains("ERT_CMD_STATE_ERROR"));
  r = image->Run();
  CHECK(r.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(Message(r.status()), Catch::Contains("ERT_CMD_STATE_TIMEOUT"));
  CHECK(image->Run().ok());
}

TEST_CASE("a full-ELF run ending ERROR names the state", "[xrt][device]") {
  FakeNpu npu("xrt-elffail",
              R"({"run_failures": [{"call": 1, "state": "ERROR"}]})");
  std::unique_ptr<XrtDevice> device = npu.Open();
  std::unique_ptr<Image> image = *device->Load(npu.Elf());
  absl::StatusOr<RunResult> r = image->Run();
  CHECK(r.status().code() == absl::StatusCode::kInternal);
  CHECK_THAT(Message(r.status()), Catch::Contains("ERT_CMD_STATE_ERROR"));
}

TEST_CASE(
    "a buffer that cannot be allocated fails the load and frees its "
    "context",
    "[xrt][device]") {
  // Allocation 1 is the instruction buffer, 2 the first data buffer.
  FakeNpu npu("xrt-bofail", R"({"bo_alloc_fail": 2})");
  std::unique_ptr<XrtDevice> device = npu.Open();
  absl::StatusOr<std::unique_ptr<Image>> image = device->Load(npu.Chain());
  REQUIRE_FALSE(image.ok());
  CHECK(image.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(Message(image.status()),
             Catch::Contains("cannot allocate buffer s0.a (64 bytes)"));
  CHECK(device->contexts_held() == 0);
  CHECK(fake_xrt::LiveContexts() == 0);
}

TEST_CASE("distinct steps run each on its own buffers", "[xrt][device]") {
  FakeNpu npu("xrt-steps");
  std::unique_ptr<XrtDevice> device = npu.Open();
  std::unique_ptr<Image> image = *device->Load(npu.Chain(3));
  REQUIRE(image->Run().ok());
  CHECK(fake_xrt::Runs() == 3);
  // Allocation 1 is the instructions; step 2's buffers are allocations 6, 7.
  const fake_xrt::StartedRun last = fake_xrt::LastStarted();
  CHECK(last.buffers.at(3) == 6);
  CHECK(last.buffers.at(4) == 7);
  REQUIRE(image->WriteBuffer("s2.c", std::string(64, 'z')).ok());
  CHECK(*image->ReadBuffer("s2.c") == std::string(64, 'z'));
  CHECK(*image->ReadBuffer("s1.c") == std::string(64, '\0'));
}

TEST_CASE("other holders come from xrt-smi, our pid left out",
          "[xrt][device]") {
  FakeNpu npu("xrt-holders");
  setenv("IRONTUNE_FAKE_XRT_SMI_PARTITIONS",
         (kData + "aie_partitions_two_holders.json").c_str(), 1);
  XrtDeviceOptions o = npu.Options();
  o.own_pid = 4242;
  std::unique_ptr<XrtDevice> device = *XrtDevice::Open(o);
  CHECK(*device->OtherHolders() == std::vector<int>{777, 5151});
}

TEST_CASE(
    "the power mode is set at open; turbo is refused while contexts "
    "are held",
    "[xrt][device]") {
  FakeNpu npu("xrt-pmode");
  XrtDeviceOptions o = npu.Options();
  o.power_mode = PowerMode::kPerformance;
  std::unique_ptr<XrtDevice> device = *XrtDevice::Open(o);
  CHECK(device->GetPlatform()->power_mode == PowerMode::kPerformance);
  CHECK(device->GetPlatform()->core_mhz == 1800);

  setenv("IRONTUNE_FAKE_XRT_SMI_PARTITIONS",
         (kData + "aie_partitions_two_holders.json").c_str(), 1);
  o.power_mode = PowerMode::kTurbo;
  absl::StatusOr<std::unique_ptr<XrtDevice>> turbo = XrtDevice::Open(o);
  REQUIRE_FALSE(turbo.ok());
  CHECK(turbo.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(Message(turbo.status()),
             Catch::Contains("--power-mode turbo: power mode turbo is refused "
                             "while hardware contexts are active"));
}

TEST_CASE("device specs", "[xrt][device]") {
  CHECK(*ParseXrtSpec("xrt:0") == 0);
  CHECK(*ParseXrtSpec("xrt:3") == 3);
  for (const char* bad : {"xrt:", "xrt:-1", "xrt:a", "sim:npu2", "xrt:0x1"}) {
    INFO(bad);
    CHECK(ParseXrtSpec(bad).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

TEST_CASE("a run's device time passes on the double's virtual clock",
          "[xrt][device][clock]") {
  FakeNpu npu("xrt-virtual", R"({"jitter": 0})");
  std::unique_ptr<XrtDevice> device = npu.Open();
  // 0.25 s a step, 2 steps: the clock moves on by that, nobody sleeps.
  std::unique_ptr<Image> image =
      *device->Load(npu.Chain(/*steps=*/2, 100, /*run_us=*/250'000));
  absl::StatusOr<RunResult> r = image->Run();
  REQUIRE(r.ok());
  CHECK(r->elapsed_us >= 500'000);
  CHECK(fake_xrt::Skipped() > std::chrono::milliseconds(400));
  CHECK(fake_xrt::Skipped() <= std::chrono::milliseconds(500));
}

TEST_CASE("in the real clock mode a run's time is waited, not skipped",
          "[xrt][device][clock]") {
  FakeNpu npu("xrt-real", R"({"jitter": 0, "clock": "real"})");
  std::unique_ptr<XrtDevice> device = npu.Open();
  std::unique_ptr<Image> image = *device->Load(npu.Chain(1, 100, 2000));
  absl::StatusOr<RunResult> r = image->Run();
  REQUIRE(r.ok());
  CHECK(r->elapsed_us > 0);
  CHECK(fake_xrt::Skipped() == std::chrono::nanoseconds(0));
}

TEST_CASE("a bad clock mode in the script is refused", "[xrt][device][clock]") {
  CHECK_THROWS_WITH(FakeNpu("xrt-badclock", R"({"clock": "sundial"})"),
                    Catch::Contains("clock must be"));
  unsetenv("IRONTUNE_FAKE_XRT_SCRIPT");
  unsetenv("IRONTUNE_FAKE_XRT_SMI_PMODE");
}

TEST_CASE("a run writes its outputs from its inputs", "[xrt][device][output]") {
  FakeNpu npu("xrt-output");
  std::unique_ptr<XrtDevice> device = npu.Open();
  const std::string io = R"(, "io": ["in", "out"])";
  std::unique_ptr<Image> image = *device->Load(npu.Chain(1, 100, 20, io));
  std::string in(64, '\0');
  for (int i = 0; i < 64; ++i) in[i] = static_cast<char>(i * 7);
  REQUIRE(image->WriteBuffer("s0.a", in).ok());
  REQUIRE(image->Run().ok());
  absl::StatusOr<std::string> out = image->ReadBuffer("s0.c");
  REQUIRE(out.ok());
  CHECK(*out == fake_xrt::Output({in}, 64, 1, false));
  CHECK(*out != std::string(64, '\0'));
  CHECK(*image->ReadBuffer("s0.a") == in);  // an input stays as written

  // A design scripted wrong writes something else from the same input.
  image.reset();
  std::unique_ptr<Image> wrong =
      *device->Load(npu.Chain(1, 100, 20, io + R"(, "wrong_output": true)"));
  REQUIRE(wrong->WriteBuffer("s0.a", in).ok());
  REQUIRE(wrong->Run().ok());
  const std::string bad = *wrong->ReadBuffer("s0.c");
  CHECK(bad == fake_xrt::Output({in}, 64, 1, true));
  CHECK(bad != *out);
}

TEST_CASE(
    "a full ELF's per-call values go to its ctrl scratchpad by kind: core "
    "<< 2, addr as is",
    "[xrt][device][scratchpad]") {
  FakeNpu npu("xrt-scratchpad");
  std::unique_ptr<XrtDevice> device = npu.Open();
  absl::StatusOr<std::unique_ptr<Image>> image = device->Load(npu.Elf());
  REQUIRE(image.ok());
  REQUIRE((*image)->WriteValues({{"seq_len", 4096}}).ok());
  REQUIRE((*image)->Run().ok());
  fake_xrt::StartedRun run = fake_xrt::LastStarted();
  REQUIRE(run.scratchpad.size() == 8);
  CHECK(run.scratchpad[2] == 4096u << 2);  // a core reads value << 2
  CHECK(run.scratchpad[1] == 0);
  CHECK(run.scalars.empty());  // never a kernel argument
  REQUIRE((*image)->WriteValues({{"seq_len", -5}}).ok());
  REQUIRE((*image)->Run().ok());
  CHECK(static_cast<int32_t>(fake_xrt::LastStarted().scratchpad[2]) == -20);
  // The range is checked after the shift.
  absl::Status s = (*image)->WriteValues({{"seq_len", int64_t{1} << 30}});
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(s), Catch::Contains("shifted left by 2"));
  image->reset();

  std::unique_ptr<Image> addr =
      *device->Load(npu.Elf({"base", -1, 3, ValueKind::kAddr}));
  REQUIRE(addr->WriteValues({{"base", 4096}}).ok());
  REQUIRE(addr->Run().ok());
  CHECK(fake_xrt::LastStarted().scratchpad[3] == 4096);
  CHECK(addr->WriteValues({{"base", int64_t{1} << 30}}).ok());
}

TEST_CASE("scratchpad symbols the ELF cannot take are refused at load",
          "[xrt][device][scratchpad]") {
  FakeNpu npu("xrt-scratchpad-bad");
  std::unique_ptr<XrtDevice> device = npu.Open();
  absl::Status s =
      device->Load(npu.Elf({"seq_len", -1, 20, ValueKind::kCore})).status();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(s), Catch::Contains("scratchpad word 20"));
  CHECK_THAT(Message(s), Catch::Contains("has 8 words"));
  s = device->Load(npu.Elf({"seq_len", -1, 2, ValueKind::kCore}, "")).status();
  CHECK_FALSE(s.ok());
  CHECK_THAT(Message(s),
             Catch::Contains("Control scratchpad memory is not present"));
  CHECK(device->contexts_held() == 0);
  CHECK(fake_xrt::LiveContexts() == 0);
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

int EventCount(const std::string& prefix) {
  int n = 0;
  for (const std::string& e : fake_xrt::Events()) n += e.rfind(prefix, 0) == 0;
  return n;
}

TEST_CASE(
    "a full ELF binds exactly its arenas; buffers are views synced by "
    "range",
    "[xrt][device][arena]") {
  FakeNpu npu("xrt-arenas");
  std::unique_ptr<XrtDevice> device = npu.Open();
  std::unique_ptr<Image> image = *device->Load(npu.Elf());
  // One bo per arena (allocations 1-3; the scratchpad is 4), bound as
  // arguments 0, 1, 2 and nothing else.
  std::string in(64, '\0');
  for (int i = 0; i < 64; ++i) in[i] = static_cast<char>(i * 5 + 1);
  REQUIRE(image->WriteBuffer("s0.a", in).ok());
  REQUIRE(image->Run().ok());
  const fake_xrt::StartedRun run = fake_xrt::LastStarted();
  CHECK(run.buffers == std::map<int, int>{{0, 1}, {1, 2}, {2, 3}});
  CHECK(run.scalars.empty());
  // The output lands at byte 64 of the output arena, and is read there.
  absl::StatusOr<std::string> out = image->ReadBuffer("s0.c");
  REQUIRE(out.ok());
  CHECK(*out == fake_xrt::Output({in}, 64, 1, false));
  const std::vector<std::string> events = fake_xrt::Events();
  CHECK(std::count(events.begin(), events.end(), "sync_to_device 1 0 64") == 1);
  CHECK(events.back() == "sync_from_device 2 64 64");
  CHECK(fake_xrt::Runs() == 1);  // the fused sequence runs every step once
}

TEST_CASE("a full ELF declaring other arguments than its arenas is refused",
          "[xrt][device][arena]") {
  FakeNpu npu("xrt-elfargs");
  std::unique_ptr<XrtDevice> device = npu.Open();
  // The ELF's sequence takes a feedback arena the manifest lacks.
  Artifact a = npu.Elf();
  XrtManifest m = *ParseXrtManifest(a.payload);
  m.elf = npu.Design("design.elf", "main:sequence", 20,
                     R"(, "args": 4, "scratchpad_words": 8)");
  a.payload = XrtManifestJson(m);
  absl::Status s = device->Load(a).status();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(s), Catch::Contains("declares 4 arguments, but the "
                                         "artifact binds 3 (its arenas)"));
  CHECK(fake_xrt::LiveContexts() == 0);
}

TEST_CASE(
    "an xclbin chain binding more buffers than its kernel takes is "
    "refused",
    "[xrt][device]") {
  FakeNpu npu("xrt-chainargs");
  std::unique_ptr<XrtDevice> device = npu.Open();
  absl::Status s =
      device->Load(npu.Chain(1, 100, 20, R"(, "args": 4)")).status();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(s), Catch::Contains("declares 4 arguments, but the "
                                         "artifact binds 5"));
  CHECK(device->Load(npu.Chain(1, 100, 20, R"(, "args": 5)")).ok());
}

TEST_CASE("an xclbin chain naming no kernel runs the xclbin's first",
          "[xrt][device]") {
  FakeNpu npu("xrt-firstkernel");
  std::unique_ptr<XrtDevice> device = npu.Open();
  Artifact a = npu.Chain();
  XrtManifest m = *ParseXrtManifest(a.payload);
  m.kernel.clear();
  a.payload = XrtManifestJson(m);
  std::unique_ptr<Image> image = *device->Load(a);
  REQUIRE(image->Run().ok());
  CHECK(fake_xrt::LastStarted().kernel == "f1a2b3c4_op0");
  m.kernel = "MLIR_AIE";  // a name the xclbin does not hold
  a.payload = XrtManifestJson(m);
  CHECK_THAT(Message(device->Load(a).status()),
             Catch::Contains("has no kernel \"MLIR_AIE\""));
}

// A command that never ends: the wait times out, and the backend must
// abort the run before it starts it again or destroys it (XRT master
// aborts the process on a run destroyed in progress; both refuse to start
// one in progress).
void TimesOutThenRecovers(const std::string& tag, const std::string& xrt,
                          bool elf) {
  FakeNpu npu(tag, R"({"xrt": ")" + xrt +
                       R"(", "run_failures": [{"call": 1, "state": "HANG"}]})");
  XrtDeviceOptions o = npu.Options();
  o.run_timeout = std::chrono::milliseconds(50);
  std::unique_ptr<XrtDevice> device = *XrtDevice::Open(o);
  std::unique_ptr<Image> image = *device->Load(elf ? npu.Elf() : npu.Chain());
  absl::StatusOr<RunResult> r = image->Run();
  CHECK(r.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(Message(r.status()), Catch::Contains("did not complete within "
                                                  "50 ms"));
  CHECK_THAT(Message(r.status()), Catch::Contains("aborted"));
  CHECK(EventCount("timeout") == 1);
  CHECK(EventCount("abort") == 1);
  CHECK(image->Run().ok());  // started again: it was aborted
  image.reset();
  CHECK(EventCount("destroyed in progress") == 0);
}

TEST_CASE("a run that times out is aborted before it is reused",
          "[xrt][device][timeout]") {
  SECTION("xclbin chain, XRT master") {
    TimesOutThenRecovers("xrt-hang-chain", "master", false);
  }
  SECTION("full ELF, XRT master") {
    TimesOutThenRecovers("xrt-hang-elf", "master", true);
  }
  SECTION("full ELF, XRT 2.19") {
    TimesOutThenRecovers("xrt-hang-219", "2.19", true);
  }
}

// ---- The double itself behaves as XRT does --------------------------------

TEST_CASE("the double reads ELF and xclbin headers as XRT does",
          "[xrt][fake]") {
  FakeNpu npu("xrt-fake-files");
  const std::string json =
      R"({"uuid": "0123456789abcdef0123456789abcdef", "kernel": "k",
          "run_us": 1})";
  WriteText(npu.dir + "/bad.elf", fake_xrt::ElfFile(json, 69, 7));
  CHECK_THROWS_WITH(xrt::elf(npu.dir + "/bad.elf"),
                    Catch::Contains("is not a valid ELF file"));
  WriteText(npu.dir + "/npu1.elf", fake_xrt::ElfFile(json, 3));
  CHECK_THROWS_WITH(xrt::elf(npu.dir + "/npu1.elf"),
                    Catch::Contains("unsupported platform OS/ABI: 3"));
  WriteText(npu.dir + "/json.xclbin", json);
  CHECK_THROWS_WITH(xrt::xclbin(npu.dir + "/json.xclbin"),
                    Catch::Contains("Invalid xclbin"));
  WriteText(npu.dir + "/ok.xclbin", fake_xrt::XclbinFile(json));
  const xrt::xclbin ok(npu.dir + "/ok.xclbin");
  REQUIRE(ok.get_kernels().size() == 1);
  CHECK(ok.get_kernels()[0].get_num_args() == 8);  // mlir-aie's MLIR_AIE
}

TEST_CASE("the double refuses scalar ELF arguments where XRT does",
          "[xrt][fake]") {
  FakeNpu master("xrt-fake-scalar");
  const std::string path =
      master.Design("s.elf", "main:sequence", 1, R"(, "scalar_args": 1)");
  CHECK_THROWS_WITH(xrt::elf(path),
                    Catch::Contains("scalar args are not yet supported"));
  FakeNpu old("xrt-fake-scalar-219", R"({"xrt": "2.19"})");
  const std::string p219 =
      old.Design("s.elf", "main:sequence", 1, R"(, "scalar_args": 1)");
  const xrt::elf elf(p219);  // 2.19 refuses when the kernel is made
  const xrt::device device(0);
  const xrt::hw_context ctx(device, elf);
  CHECK_THROWS_WITH(xrt::ext::kernel(ctx, "main:sequence"),
                    Catch::Contains("scalar args are not yet supported"));
}

TEST_CASE("the double clones a buffer in the wrong group, as XRT does",
          "[xrt][fake]") {
  FakeNpu npu("xrt-fake-clone");
  xrt::device device(0);
  const xrt::xclbin xclbin(
      npu.Design("d.xclbin", "k", 1, R"(, "io": ["in", "out"])"));
  const xrt::hw_context ctx(device, device.register_xclbin(xclbin));
  const xrt::kernel kernel(ctx, "k");
  xrt::bo in(device, 64, xrt::bo::flags::host_only, kernel.group_id(3));
  xrt::bo out(device, 64, xrt::bo::flags::host_only, kernel.group_id(3));
  xrt::run run(kernel);
  run.set_arg(3, in);
  run.set_arg(4, out);  // group_id(3), not (4): XRT copies it
  CHECK(EventCount("clone") == 1);
  CHECK_THROWS_AS(run.set_arg(8, in), std::out_of_range);  // 8 arguments
  std::memset(in.map<char*>(), 7, 64);
  in.sync(XCL_BO_SYNC_BO_TO_DEVICE);
  run.start();
  CHECK(run.wait(std::chrono::milliseconds(0)) == ERT_CMD_STATE_COMPLETED);
  out.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
  CHECK(std::string(out.map<char*>(), 64) == std::string(64, '\0'));
  CHECK_THROWS_AS(out.sync(XCL_BO_SYNC_BO_FROM_DEVICE, 8, 60),
                  std::system_error);
}

TEST_CASE("the double's ctrl scratchpad is synced from the device when asked",
          "[xrt][fake]") {
  FakeNpu npu("xrt-fake-scratchpad");
  const xrt::device device(0);
  const xrt::elf elf(
      npu.Design("d.elf", "main:sequence", 1, R"(, "scratchpad_words": 4)"));
  const xrt::hw_context ctx(device, elf);
  const xrt::ext::kernel kernel(ctx, "main:sequence");
  xrt::run run(kernel);
  xrt::bo pad = run.get_ctrl_scratchpad_bo();
  pad.map<int32_t*>()[1] = 9;  // not synced: the next ask overwrites it
  pad = run.get_ctrl_scratchpad_bo();
  CHECK(pad.map<int32_t*>()[1] == 0);
  CHECK_THROWS_WITH(run.abort(), Catch::Contains("wasn't started"));
}

}  // namespace
}  // namespace irontune
