// The test double of XRT: tests/fakes/xrt/README.md.
#include "tests/fakes/xrt/fake_xrt.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <variant>

#include "daemon/xrt/span_clock.h"
#include "nlohmann/json.hpp"
#include "xrt/experimental/xrt_elf.h"
#include "xrt/experimental/xrt_ext.h"
#include "xrt/experimental/xrt_xclbin.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_hw_context.h"
#include "xrt/xrt_kernel.h"

namespace fake_xrt {

// Which amdxdna driver answers, and the NPU family whose limits it has.
enum class Driver { kOutOfTree, kInTree };

struct Script {
  bool no_device = false;
  int devices = 1;
  Driver driver = Driver::kOutOfTree;
  bool npu1 = false;       // "npu": "npu1" (else the npu4 family: Strix...)
  int other_contexts = 0;  // contexts other processes hold
  bool xrt_219 = false;    // "xrt": "2.19" (else master)
  std::map<int64_t, ert_cmd_state> run_failures;  // by 1-based run number
  std::set<int64_t> hangs;    // runs whose command never ends until aborted
  int64_t bo_alloc_fail = 0;  // the 1-based allocation that fails; 0: none
  uint64_t seed = 1;
  double jitter = 0.02;     // relative standard deviation of a run's time
  bool real_clock = false;  // wait() sleeps instead of moving the clock on
  std::vector<std::string> bdfs;  // by device index (get_info<bdf>)
  // What get_info<host> reports (README.md, "Versions"): XRT's version and
  // hash ("": the "xrt" key's), and the first line of
  // /sys/module/amdxdna/version (unset: the "driver" key's; nullopt: no
  // such file).
  std::string xrt_version;
  std::string xrt_hash;
  bool module_version_set = false;
  std::optional<std::string> module_version;
};

struct DeviceState {
  unsigned int index = 0;
  std::string bdf;
  std::map<std::string, std::shared_ptr<const Design>> registered;
};

struct ContextState {
  ~ContextState();
  std::shared_ptr<DeviceState> device;
  std::shared_ptr<const Design> design;
  bool elf = false;
  int start_col = -1;  // in-tree: its partition
};

// Buffers larger than this share one copy between host and device, as an
// NPU's host-only memory does: a model's weights would otherwise be held
// twice. Smaller ones keep a device copy of their own, so a missing or
// misplaced sync shows.
constexpr size_t kSeparateCopyLimit = size_t{64} << 20;

struct BoState {
  int id = 0;
  std::vector<char> host;  // what map() shows
  // What a run reads and writes: its own bytes, or (large buffers) host's.
  std::vector<char> own_device;
  std::vector<char>& device() { return shared() ? host : own_device; }
  bool shared() const { return host.size() > kSeparateCopyLimit; }
  uint32_t flags = 0;
  uint32_t group = 0;
  uint64_t version = 0;  // how many times the host synced it over
};

struct KernelState {
  std::shared_ptr<ContextState> context;
  std::string name;
};

// A run's argument: a buffer, or the bytes of a scalar as XRT keeps them.
struct Arg {
  std::shared_ptr<BoState> bo;
  int64_t value = 0;
  bool scalar = false;
};

struct RunState {
  ~RunState();
  std::shared_ptr<KernelState> kernel;
  std::map<int, Arg> args;
  std::chrono::steady_clock::time_point done;
  ert_cmd_state final_state = ERT_CMD_STATE_NEW;
  bool started = false;
  bool hang = false;                    // the command never ends until aborted
  bool ended = false;                   // waited to its end or aborted
  std::shared_ptr<BoState> scratchpad;  // made with the run
  // The versions of the data buffers the outputs were last written from.
  std::vector<uint64_t> outputs_from;
};

namespace {

constexpr size_t kMaxEvents = 10000;

struct World {
  std::mutex mu;
  bool loaded = false;
  Script script;
  std::mt19937_64 rng{1};
  int live_contexts = 0;
  // In-tree driver: the partitions of the live contexts, by start column:
  // (columns, contexts sharing it).
  std::map<int, std::pair<int, int>> partitions;
  int64_t runs = 0;
  int64_t bo_allocs = 0;
  std::chrono::nanoseconds skipped{0};  // the virtual clock's lead
  std::deque<std::string> events;
  StartedRun last;
};

World& TheWorld() {
  static World* world = new World;
  return *world;
}

ert_cmd_state StateNamed(const std::string& name) {
  if (name == "ERROR") return ERT_CMD_STATE_ERROR;
  if (name == "TIMEOUT") return ERT_CMD_STATE_TIMEOUT;
  if (name == "ABORT") return ERT_CMD_STATE_ABORT;
  if (name == "NORESPONSE") return ERT_CMD_STATE_NORESPONSE;
  throw std::runtime_error("fake xrt script: unknown run state \"" + name +
                           "\" (ERROR, TIMEOUT, ABORT, NORESPONSE, HANG)");
}

// `value` if it is one of `words`, else a clear error about `key`.
std::string OneOf(const nlohmann::json& value, const std::string& key,
                  const std::set<std::string>& words) {
  const std::string word = value.is_string() ? value.get<std::string>() : "";
  if (words.count(word) == 0) {
    std::string all;
    for (const std::string& w : words) all += (all.empty() ? "" : ", ") + w;
    throw std::runtime_error("fake xrt script: " + key + " must be one of " +
                             all);
  }
  return word;
}

void ParseFailures(const nlohmann::json& value, Script& s) {
  for (const auto& f : value) {
    const int64_t call = f.at("call").get<int64_t>();
    const std::string state = f.at("state").get<std::string>();
    if (state == "HANG") {
      s.hangs.insert(call);
    } else {
      s.run_failures[call] = StateNamed(state);
    }
  }
}

void ParseKey(const std::string& key, const nlohmann::json& value, Script& s) {
  if (key == "no_device") {
    s.no_device = value.get<bool>();
  } else if (key == "bdfs") {
    s.bdfs = value.get<std::vector<std::string>>();
  } else if (key == "devices") {
    s.devices = value.get<int>();
  } else if (key == "driver") {
    s.driver = OneOf(value, key, {"in-tree", "out-of-tree"}) == "in-tree"
                   ? Driver::kInTree
                   : Driver::kOutOfTree;
  } else if (key == "npu") {
    s.npu1 = OneOf(value, key, {"npu1", "npu4"}) == "npu1";
  } else if (key == "other_contexts") {
    s.other_contexts = value.get<int>();
  } else if (key == "xrt") {
    s.xrt_219 = OneOf(value, key, {"2.19", "master"}) == "2.19";
  } else if (key == "run_failures") {
    ParseFailures(value, s);
  } else if (key == "bo_alloc_fail") {
    s.bo_alloc_fail = value.get<int64_t>();
  } else if (key == "seed") {
    s.seed = value.get<uint64_t>();
  } else if (key == "jitter") {
    s.jitter = value.get<double>();
  } else if (key == "clock") {
    s.real_clock = OneOf(value, "clock", {"virtual", "real"}) == "real";
  } else if (key == "xrt_version") {
    s.xrt_version = value.get<std::string>();
  } else if (key == "xrt_hash") {
    s.xrt_hash = value.get<std::string>();
  } else if (key == "module_version") {
    s.module_version_set = true;
    if (!value.is_null()) s.module_version = value.get<std::string>();
  } else {
    throw std::runtime_error("fake xrt script: unknown key \"" + key + "\"");
  }
}

Script ParseScript(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("fake xrt script: cannot read " + path);
  const nlohmann::json j = nlohmann::json::parse(in);
  Script s;
  for (const auto& [key, value] : j.items()) ParseKey(key, value, s);
  return s;
}

void LoadLocked(World& w) {
  const char* path = std::getenv("IRONTUNE_FAKE_XRT_SCRIPT");
  w.script = path != nullptr && *path != '\0' ? ParseScript(path) : Script{};
  w.rng.seed(w.script.seed);
  w.loaded = true;
}

// The world, with its script loaded on first use.
std::unique_lock<std::mutex> Lock(World*& out) {
  World& w = TheWorld();
  std::unique_lock<std::mutex> lock(w.mu);
  if (!w.loaded) LoadLocked(w);
  out = &w;
  return lock;
}

void EventLocked(World& w, std::string event) {
  w.events.push_back(std::move(event));
  if (w.events.size() > kMaxEvents) w.events.pop_front();
}

constexpr char kXclbinMagic[] = "xclbin2";  // axlf's m_magic
constexpr size_t kElfHeader = 64;           // the fake's e_ident and pad

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// An ELF as xrt::elf loads it (ELFIO: the magic and a known class; then
// the OS/ABI picks the platform): Xilinx/XRT src/runtime_src/core/common/
// api/xrt_elf.cpp @963c58ee, load_elfio and create_elf_impl. Returns the
// text after the header.
std::string ElfText(const std::string& path, const std::string& bytes) {
  if (bytes.size() < kElfHeader ||
      bytes.compare(0, 4,
                    "\x7f"
                    "ELF") != 0 ||
      (bytes[4] != 1 && bytes[4] != 2)) {
    throw std::runtime_error(path + " is not found or is not a valid ELF file");
  }
  const int abi = static_cast<unsigned char>(bytes[7]);
  if (abi != 69 && abi != 64 && abi != 70 && abi != 75 && abi != 86 &&
      abi != 105) {
    throw std::runtime_error("ELF contains unsupported platform OS/ABI: " +
                             std::to_string(abi));
  }
  return bytes.substr(kElfHeader);
}

// An xclbin as xrt::xclbin reads it: the axlf magic "xclbin2"
// (xrt_xclbin.cpp @963c58ee, init_axlf: "Invalid xclbin").
std::string XclbinText(const std::string& path, const std::string& bytes) {
  if (bytes.empty()) throw std::runtime_error("Failed to open " + path);
  if (bytes.size() < sizeof kXclbinMagic ||
      bytes.compare(0, sizeof kXclbinMagic, kXclbinMagic,
                    sizeof kXclbinMagic) != 0) {
    throw std::runtime_error("Invalid xclbin");
  }
  return bytes.substr(sizeof kXclbinMagic);
}

void ReadViews(const nlohmann::json& j, Design& d) {
  for (const auto& v : j.value("views", nlohmann::json::array())) {
    Design::View view;
    view.arena = v.at("arena").get<int>();
    view.offset = v.at("offset").get<uint64_t>();
    view.nbytes = v.at("nbytes").get<uint64_t>();
    view.io = v.value("io", "none");
    d.views.push_back(view);
  }
}

std::shared_ptr<const Design> ReadDesign(const std::string& path, bool elf) {
  const std::string bytes = ReadFile(path);
  if (elf && bytes.empty()) {
    throw std::runtime_error(path + " is not found or is not a valid ELF file");
  }
  const std::string text = elf ? ElfText(path, bytes) : XclbinText(path, bytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not a fake xrt design: " + e.what());
  }
  auto d = std::make_shared<Design>();
  d->path = path;
  d->elf = elf;
  d->uuid = j.at("uuid").get<std::string>();
  d->kernel = j.at("kernel").get<std::string>();
  d->args = j.value("args", elf ? 3 : 8);
  d->scalar_args = j.value("scalar_args", 0);
  d->columns = j.value("columns", 1);
  d->run_us = j.at("run_us").get<double>();
  d->io = j.value("io", std::vector<std::string>{});
  ReadViews(j, *d);
  d->wrong_output = j.value("wrong_output", false);
  d->scratchpad_words = j.value("scratchpad_words", 0);
  if (d->uuid.size() != 32 || d->run_us < 0 || d->scratchpad_words < 0) {
    throw std::runtime_error(
        path +
        ": uuid must be 32 hex digits, run_us and scratchpad_words >= 0");
  }
  return d;
}

std::shared_ptr<BoState> AllocateBo(size_t size, uint32_t flags,
                                    uint32_t group) {
  World* w;
  auto lock = Lock(w);
  ++w->bo_allocs;
  if (w->script.bo_alloc_fail == w->bo_allocs) throw std::bad_alloc();
  auto bo = std::make_shared<BoState>();
  bo->id = static_cast<int>(w->bo_allocs);
  bo->host.assign(size, 0);
  if (!bo->shared()) bo->own_device.assign(size, 0);
  bo->flags = flags;
  bo->group = group;
  EventLocked(*w, "bo " + std::to_string(bo->id));
  return bo;
}

// The line /sys/module/amdxdna/version holds, or nullopt for none. The
// out-of-tree driver's DKMS package sets it to "VERSION_DATE,HASH"
// (xdna-driver CMake/pkg_driver_source.cmake @856409ca rewrites
// amdxdna_pci_drv.c's MODULE_VERSION; Makefile's XDNA_DRIVER_VERSION
// 2.21.0); the in-tree driver declares no MODULE_VERSION (torvalds/linux
// drivers/accel/amdxdna/amdxdna_pci_drv.c), so there is no file.
std::optional<std::string> ModuleVersion(const Script& s) {
  if (s.module_version_set) return s.module_version;
  if (s.driver == Driver::kInTree) return std::nullopt;
  return "2.21.0_20260821,856409cafc23cee55976ebcaa0a073ab4ec6dfe2";
}

// What xrt::device::get_info<host>() returns: the JSON of XRT's build and
// its drivers, as boost's write_json writes it (every value a string,
// 4-space indents: xrt_device.cpp @963c58ee, get_info and json_str).
// XRT's build: version, branch, hash and its date, named build_hash_date
// on master and build_date in 2.19 (common/sysinfo.cpp get_xrt_info
// @963c58ee, @7d8151e6; the version is settings.cmake's, 2.26.0 on master,
// 2.19.194 for the tag). Drivers: each registered driver once, its
// /sys/module/NAME/version split at the first ',' into version and hash,
// "unknown" for what the file lacks; xocl and xclmgmt left out when
// unknown (pcie/linux/system_linux.cpp @963c58ee, driver_version and
// get_driver_info). The xdna plugin registers two drivers, both named
// "amdxdna" (src/shim/host/pcidrv_amdxdna.cpp @856409ca), so it is one
// entry.
std::string HostInfo(const Script& s) {
  nlohmann::ordered_json j;
  j["version"] = !s.xrt_version.empty() ? s.xrt_version
                                        : (s.xrt_219 ? "2.19.194" : "2.26.0");
  j["branch"] = s.xrt_219 ? "2025.1" : "master";  // [inferred] the branch
  j["hash"] = !s.xrt_hash.empty() ? s.xrt_hash
              : s.xrt_219         ? "7d8151e6ee73c6ec2e99501a58c9c2eca6cc68ce"
                                  : "963c58ee224491e191b3be78d76f51e55e152177";
  j[s.xrt_219 ? "build_date" : "build_hash_date"] =
      s.xrt_219 ? "Sun, 18 May 2025 17:01:38 +0530"
                : "Thu, 20 Aug 2026 14:58:47 -0700";
  std::string version = "unknown";
  std::string hash = "unknown";
  if (const std::optional<std::string> line = ModuleVersion(s)) {
    const size_t comma = line->find(',');
    version = line->substr(0, comma);
    if (comma != std::string::npos) hash = line->substr(comma + 1);
    hash = hash.substr(0, hash.find(','));
  }
  nlohmann::ordered_json driver;
  driver["name"] = "amdxdna";
  driver["version"] = version;
  driver["hash"] = hash;
  j["drivers"] = nlohmann::ordered_json::array({driver});
  return j.dump(4) + "\n";
}

}  // namespace

ContextState::~ContextState() {
  World& w = TheWorld();
  std::lock_guard<std::mutex> lock(w.mu);
  --w.live_contexts;
  const auto it = w.partitions.find(start_col);
  if (it != w.partitions.end() && --it->second.second == 0) {
    w.partitions.erase(it);
  }
}

// Whether the run's command is still in progress: started, not waited to
// its end or aborted, and hanging or not yet through its device time.
bool InProgressLocked(const World& w, const RunState& r) {
  if (!r.started || r.ended) return false;
  return r.hang || std::chrono::steady_clock::now() + w.skipped < r.done;
}

// XRT master aborts the process when a run is destroyed while its command
// is in progress; 2.19 does not check (Xilinx/XRT src/runtime_src/core/
// common/api/xrt_kernel.cpp @963c58ee, ~run_impl, since 52cc0a9cd7).
RunState::~RunState() {
  World& w = TheWorld();
  std::lock_guard<std::mutex> lock(w.mu);
  if (!InProgressLocked(w, *this)) return;
  EventLocked(w, "destroyed in progress");
  if (!w.script.xrt_219) {
    std::fprintf(stderr,
                 "fake xrt: xrt::run destructed while command is still in "
                 "progress\n");
    std::abort();
  }
}

std::string Output(const std::vector<std::string_view>& inputs, size_t nbytes,
                   int position, bool wrong) {
  std::string out(nbytes, '\0');
  const uint32_t seed = 2166136261u ^ (static_cast<uint32_t>(position) << 8);
  for (size_t i = 0; i < nbytes; ++i) {
    uint32_t x = seed + static_cast<uint32_t>(i) * 2654435761u;
    for (std::string_view in : inputs) {
      if (in.empty()) continue;
      x = (x ^ static_cast<unsigned char>(in[i % in.size()])) * 16777619u;
    }
    out[i] = static_cast<char>((x >> 24) ^ (wrong ? 0x5a : 0));
  }
  return out;
}

std::string XclbinFile(const std::string& json) {
  return std::string(kXclbinMagic, sizeof kXclbinMagic) + json;
}

std::string ElfFile(const std::string& json, unsigned char os_abi,
                    unsigned char elf_class) {
  std::string header(kElfHeader, '\0');
  header.replace(0, 4,
                 "\x7f"
                 "ELF");
  header[4] = static_cast<char>(elf_class);  // EI_CLASS
  header[5] = 1;                             // EI_DATA: little-endian
  header[6] = 1;                             // EI_VERSION
  header[7] = static_cast<char>(os_abi);     // EI_OSABI
  return header + json;
}

std::chrono::steady_clock::time_point Now() {
  World* w;
  auto lock = Lock(w);
  return std::chrono::steady_clock::now() + w->skipped;
}

std::chrono::nanoseconds Skipped() {
  World* w;
  auto lock = Lock(w);
  return w->skipped;
}

void Reset() {
  World& w = TheWorld();
  std::lock_guard<std::mutex> lock(w.mu);
  LoadLocked(w);
  w.runs = 0;
  w.bo_allocs = 0;
  w.skipped = std::chrono::nanoseconds(0);
  w.events.clear();
  w.last = StartedRun{};
}

int LiveContexts() {
  World* w;
  auto lock = Lock(w);
  return w->live_contexts;
}

int64_t Runs() {
  World* w;
  auto lock = Lock(w);
  return w->runs;
}

int64_t BoAllocations() {
  World* w;
  auto lock = Lock(w);
  return w->bo_allocs;
}

std::vector<std::string> Events() {
  World* w;
  auto lock = Lock(w);
  return {w->events.begin(), w->events.end()};
}

StartedRun LastStarted() {
  World* w;
  auto lock = Lock(w);
  return w->last;
}

}  // namespace fake_xrt

