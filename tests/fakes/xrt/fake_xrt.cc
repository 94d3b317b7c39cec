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
#include <random>
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

struct Script {
  bool no_device = false;
  int devices = 1;
  int context_limit = 16;
  std::map<int64_t, ert_cmd_state> run_failures;  // by 1-based run number
  int64_t bo_alloc_fail = 0;  // the 1-based allocation that fails; 0: none
  uint64_t seed = 1;
  double jitter = 0.02;     // relative standard deviation of a run's time
  bool real_clock = false;  // wait() sleeps instead of moving the clock on
  std::vector<std::string> bdfs;  // by device index (get_info<bdf>)
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
};

struct BoState {
  int id = 0;
  std::vector<char> bytes;
  uint32_t flags = 0;
  uint32_t group = 0;
  uint64_t version = 0;      // how many times the host synced it over
  bool scratchpad = false;   // a run's ctrl scratchpad
  std::vector<char> synced;  // scratchpad: its bytes as last synced
};

struct KernelState {
  std::shared_ptr<ContextState> context;
  std::string name;
};

struct RunState {
  std::shared_ptr<KernelState> kernel;
  std::map<int, std::variant<std::shared_ptr<BoState>, int64_t>> args;
  std::chrono::steady_clock::time_point done;
  ert_cmd_state final_state = ERT_CMD_STATE_NEW;
  bool started = false;
  std::shared_ptr<BoState> scratchpad;  // made on first ask
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
                           "\" (ERROR, TIMEOUT, ABORT, NORESPONSE)");
}

Script ParseScript(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("fake xrt script: cannot read " + path);
  const nlohmann::json j = nlohmann::json::parse(in);
  Script s;
  for (const auto& [key, value] : j.items()) {
    if (key == "no_device") {
      s.no_device = value.get<bool>();
    } else if (key == "bdfs") {
      s.bdfs = value.get<std::vector<std::string>>();
    } else if (key == "devices") {
      s.devices = value.get<int>();
    } else if (key == "context_limit") {
      s.context_limit = value.get<int>();
    } else if (key == "run_failures") {
      for (const auto& f : value) {
        s.run_failures[f.at("call").get<int64_t>()] =
            StateNamed(f.at("state").get<std::string>());
      }
    } else if (key == "bo_alloc_fail") {
      s.bo_alloc_fail = value.get<int64_t>();
    } else if (key == "seed") {
      s.seed = value.get<uint64_t>();
    } else if (key == "jitter") {
      s.jitter = value.get<double>();
    } else if (key == "clock") {
      const std::string mode = value.get<std::string>();
      if (mode != "virtual" && mode != "real") {
        throw std::runtime_error("fake xrt script " + path +
                                 ": clock must be \"virtual\" or \"real\"");
      }
      s.real_clock = mode == "real";
    } else {
      throw std::runtime_error("fake xrt script " + path + ": unknown key \"" +
                               key + "\"");
    }
  }
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

std::shared_ptr<const Design> ReadDesign(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not a fake xrt design: " + e.what());
  }
  if (!j.is_object() || j.value("fake_xrt", 0) != 1) {
    throw std::runtime_error(path +
                             ": not a fake xrt design (no \"fake_xrt\": 1)");
  }
  auto d = std::make_shared<Design>();
  d->path = path;
  d->uuid = j.at("uuid").get<std::string>();
  d->kernel = j.at("kernel").get<std::string>();
  d->run_us = j.at("run_us").get<double>();
  d->io = j.value("io", std::vector<std::string>{});
  d->wrong_output = j.value("wrong_output", false);
  d->scratchpad_words = j.value("scratchpad_words", 0);
  if (d->uuid.size() != 32 || d->run_us < 0 || d->scratchpad_words < 0) {
    throw std::runtime_error(
        path +
        ": uuid must be 32 hex digits, run_us and scratchpad_words >= 0");
  }
  for (const std::string& io : d->io) {
    if (io != "in" && io != "out" && io != "inout" && io != "none") {
      throw std::runtime_error(path + ": io \"" + io +
                               "\" is not in, out, inout or none");
    }
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
  bo->bytes.assign(size, 0);
  bo->flags = flags;
  bo->group = group;
  EventLocked(*w, "bo " + std::to_string(bo->id));
  return bo;
}

bool HasFlag(const BoState& bo, xrt::bo::flags f) {
  return (bo.flags & static_cast<uint32_t>(f)) != 0;
}

}  // namespace