// The timed span of irontune's XRT backend runs on the double's clock.
std::chrono::steady_clock::time_point irontune::SpanClockNow() {
  return fake_xrt::Now();
}

// ---- The XRT API ----------------------------------------------------------

namespace xrt {

using fake_xrt::Lock;
using fake_xrt::World;

namespace {

bool Xrt219() {
  World* w;
  auto lock = Lock(w);
  return w->script.xrt_219;
}

// XRT refuses an ELF kernel whose signature has scalar arguments: master
// when it reads the ELF (xrt_elf.cpp @963c58ee, construct_kernel_args),
// 2.19 when it makes the kernel (xrt_module.cpp @7d8151e6).
void RefuseScalarArgs(const fake_xrt::Design& d) {
  if (d.scalar_args > 0) {
    throw std::runtime_error(
        "scalar args are not yet supported for this kind of kernel");
  }
}

}  // namespace

xclbin::xclbin(const std::string& filename)
    : design_(fake_xrt::ReadDesign(filename, false)) {}

uuid xclbin::get_uuid() const { return design_ ? uuid(design_->uuid) : uuid(); }

std::vector<xclbin::kernel> xclbin::get_kernels() const {
  if (!design_) return {};
  return {kernel(design_->kernel, static_cast<size_t>(design_->args))};
}

elf::elf(const std::string& fnm) : design_(fake_xrt::ReadDesign(fnm, true)) {
  if (!Xrt219()) RefuseScalarArgs(*design_);
}

// The ELF's kernel "main" (instance "sequence"): its global arguments.
std::vector<elf::kernel> elf::get_kernels() const {
  if (!design_) return {};
  const std::string name = design_->kernel.substr(0, design_->kernel.find(':'));
  return {kernel(name, static_cast<size_t>(design_->args))};
}

device::device(unsigned int didx) {
  World* w;
  auto lock = Lock(w);
  if (w->script.no_device || didx >= static_cast<unsigned>(w->script.devices)) {
    throw std::runtime_error("Could not open device with index '" +
                             std::to_string(didx) + "'");
  }
  state_ = std::make_shared<fake_xrt::DeviceState>();
  state_->index = didx;
  char bdf[16];
  std::snprintf(bdf, sizeof(bdf), "0000:%02x:00.1", (0xc5 + didx) & 0xff);
  state_->bdf = didx < w->script.bdfs.size() ? w->script.bdfs[didx] : bdf;
}

std::any device::get_info_std(info::device param) const {
  if (!state_) throw std::runtime_error("get_info: empty device");
  switch (param) {
    case info::device::bdf:
      return state_->bdf;
    case info::device::host: {
      World* w;
      auto lock = fake_xrt::Lock(w);
      return fake_xrt::HostInfo(w->script);
    }
  }
  throw std::runtime_error("get_info: unknown parameter");
}

uuid device::register_xclbin(const xrt::xclbin& xclbin) {
  if (!state_ || !xclbin.design()) {
    throw std::runtime_error("register_xclbin: empty device or xclbin");
  }
  state_->registered[xclbin.design()->uuid] = xclbin.design();
  return xclbin.get_uuid();
}

namespace {

// What the shim throws when the create-context ioctl fails: a
// std::system_error with the errno (amd/xdna-driver src/shim/host/
// platform_host.cpp and shim_debug.h @856409ca; XRT error.h).
[[noreturn]] void Refused(int err) {
  throw std::system_error(err, std::system_category(),
                          "DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-" +
                              std::to_string(err) + ")");
}

// The NPU's limits. Out-of-tree: its context limit (npu1_regs.c: 6;
// npu4_family.h: 32 @856409ca). In-tree: the firmware's hardware contexts
// (6 on npu1, 16 on the npu4 family: their hwctx_limit there [inferred for
// the in-tree firmware]). Columns
// usable: 4 and 8.
struct Limits {
  int contexts;
  int columns;
};
Limits LimitsOf(const fake_xrt::Script& s) {
  const bool oot = s.driver == fake_xrt::Driver::kOutOfTree;
  if (s.npu1) return {6, 4};
  return {oot ? 32 : 16, 8};
}

// The out-of-tree driver's checks, in its order (aie2_ctx_runqueue.c
// @856409ca, aie2_rq_add): past the context limit ENOENT; wider than the
// array ENOSPC.
void OutOfTree(const World& w, const fake_xrt::Design& d) {
  const Limits l = LimitsOf(w.script);
  if (w.live_contexts + w.script.other_contexts >= l.contexts) Refused(ENOENT);
  if (d.columns > l.columns) Refused(ENOSPC);
}

// The in-tree driver's (torvalds/linux drivers/accel/amdxdna): wider than
// the array EINVAL (aie2_solver.c @323bbfcf, sanity_check); a free
// partition at a multiple of the width [inferred from aie2_ctx.c's column
// list], else one of the same width shared, else ENODEV (get_free_partition,
// allocate_partition); then the firmware refuses past its contexts, which
// the driver reports as EINVAL (aie2_message.c @00ffe45e). Returns the
// partition's start column.
int InTree(World& w, const fake_xrt::Design& d) {
  const Limits l = LimitsOf(w.script);
  if (d.columns < 1 || d.columns > l.columns) Refused(EINVAL);
  int start = -1;
  for (int c = 0; c + d.columns <= l.columns && start < 0; c += d.columns) {
    bool free = true;
    for (const auto& [s, p] : w.partitions)
      free = free && (c + d.columns <= s || s + p.first <= c);
    if (free) start = c;
  }
  int fewest = INT32_MAX;
  for (const auto& [s, p] : w.partitions) {
    if (start >= 0 && fewest == INT32_MAX) break;  // a free one was found
    if (p.first == d.columns && p.second < fewest) {
      fewest = p.second;
      start = s;
    }
  }
  if (start < 0) Refused(ENODEV);
  if (w.live_contexts + w.script.other_contexts >= l.contexts) Refused(EINVAL);
  return start;
}

std::shared_ptr<fake_xrt::ContextState> NewContext(
    const xrt::device& device, std::shared_ptr<const fake_xrt::Design> design,
    bool is_elf) {
  World* w;
  auto lock = Lock(w);
  int start = -1;
  if (w->script.driver == fake_xrt::Driver::kInTree) {
    start = InTree(*w, *design);
    auto& p = w->partitions[start];
    p.first = design->columns;
    ++p.second;
  } else {
    OutOfTree(*w, *design);
  }
  ++w->live_contexts;
  auto c = std::make_shared<fake_xrt::ContextState>();
  c->device = device.state();
  c->design = std::move(design);
  c->elf = is_elf;
  c->start_col = start;
  return c;
}

}  // namespace

hw_context::hw_context(const xrt::device& device, const xrt::uuid& xclbin_id) {
  if (!device.state()) throw std::runtime_error("hw_context: empty device");
  const auto& reg = device.state()->registered;
  const auto it = reg.find(xclbin_id.to_string());
  if (it == reg.end()) {
    throw std::runtime_error("hw_context: xclbin " + xclbin_id.to_string() +
                             " is not registered");
  }
  state_ = NewContext(device, it->second, false);
}

hw_context::hw_context(const xrt::device& device, const xrt::elf& elf,
                       const cfg_param_type&, access_mode) {
  if (!device.state() || !elf.design()) {
    throw std::runtime_error("hw_context: empty device or elf");
  }
  state_ = NewContext(device, elf.design(), true);
}

bo::bo(const xrt::device& device, size_t sz, bo::flags flags,
       xrt::memory_group grp) {
  if (!device.state()) throw std::runtime_error("bo: empty device");
  state_ = fake_xrt::AllocateBo(sz, static_cast<uint32_t>(flags), grp);
}

void bo::sync(xclBOSyncDirection dir, size_t sz, size_t offset) {
  World* w;
  auto lock = Lock(w);
  const size_t size = state_->host.size();
  if (offset > size || sz > size - offset) {
    throw std::system_error(
        EINVAL, std::system_category(),
        "Invalid BO offset and size for sync'ing: " + std::to_string(offset) +
            ", " + std::to_string(sz) + " (err=22)");
  }
  const bool to_device = dir == XCL_BO_SYNC_BO_TO_DEVICE;
  if (!state_->shared()) {
    const auto& from = to_device ? state_->host : state_->own_device;
    auto& to = to_device ? state_->own_device : state_->host;
    std::copy_n(from.begin() + offset, sz, to.begin() + offset);
  }
  if (to_device) ++state_->version;
  fake_xrt::EventLocked(
      *w, std::string(to_device ? "sync_to_device " : "sync_from_device ") +
              std::to_string(state_->id) + " " + std::to_string(offset) + " " +
              std::to_string(sz));
}

void* bo::map() { return state_->host.data(); }

size_t bo::size() const { return state_ ? state_->host.size() : 0; }

ext::bo::bo(const xrt::device& device, size_t sz) {
  if (!device.state()) throw std::runtime_error("bo: empty device");
  state_ = fake_xrt::AllocateBo(
      sz, static_cast<uint32_t>(xrt::bo::flags::host_only), 0);
}

kernel::kernel(const xrt::hw_context& ctx, const std::string& name) {
  if (!ctx.state() || ctx.state()->elf) {
    throw std::runtime_error("kernel: needs a context made from an xclbin");
  }
  if (ctx.state()->design->kernel != name) {
    throw std::runtime_error("kernel: no kernel \"" + name + "\" in " +
                             ctx.state()->design->path);
  }
  state_ = std::make_shared<fake_xrt::KernelState>();
  state_->context = ctx.state();
  state_->name = name;
}

// Memory groups: the double's arg n is connected to group 100 + n.
int kernel::group_id(int argno) const { return 100 + argno; }

ext::kernel::kernel(const xrt::hw_context& ctx, const std::string& name) {
  if (!ctx.state() || !ctx.state()->elf) {
    throw std::runtime_error("ext::kernel: needs a context made from an elf");
  }
  if (ctx.state()->design->kernel != name) {
    throw std::runtime_error("no ELF found with given kernel name in ctx");
  }
  RefuseScalarArgs(*ctx.state()->design);
  state_ = std::make_shared<fake_xrt::KernelState>();
  state_->context = ctx.state();
  state_->name = name;
}

run::command_error::command_error(ert_cmd_state state, const std::string& what)
    : state_(state), what_(what) {}

// A full ELF's run gets its ctrl scratchpad here, sized by the ELF's
// "scratch-pad-ctrl" symbol (xrt_module.cpp @963c58ee; a cacheable bo in
// group 1 in 2.19, @7d8151e6).
run::run(const kernel& krnl) {
  if (!krnl.state()) throw std::runtime_error("run: empty kernel");
  state_ = std::make_shared<fake_xrt::RunState>();
  state_->kernel = krnl.state();
  const fake_xrt::Design& d = *krnl.state()->context->design;
  if (d.elf && d.scratchpad_words > 0) {
    state_->scratchpad = fake_xrt::AllocateBo(
        static_cast<size_t>(d.scratchpad_words) * 4,
        static_cast<uint32_t>(xrt::bo::flags::cacheable), 1);
  }
}

namespace {

const fake_xrt::Design& DesignOf(const fake_xrt::RunState& r) {
  return *r.kernel->context->design;
}

// XRT's argument table: an index past it throws std::out_of_range
// (xrt_kernel.cpp @963c58ee, kernel_impl::get_arg: args.at).
void CheckIndex(const fake_xrt::RunState& r, int index) {
  const int args = DesignOf(r).args;
  if (index < 0 || index >= args) {
    throw std::out_of_range(
        "vector::_M_range_check: __n (which is " + std::to_string(index) +
        ") >= this->size() (which is " + std::to_string(args) + ")");
  }
}

// The bytes a scalar argument holds: an xclbin chain's opcode is 8, its
// instruction count 4 (mlir-aie's MLIR_AIE kernel); every other argument
// is a global's 8-byte address.
size_t ArgBytes(const fake_xrt::Design& d, int index) {
  return !d.elf && index == 2 ? 4 : 8;
}

}  // namespace

// A buffer outside the memory group the argument is connected to is copied
// into one that is, with a warning (xrt_kernel.cpp @963c58ee,
// validate_bo_at_index); an ELF has no connectivity. XRT master refuses
// set_arg on an ELF run in progress; 2.19 does not check.
void run::set_bo_arg(int index, const xrt::bo& bo) {
  if (!bo.state()) throw std::invalid_argument("set_arg: empty bo");
  CheckIndex(*state_, index);
  const fake_xrt::Design& d = DesignOf(*state_);
  World* w;
  auto lock = Lock(w);
  if (d.elf && !w->script.xrt_219 && fake_xrt::InProgressLocked(*w, *state_)) {
    throw std::runtime_error(
        "xrt::run::set_arg called while command is still in progress");
  }
  auto target = bo.state();
  const uint32_t group = static_cast<uint32_t>(100 + index);
  if (!d.elf && target->group != group) {
    auto clone = std::make_shared<fake_xrt::BoState>(*target);
    clone->id = static_cast<int>(++w->bo_allocs);
    clone->group = group;
    std::fprintf(stderr,
                 "fake xrt: [XRT] WARNING: Kernel %s has no compute units with "
                 "connectivity required for global argument at index %d; "
                 "allocating local copy of argument buffer in connected bank\n",
                 d.kernel.c_str(), index);
    fake_xrt::EventLocked(*w, "clone " + std::to_string(target->id) + " " +
                                  std::to_string(clone->id));
    target = std::move(clone);
  }
  state_->args[index] = {std::move(target), 0, false};
}

// XRT copies as many bytes as the argument holds and no more or fewer,
// silently (xrt_kernel.cpp @963c58ee, hs_arg_setter::set_arg_value).
void run::set_bytes_arg(int index, const void* bytes, size_t size) {
  CheckIndex(*state_, index);
  uint64_t raw = 0;
  const size_t n = std::min(size, ArgBytes(DesignOf(*state_), index));
  std::memcpy(&raw, bytes, std::min(n, sizeof raw));
  state_->args[index] = {nullptr, static_cast<int64_t>(raw), true};
}

namespace {

using Args = std::map<int, fake_xrt::Arg>;

std::vector<uint32_t> Words(const std::vector<char>& bytes) {
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

// What the run's device sees: scalars, buffer ids, the instructions.
fake_xrt::StartedRun Seen(const fake_xrt::RunState& r) {
  fake_xrt::StartedRun seen;
  seen.kernel = r.kernel->name;
  for (const auto& [i, a] : r.args) {
    if (a.scalar) {
      seen.scalars[i] = a.value;
    } else {
      seen.buffers[i] = a.bo->id;
    }
  }
  const auto insts = r.args.find(1);
  if (!DesignOf(r).elf && insts != r.args.end() && !insts->second.scalar) {
    seen.insts = Words(insts->second.bo->device());
  }
  if (r.scratchpad) seen.scratchpad = Words(r.scratchpad->device());
  return seen;
}

// A global argument holding a scalar is a bad address: the NPU faults and
// the command ends in ERROR [inferred].
bool BadAddress(const Args& args, const fake_xrt::Design& d) {
  for (const auto& [i, a] : args) {
    if (a.scalar && (d.elf || i == 1 || i >= 3)) return true;
  }
  return false;
}

// The device bytes of the design's buffers, in order, each with its io:
// an xclbin chain's arguments 3..; an ELF's views of its arena arguments.
// False when a view lies outside its arena (the DMA faults).
struct Place {
  std::shared_ptr<fake_xrt::BoState> bo;
  uint64_t offset, nbytes;
  std::string io;
};
bool Places(const Args& args, const fake_xrt::Design& d,
            std::vector<Place>& out) {
  if (!d.elf) {
    size_t k = 0;
    for (const auto& [i, a] : args) {
      if (i < 3 || a.scalar) continue;
      const std::string io = k < d.io.size() ? d.io[k] : "none";
      out.push_back({a.bo, 0, a.bo->device().size(), io});
      ++k;
    }
    return true;
  }
  for (const auto& v : d.views) {
    const auto it = args.find(v.arena);
    if (it == args.end() || it->second.scalar ||
        v.offset + v.nbytes > it->second.bo->device().size()) {
      return false;
    }
    out.push_back({it->second.bo, v.offset, v.nbytes, v.io});
  }
  return true;
}

// Writes what the design's run writes: each "out" and "inout" buffer gets
// fake_xrt::Output of the "in" buffers, on the device. Not again while no
// buffer was synced to the device since (`from`: their versions then).
bool WriteOutputs(const Args& args, const fake_xrt::Design& design,
                  std::vector<uint64_t>& from) {
  std::vector<Place> places;
  if (!Places(args, design, places)) return false;
  if (design.io.empty() && design.views.empty()) return true;
  std::vector<uint64_t> versions;
  for (const Place& p : places) versions.push_back(p.bo->version);
  if (versions == from) return true;
  from = std::move(versions);
  std::vector<std::string> inputs;
  for (const Place& p : places) {
    if (p.io != "in") continue;
    inputs.emplace_back(p.bo->device().data() + p.offset, p.nbytes);
  }
  const std::vector<std::string_view> views(inputs.begin(), inputs.end());
  for (size_t k = 0; k < places.size(); ++k) {
    const Place& p = places[k];
    if (p.io != "out" && p.io != "inout") continue;
    const std::string out = fake_xrt::Output(
        views, p.nbytes, static_cast<int>(k), design.wrong_output);
    std::memcpy(p.bo->device().data() + p.offset, out.data(), out.size());
  }
  return true;
}

}  // namespace

// A run whose command is in progress cannot be started again
// (xrt_kernel.cpp @963c58ee and @7d8151e6, kernel_command::run).
void run::start() {
  if (!state_) throw std::runtime_error("run::start: empty run");
  {
    World* w;
    auto lock = Lock(w);
    if (fake_xrt::InProgressLocked(*w, *state_)) {
      throw std::runtime_error("bad command state, can't launch");
    }
  }
  const fake_xrt::Design& d = DesignOf(*state_);
  fake_xrt::StartedRun seen = Seen(*state_);
  bool ok = !BadAddress(state_->args, d) &&
            WriteOutputs(state_->args, d, state_->outputs_from);
  World* w;
  auto lock = Lock(w);
  ++w->runs;
  std::normal_distribution<double> noise(0.0, w->script.jitter);
  const double us = std::max(0.0, d.run_us * (1.0 + noise(w->rng)));
  const auto fail = w->script.run_failures.find(w->runs);
  state_->final_state = !ok ? ERT_CMD_STATE_ERROR
                        : fail == w->script.run_failures.end()
                            ? ERT_CMD_STATE_COMPLETED
                            : fail->second;
  state_->hang = w->script.hangs.count(w->runs) > 0;
  state_->done = std::chrono::steady_clock::now() + w->skipped +
                 std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
  state_->started = true;
  state_->ended = false;
  w->last = std::move(seen);
  fake_xrt::EventLocked(*w, "start");
}

// Made with the run; every call syncs it from the device first
// (xrt_module.cpp @963c58ee, get_ctrl_scratchpad_bo).
xrt::bo run::get_ctrl_scratchpad_bo() const {
  if (!state_) throw std::runtime_error("get_ctrl_scratchpad_bo: empty run");
  if (!state_->scratchpad) {
    throw std::runtime_error("Control scratchpad memory is not present\n");
  }
  xrt::bo bo(state_->scratchpad);
  bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
  return bo;
}

namespace {

// Waits until `until` on the double's clock: in the virtual mode by moving
// the clock on, in the real one by sleeping (the last 200 us spun).
void WaitUntil(std::chrono::steady_clock::time_point until) {
  {
    World* w;
    auto lock = Lock(w);
    if (!w->script.real_clock) {
      const auto now = std::chrono::steady_clock::now() + w->skipped;
      if (until > now) w->skipped += until - now;
      return;
    }
  }
  const auto spin = std::chrono::microseconds(200);
  if (until - std::chrono::steady_clock::now() > spin) {
    std::this_thread::sleep_until(until - spin);
  }
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Waits for the run: true when it ended, false when `timeout` passed first
// (a hanging command; XRT's wait then leaves it in progress, xrt_kernel.h
// @963c58ee). A hanging command waited without a timeout would block
// forever: the double throws instead.
bool WaitFor(fake_xrt::RunState& r, std::chrono::milliseconds timeout,
             const char* event) {
  if (r.hang) {
    if (timeout.count() == 0) {
      throw std::logic_error(
          "fake xrt: wait() without a timeout on a hanging command");
    }
    WaitUntil(fake_xrt::Now() + timeout);
    World* w;
    auto lock = Lock(w);
    fake_xrt::EventLocked(*w, "timeout");
    return false;
  }
  WaitUntil(r.done);
  World* w;
  auto lock = Lock(w);
  r.ended = true;
  fake_xrt::EventLocked(*w, event);
  return true;
}

}  // namespace

ert_cmd_state run::wait(const std::chrono::milliseconds& timeout) const {
  if (!state_ || !state_->started) return ERT_CMD_STATE_NEW;
  if (!WaitFor(*state_, timeout, "wait")) return ERT_CMD_STATE_TIMEOUT;
  return state_->final_state;
}

std::cv_status run::wait2(const std::chrono::milliseconds& timeout) const {
  if (!state_ || !state_->started) {
    throw std::runtime_error("run::wait2: not started");
  }
  if (!WaitFor(*state_, timeout, "wait2")) return std::cv_status::timeout;
  if (state_->final_state != ERT_CMD_STATE_COMPLETED) {
    throw command_error(state_->final_state, "fake xrt: command failed");
  }
  return std::cv_status::no_timeout;
}

ert_cmd_state run::state() const {
  if (!state_ || !state_->started) return ERT_CMD_STATE_NEW;
  World* w;
  auto lock = Lock(w);
  return fake_xrt::InProgressLocked(*w, *state_) ? ERT_CMD_STATE_RUNNING
                                                 : state_->final_state;
}

// xrt_kernel.cpp @963c58ee, run_impl::abort: a run never started is an
// error; one that ended returns its state; one in progress ends ABORT.
ert_cmd_state run::abort() {
  if (!state_ || !state_->started) {
    throw std::runtime_error("Cannot abort command that wasn't started");
  }
  World* w;
  auto lock = Lock(w);
  if (fake_xrt::InProgressLocked(*w, *state_)) {
    state_->final_state = ERT_CMD_STATE_ABORT;
    state_->hang = false;
    fake_xrt::EventLocked(*w, "abort");
  }
  state_->ended = true;
  return state_->final_state;
}

}  // namespace xrt