ContextState::~ContextState() {
  World& w = TheWorld();
  std::lock_guard<std::mutex> lock(w.mu);
  --w.live_contexts;
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

xclbin::xclbin(const std::string& filename)
    : design_(fake_xrt::ReadDesign(filename)) {}

uuid xclbin::get_uuid() const { return design_ ? uuid(design_->uuid) : uuid(); }

elf::elf(const std::string& fnm) : design_(fake_xrt::ReadDesign(fnm)) {}

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

std::shared_ptr<fake_xrt::ContextState> NewContext(
    const xrt::device& device, std::shared_ptr<const fake_xrt::Design> design,
    bool is_elf) {
  World* w;
  auto lock = Lock(w);
  if (w->live_contexts >= w->script.context_limit) {
    throw std::system_error(EBUSY, std::generic_category(),
                            "DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed");
  }
  ++w->live_contexts;
  auto c = std::make_shared<fake_xrt::ContextState>();
  c->device = device.state();
  c->design = std::move(design);
  c->elf = is_elf;
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

void bo::sync(xclBOSyncDirection dir) {
  World* w;
  auto lock = Lock(w);
  if (dir == XCL_BO_SYNC_BO_TO_DEVICE) ++state_->version;
  if (state_->scratchpad && dir == XCL_BO_SYNC_BO_TO_DEVICE) {
    state_->synced = state_->bytes;
  }
  fake_xrt::EventLocked(
      *w, (dir == XCL_BO_SYNC_BO_TO_DEVICE ? "sync_to_device "
                                           : "sync_from_device ") +
              std::to_string(state_->id));
}

void* bo::map() { return state_->bytes.data(); }

size_t bo::size() const { return state_ ? state_->bytes.size() : 0; }

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

// Memory groups: arg n's buffers live in group 100 + n, so a buffer in the
// wrong group is seen at start.
int kernel::group_id(int argno) const { return 100 + argno; }

ext::kernel::kernel(const xrt::hw_context& ctx, const std::string& name) {
  if (!ctx.state() || !ctx.state()->elf) {
    throw std::runtime_error("ext::kernel: needs a context made from an elf");
  }
  if (ctx.state()->design->kernel != name) {
    throw std::runtime_error("ext::kernel: no kernel \"" + name + "\" in " +
                             ctx.state()->design->path);
  }
  state_ = std::make_shared<fake_xrt::KernelState>();
  state_->context = ctx.state();
  state_->name = name;
}

run::command_error::command_error(ert_cmd_state state, const std::string& what)
    : state_(state), what_(what) {}

run::run(const kernel& krnl) {
  if (!krnl.state()) throw std::runtime_error("run: empty kernel");
  state_ = std::make_shared<fake_xrt::RunState>();
  state_->kernel = krnl.state();
}

void run::set_bo_arg(int index, const xrt::bo& bo) {
  if (!bo.state()) throw std::invalid_argument("set_arg: empty bo");
  state_->args[index] = bo.state();
}

void run::set_bytes_arg(int index, const void* bytes, size_t size) {
  int64_t v = 0;
  if (size == 4) {
    int32_t i;
    std::memcpy(&i, bytes, 4);
    v = i;
  } else if (size == 8) {
    std::memcpy(&v, bytes, 8);
  } else {
    throw std::invalid_argument("set_arg: scalar of " + std::to_string(size) +
                                " bytes");
  }
  state_->args[index] = v;
}

namespace {

using Args =
    std::map<int, std::variant<std::shared_ptr<fake_xrt::BoState>, int64_t>>;

void Fail(const std::string& what) {
  throw std::invalid_argument("run::start: " + what);
}

// Checks an xclbin-chain call: opcode 3, the instruction buffer (cacheable,
// group_id(1)) and its word count, host-only data buffers in group_id(n).
void CheckChainArgs(const Args& args, fake_xrt::StartedRun& seen) {
  if (args.size() < 3) Fail("fewer than 3 arguments");
  for (const auto& [i, a] : args) {
    if (i < 3) continue;
    const auto* b = std::get_if<std::shared_ptr<fake_xrt::BoState>>(&a);
    if (b == nullptr) Fail("arg " + std::to_string(i) + " is not a buffer");
    if ((*b)->group != static_cast<uint32_t>(100 + i) ||
        !fake_xrt::HasFlag(**b, xrt::bo::flags::host_only)) {
      Fail("arg " + std::to_string(i) + " not host_only in group_id(" +
           std::to_string(i) + ")");
    }
    seen.buffers[i] = (*b)->id;
  }
  const auto* op = std::get_if<int64_t>(&args.at(0));
  if (op == nullptr || *op != 3) Fail("arg 0 (opcode) is not 3");
  const auto* insts =
      std::get_if<std::shared_ptr<fake_xrt::BoState>>(&args.at(1));
  if (insts == nullptr || (*insts)->group != 101 ||
      !fake_xrt::HasFlag(**insts, xrt::bo::flags::cacheable)) {
    Fail("arg 1 is not a cacheable buffer in group_id(1)");
  }
  const auto* words = std::get_if<int64_t>(&args.at(2));
  const size_t n = (*insts)->bytes.size() / 4;
  if (words == nullptr || *words != static_cast<int64_t>(n)) {
    Fail("arg 2 is not the instruction word count " + std::to_string(n));
  }
  seen.insts.resize(n);
  std::memcpy(seen.insts.data(), (*insts)->bytes.data(), n * 4);
  seen.scalars[0] = *op;
  seen.scalars[2] = *words;
}

void CheckElfArgs(const Args& args, fake_xrt::StartedRun& seen) {
  for (const auto& [i, a] : args) {
    if (const auto* v = std::get_if<int64_t>(&a)) {
      seen.scalars[i] = *v;
      continue;
    }
    const auto& b = std::get<std::shared_ptr<fake_xrt::BoState>>(a);
    if (!fake_xrt::HasFlag(*b, xrt::bo::flags::host_only)) {
      Fail("arg " + std::to_string(i) + " is not host_only");
    }
    seen.buffers[i] = b->id;
  }
}

// The data buffers of a run in argument order: an xclbin chain's from
// argument 3, a full ELF's from 0.
std::vector<std::shared_ptr<fake_xrt::BoState>> DataBuffers(const Args& args,
                                                            bool chain) {
  std::vector<std::shared_ptr<fake_xrt::BoState>> out;
  for (const auto& [i, a] : args) {
    const auto* b = std::get_if<std::shared_ptr<fake_xrt::BoState>>(&a);
    if (b != nullptr && (!chain || i >= 3)) out.push_back(*b);
  }
  return out;
}

// Writes what the design's run writes: each "out" and "inout" buffer gets
// fake_xrt::Output of the "in" buffers. Not again while no buffer was
// synced to the device since (`from`: their versions when last written).
void WriteOutputs(const Args& args, bool chain, const fake_xrt::Design& design,
                  std::vector<uint64_t>& from) {
  const auto buffers = DataBuffers(args, chain);
  if (design.io.empty()) return;
  if (design.io.size() != buffers.size()) {
    Fail(std::to_string(buffers.size()) + " data buffers, the design has " +
         std::to_string(design.io.size()));
  }
  std::vector<uint64_t> versions;
  for (const auto& b : buffers) versions.push_back(b->version);
  if (versions == from) return;
  from = std::move(versions);
  std::vector<std::string_view> inputs;
  for (size_t k = 0; k < buffers.size(); ++k) {
    if (design.io[k] != "in") continue;
    inputs.emplace_back(buffers[k]->bytes.data(), buffers[k]->bytes.size());
  }
  for (size_t k = 0; k < buffers.size(); ++k) {
    if (design.io[k] != "out" && design.io[k] != "inout") continue;
    const std::string out =
        fake_xrt::Output(inputs, buffers[k]->bytes.size(), static_cast<int>(k),
                         design.wrong_output);
    std::memcpy(buffers[k]->bytes.data(), out.data(), out.size());
  }
}

std::vector<uint32_t> Words(const std::vector<char>& bytes) {
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

}  // namespace

void run::start() {
  if (!state_) throw std::runtime_error("run::start: empty run");
  const auto& ctx = *state_->kernel->context;
  fake_xrt::StartedRun seen;
  seen.kernel = state_->kernel->name;
  if (ctx.elf) {
    CheckElfArgs(state_->args, seen);
  } else {
    CheckChainArgs(state_->args, seen);
  }
  WriteOutputs(state_->args, !ctx.elf, *ctx.design, state_->outputs_from);
  World* w;
  auto lock = Lock(w);
  if (state_->scratchpad) seen.scratchpad = Words(state_->scratchpad->synced);
  ++w->runs;
  std::normal_distribution<double> noise(0.0, w->script.jitter);
  const double us = std::max(0.0, ctx.design->run_us * (1.0 + noise(w->rng)));
  const auto fail = w->script.run_failures.find(w->runs);
  state_->final_state = fail == w->script.run_failures.end()
                            ? ERT_CMD_STATE_COMPLETED
                            : fail->second;
  state_->done = std::chrono::steady_clock::now() + w->skipped +
                 std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
  state_->started = true;
  w->last = std::move(seen);
  fake_xrt::EventLocked(*w, "start");
}

xrt::bo run::get_ctrl_scratchpad_bo() const {
  if (!state_) throw std::runtime_error("get_ctrl_scratchpad_bo: empty run");
  const auto& ctx = *state_->kernel->context;
  if (!ctx.elf || ctx.design->scratchpad_words == 0) {
    throw std::runtime_error("get_ctrl_scratchpad_bo: " + ctx.design->path +
                             " has no ctrl scratchpad section");
  }
  if (!state_->scratchpad) {
    state_->scratchpad = fake_xrt::AllocateBo(
        static_cast<size_t>(ctx.design->scratchpad_words) * 4,
        static_cast<uint32_t>(xrt::bo::flags::host_only), 0);
    state_->scratchpad->scratchpad = true;
  }
  return xrt::bo(state_->scratchpad);
}

namespace {

// Waits until the run's device time has passed on the double's clock: in
// the virtual mode by moving the clock on, in the real one by sleeping (the
// last 200 us spun).
void WaitUntil(std::chrono::steady_clock::time_point done) {
  {
    World* w;
    auto lock = Lock(w);
    if (!w->script.real_clock) {
      const auto now = std::chrono::steady_clock::now() + w->skipped;
      if (done > now) w->skipped += done - now;
      return;
    }
  }
  const auto spin = std::chrono::microseconds(200);
  if (done - std::chrono::steady_clock::now() > spin) {
    std::this_thread::sleep_until(done - spin);
  }
  while (std::chrono::steady_clock::now() < done) {
  }
}

}  // namespace

ert_cmd_state run::wait(const std::chrono::milliseconds&) const {
  if (!state_ || !state_->started) return ERT_CMD_STATE_NEW;
  WaitUntil(state_->done);
  World* w;
  auto lock = Lock(w);
  fake_xrt::EventLocked(*w, "wait");
  return state_->final_state;
}

std::cv_status run::wait2(const std::chrono::milliseconds&) const {
  if (!state_ || !state_->started) {
    throw std::runtime_error("run::wait2: not started");
  }
  WaitUntil(state_->done);
  {
    World* w;
    auto lock = Lock(w);
    fake_xrt::EventLocked(*w, "wait2");
  }
  if (state_->final_state != ERT_CMD_STATE_COMPLETED) {
    throw command_error(state_->final_state, "fake xrt: command failed");
  }
  return std::cv_status::no_timeout;
}

ert_cmd_state run::state() const {
  return state_ ? state_->final_state : ERT_CMD_STATE_NEW;
}

}  // namespace xrt
