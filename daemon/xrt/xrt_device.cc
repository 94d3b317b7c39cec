#include "daemon/xrt/xrt_device.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <sstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "daemon/base/big_bytes.h"
#include "daemon/xrt/artifact_manifest.h"
#include "daemon/xrt/span_clock.h"
#include "spdlog/spdlog.h"
#include "xrt/experimental/xrt_elf.h"
#include "xrt/experimental/xrt_ext.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_hw_context.h"
#include "xrt/xrt_kernel.h"

namespace irontune {

absl::StatusOr<unsigned int> ParseXrtSpec(absl::string_view spec) {
  absl::string_view rest = spec;
  unsigned int index = 0;
  if (!absl::ConsumePrefix(&rest, "xrt:") || rest.empty() ||
      !absl::SimpleAtoi(rest, &index) || index > 63) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device \"", spec, "\": a real NPU is xrt:N, N its index (xrt:0)"));
  }
  return index;
}

namespace {

constexpr char kElfKernel[] = "main:sequence";

// The seam speaks std::string_view; this Abseil has its own.
absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }
constexpr unsigned int kOpcode = 3;  // the NPU's "run the instructions"

std::string StateName(ert_cmd_state state) {
  switch (state) {
    case ERT_CMD_STATE_NEW:
      return "ERT_CMD_STATE_NEW";
    case ERT_CMD_STATE_QUEUED:
      return "ERT_CMD_STATE_QUEUED";
    case ERT_CMD_STATE_RUNNING:
      return "ERT_CMD_STATE_RUNNING";
    case ERT_CMD_STATE_COMPLETED:
      return "ERT_CMD_STATE_COMPLETED";
    case ERT_CMD_STATE_ERROR:
      return "ERT_CMD_STATE_ERROR";
    case ERT_CMD_STATE_ABORT:
      return "ERT_CMD_STATE_ABORT";
    case ERT_CMD_STATE_SUBMITTED:
      return "ERT_CMD_STATE_SUBMITTED";
    case ERT_CMD_STATE_TIMEOUT:
      return "ERT_CMD_STATE_TIMEOUT";
    case ERT_CMD_STATE_NORESPONSE:
      return "ERT_CMD_STATE_NORESPONSE";
    default:
      return absl::StrCat("ert_cmd_state ", static_cast<int>(state));
  }
}

// A failed run's status: a device that stopped answering is Unavailable,
// an error in the design Internal.
absl::Status RunFailed(ert_cmd_state state, int step) {
  const std::string what = absl::StrCat("NPU run of step ", step, " ended in ",
                                        StateName(state), ", not COMPLETED");
  if (state == ERT_CMD_STATE_TIMEOUT || state == ERT_CMD_STATE_NORESPONSE) {
    return absl::UnavailableError(what);
  }
  return absl::InternalError(what);
}

// Runs `f`, turning what XRT throws into a Status about `what`.
template <typename F>
absl::Status Guard(absl::string_view what, F&& f) {
  try {
    f();
    return absl::OkStatus();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": out of memory"));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

absl::StatusOr<std::vector<uint32_t>> ReadInsts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("instructions ", path, ": cannot read"));
  }
  std::stringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  if (bytes.empty() || bytes.size() % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("instructions ", path, ": ", bytes.size(),
                     " bytes, not a non-empty whole number of 32-bit words"));
  }
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

}  // namespace

struct XrtDevice::Impl {
  XrtDeviceOptions options;
  ::xrt::device device;
  XrtSmi smi;
  TimingHygiene hygiene;
  int contexts = 0;
  Platform opened;  // as read at open: what does not change

  Impl(XrtDeviceOptions o)
      : options(std::move(o)), smi(options.smi), hygiene(options.hygiene) {}

  void ContextMade() {
    // The driver requests a context's completion IRQ as it creates it.
    hygiene.ContextCreated(opened.power_mode);
    if (contexts++ == 0) hygiene.Spin();
  }
  void ContextReleased() {
    if (--contexts == 0) hygiene.StopSpinning();
  }
  // The status of failing to create a hardware context.
  absl::Status ContextFailed(const std::exception& e) const;
};

absl::Status XrtDevice::Impl::ContextFailed(const std::exception& e) const {
  const auto* se = dynamic_cast<const std::system_error*>(&e);
  const int code = se != nullptr ? se->code().value() : 0;
  const std::string held =
      absl::StrCat("irontuned holds ", contexts, " hardware context",
                   contexts == 1 ? "" : "s", " of NPU ", options.index);
  if (code == EBUSY || code == ENOSPC || code == EAGAIN || code == ENOMEM) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no hardware context is free (", held,
        "; other processes may hold the rest: see `xrt-smi examine -r "
        "aie-partitions`): ",
        e.what()));
  }
  return absl::InternalError(absl::StrCat("cannot create a hardware context (",
                                          held, "): ", e.what()));
}

namespace {

// One data buffer: its bo and where the artifact puts it.
struct DataBuffer {
  ArtifactBuffer info;
  ::xrt::bo bo;
};

class XrtImage : public Image {
 public:
  XrtImage(XrtDevice::Impl* device, const Artifact& artifact,
           XrtManifest manifest)
      : device_(device), artifact_(artifact), manifest_(std::move(manifest)) {}
  ~XrtImage() override {
    runs_.clear();
    buffers_.clear();
    kernel_ = ::xrt::kernel();
    if (held_) {
      context_ = ::xrt::hw_context();
      device_->ContextReleased();
    }
  }

  absl::Status Open();
  absl::Status WriteValues(
      const std::map<std::string, int64_t>& values) override;
  absl::Status WriteBuffer(std::string_view name,
                           std::string_view bytes) override;
  absl::StatusOr<std::string> ReadBuffer(std::string_view name) override;
  absl::StatusOr<RunResult> Run() override;

 private:
  bool chain() const {
    return manifest_.packaging == v1::PACKAGING_XCLBIN_CHAIN;
  }
  absl::Status OpenChain();
  absl::Status OpenElf();
  absl::Status MakeBuffers();
  absl::Status MakeRuns();
  absl::Status MakeScratchpads();
  absl::Status WriteScratchpads(
      const std::vector<std::pair<const XrtManifestSymbol*, int32_t>>& writes);
  absl::StatusOr<DataBuffer*> Find(std::string_view name);
  absl::Status RunSteps();

  XrtDevice::Impl* device_;
  const Artifact artifact_;
  const XrtManifest manifest_;
  bool held_ = false;
  ::xrt::hw_context context_;
  ::xrt::kernel kernel_;
  std::vector<uint32_t> insts_;
  ::xrt::bo insts_bo_;
  std::vector<DataBuffer> buffers_;
  // Per step: the indexes into buffers_ of its kernel's buffer arguments.
  std::vector<std::vector<int>> step_args_;
  std::vector<::xrt::run> runs_;
  // Full ELF with scratchpad symbols: each run's ctrl scratchpad.
  std::vector<::xrt::bo> scratchpads_;
};

absl::Status XrtImage::Open() {
  RETURN_IF_ERROR(chain() ? OpenChain() : OpenElf());
  RETURN_IF_ERROR(MakeBuffers());
  RETURN_IF_ERROR(MakeRuns());
  return MakeScratchpads();
}

absl::Status XrtImage::OpenChain() {
  ASSIGN_OR_RETURN(insts_, ReadInsts(manifest_.insts));
  for (const XrtManifestSymbol& s : manifest_.symbols) {
    if (s.insts_word >= static_cast<int>(insts_.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("artifact manifest: symbol \"", s.name,
                       "\" patches word ", s.insts_word, " of ",
                       manifest_.insts, ", which has ", insts_.size()));
    }
  }
  ::xrt::uuid uuid;
  RETURN_IF_ERROR(Guard(absl::StrCat("xclbin ", manifest_.xclbin), [&] {
    const ::xrt::xclbin xclbin(manifest_.xclbin);
    uuid = device_->device.register_xclbin(xclbin);
  }));
  try {
    context_ = ::xrt::hw_context(device_->device, uuid);
  } catch (const std::exception& e) {
    return device_->ContextFailed(e);
  }
  held_ = true;
  device_->ContextMade();
  RETURN_IF_ERROR(Guard(absl::StrCat("kernel ", manifest_.kernel), [&] {
    kernel_ = ::xrt::kernel(context_, manifest_.kernel);
  }));
  return Guard("instruction buffer", [&] {
    insts_bo_ = ::xrt::bo(device_->device, insts_.size() * 4,
                          ::xrt::bo::flags::cacheable, kernel_.group_id(1));
    std::memcpy(insts_bo_.map<void*>(), insts_.data(), insts_.size() * 4);
    insts_bo_.sync(XCL_BO_SYNC_BO_TO_DEVICE);
  });
}

absl::Status XrtImage::OpenElf() {
  ::xrt::elf elf;
  RETURN_IF_ERROR(Guard(absl::StrCat("ELF ", manifest_.elf),
                        [&] { elf = ::xrt::elf(manifest_.elf); }));
  try {
    context_ = ::xrt::hw_context(device_->device, elf);
  } catch (const std::exception& e) {
    return device_->ContextFailed(e);
  }
  held_ = true;
  device_->ContextMade();
  return Guard(absl::StrCat("kernel ", kElfKernel),
               [&] { kernel_ = ::xrt::ext::kernel(context_, kElfKernel); });
}

absl::Status XrtImage::MakeBuffers() {
  const int steps = artifact_.distinct ? artifact_.steps : 1;
  step_args_.assign(artifact_.steps, {});
  std::vector<std::vector<int>> of_step(steps);
  for (const ArtifactBuffer& b : artifact_.buffers) {
    if (b.step < 0 || b.step >= steps) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact buffer ", b.name, ": step ", b.step, " of ", steps));
    }
    of_step[b.step].push_back(static_cast<int>(buffers_.size()));
    buffers_.push_back({b, {}});
  }
  for (int s = 0; s < artifact_.steps; ++s) {
    std::vector<int> args = of_step[artifact_.distinct ? s : 0];
    std::sort(args.begin(), args.end(), [&](int a, int b) {
      return buffers_[a].info.op_buffer < buffers_[b].info.op_buffer;
    });
    step_args_[s] = std::move(args);
  }
  // A buffer's memory group is that of its argument position.
  for (int s = 0; s < steps; ++s) {
    for (size_t k = 0; k < step_args_[s].size(); ++k) {
      DataBuffer& d = buffers_[step_args_[s][k]];
      const size_t size = std::max<uint64_t>(d.info.nbytes, 4);
      absl::Status made = Guard(absl::StrCat("buffer ", d.info.name), [&] {
        d.bo = chain() ? ::xrt::bo(device_->device, size,
                                   ::xrt::bo::flags::host_only,
                                   kernel_.group_id(3 + static_cast<int>(k)))
                       : ::xrt::bo(::xrt::ext::bo(device_->device, size));
      });
      if (!made.ok()) {
        return absl::ResourceExhaustedError(
            absl::StrCat("cannot allocate buffer ", d.info.name, " (",
                         d.info.nbytes, " bytes): ", made.message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status XrtImage::MakeRuns() {
  const int first_value_arg = static_cast<int>(step_args_[0].size());
  for (const XrtManifestSymbol& s : manifest_.symbols) {
    if (s.arg >= 0 && s.arg < first_value_arg) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact manifest: symbol \"", s.name, "\" is argument ", s.arg,
          ", which is buffer ", buffers_[step_args_[0][s.arg]].info.name));
    }
  }
  return Guard("kernel arguments", [&] {
    for (int s = 0; s < artifact_.steps; ++s) {
      ::xrt::run run(kernel_);
      const int base = chain() ? 3 : 0;
      if (chain()) {
        run.set_arg(0, kOpcode);
        run.set_arg(1, insts_bo_);
        run.set_arg(2, static_cast<uint32_t>(insts_.size()));
      }
      for (size_t k = 0; k < step_args_[s].size(); ++k) {
        run.set_arg(base + static_cast<int>(k), buffers_[step_args_[s][k]].bo);
      }
      for (const XrtManifestSymbol& sym : manifest_.symbols) {
        if (sym.arg >= 0) run.set_arg(sym.arg, int32_t{0});
      }
      runs_.push_back(std::move(run));
    }
  });
}

// Each run's ctrl scratchpad, when a symbol is written there, with the
// symbols' words zeroed and synced to the device.
absl::Status XrtImage::MakeScratchpads() {
  std::vector<std::pair<const XrtManifestSymbol*, int32_t>> zeros;
  for (const XrtManifestSymbol& s : manifest_.symbols) {
    if (s.scratchpad_word >= 0) zeros.emplace_back(&s, 0);
  }
  if (zeros.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(Guard("ctrl scratchpad", [&] {
    for (const ::xrt::run& run : runs_) {
      scratchpads_.push_back(run.get_ctrl_scratchpad_bo());
    }
  }));
  const size_t words = scratchpads_.front().size() / 4;
  for (const auto& [s, zero] : zeros) {
    if (static_cast<size_t>(s->scratchpad_word) >= words) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact manifest: symbol \"", s->name, "\" is scratchpad word ",
          s->scratchpad_word, ", but the ctrl scratchpad of ", manifest_.elf,
          " has ", words, " words"));
    }
  }
  return WriteScratchpads(zeros);
}

absl::Status XrtImage::WriteScratchpads(
    const std::vector<std::pair<const XrtManifestSymbol*, int32_t>>& writes) {
  return Guard("ctrl scratchpad", [&] {
    for (::xrt::bo& bo : scratchpads_) {
      auto* words = bo.map<int32_t*>();
      for (const auto& [sym, v] : writes) {
        if (sym->scratchpad_word >= 0) words[sym->scratchpad_word] = v;
      }
      bo.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    }
  });
}

absl::Status XrtImage::WriteValues(
    const std::map<std::string, int64_t>& values) {
  std::vector<std::pair<const XrtManifestSymbol*, int32_t>> writes;
  for (const auto& entry : values) {
    const std::string& name = entry.first;
    const int64_t value = entry.second;
    const auto it = std::find_if(
        manifest_.symbols.begin(), manifest_.symbols.end(),
        [&name](const XrtManifestSymbol& s) { return s.name == name; });
    if (it == manifest_.symbols.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the image takes no per-call value \"", name, "\""));
    }
    if (value < INT32_MIN || value > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(
          "per-call value ", name, " = ", value, " does not fit 32 bits"));
    }
    writes.emplace_back(&*it, static_cast<int32_t>(value));
  }
  if (writes.empty()) return absl::OkStatus();
  if (!scratchpads_.empty()) RETURN_IF_ERROR(WriteScratchpads(writes));
  return Guard("per-call values", [&] {
    for (const auto& [sym, v] : writes) {
      if (sym->insts_word >= 0) {
        insts_[sym->insts_word] = static_cast<uint32_t>(v);
      } else if (sym->arg >= 0) {
        for (::xrt::run& run : runs_) run.set_arg(sym->arg, v);
      }
    }
    if (chain()) {
      std::memcpy(insts_bo_.map<void*>(), insts_.data(), insts_.size() * 4);
      insts_bo_.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    }
  });
}

absl::StatusOr<DataBuffer*> XrtImage::Find(std::string_view name) {
  for (DataBuffer& d : buffers_)
    if (d.info.name == name) return &d;
  return absl::InvalidArgumentError(
      absl::StrCat("the image has no buffer \"", A(name), "\""));
}

absl::Status XrtImage::WriteBuffer(std::string_view name,
                                   std::string_view bytes) {
  ASSIGN_OR_RETURN(DataBuffer * d, Find(name));
  if (bytes.size() != d->info.nbytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer ", A(name), " holds ", d->info.nbytes,
                     " bytes, not ", bytes.size()));
  }
  return Guard(absl::StrCat("buffer ", A(name)), [&] {
    std::memcpy(d->bo.map<void*>(), bytes.data(), bytes.size());
    d->bo.sync(XCL_BO_SYNC_BO_TO_DEVICE);
  });
}

absl::StatusOr<std::string> XrtImage::ReadBuffer(std::string_view name) {
  ASSIGN_OR_RETURN(DataBuffer * d, Find(name));
  std::string out = ZeroBytes(d->info.nbytes);
  RETURN_IF_ERROR(Guard(absl::StrCat("buffer ", A(name)), [&] {
    d->bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    std::memcpy(out.data(), d->bo.map<void*>(), out.size());
  }));
  return out;
}

// Every step: start, then wait for it. Inside the timed span: nothing else.
absl::Status XrtImage::RunSteps() {
  const auto timeout = device_->options.run_timeout;
  for (size_t s = 0; s < runs_.size(); ++s) {
    try {
      runs_[s].start();
      if (chain()) {
        const ert_cmd_state state = runs_[s].wait(timeout);
        if (state != ERT_CMD_STATE_COMPLETED) return RunFailed(state, s);
      } else if (runs_[s].wait2(timeout) == std::cv_status::timeout) {
        return absl::UnavailableError(absl::StrCat("NPU run of step ", s,
                                                   " did not complete within ",
                                                   timeout.count(), " ms"));
      }
    } catch (const ::xrt::run::command_error& e) {
      return RunFailed(e.get_command_state(), s);
    } catch (const std::exception& e) {
      return absl::InternalError(
          absl::StrCat("NPU run of step ", s, ": ", e.what()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RunResult> XrtImage::Run() {
  TimingHygiene& hygiene = device_->hygiene;
  hygiene.Pin();
  const std::optional<int64_t> wait0 = hygiene.CpuWaitNs();
  const auto t0 = SpanClockNow();
  const absl::Status ran = RunSteps();
  const auto t1 = SpanClockNow();
  const std::optional<int64_t> wait1 = hygiene.CpuWaitNs();
  hygiene.Unpin();
  RETURN_IF_ERROR(ran);
  RunResult r;
  r.elapsed_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  if (wait0 && wait1) r.cpu_wait_us = (*wait1 - *wait0) / 1000.0;
  return r;
}

// The manifest of `artifact`, checked against it and the platform.
absl::StatusOr<XrtManifest> CheckedManifest(const Artifact& artifact,
                                            const Platform& platform) {
  ASSIGN_OR_RETURN(XrtManifest m, ParseXrtManifest(artifact.payload));
  if (artifact.packaging != v1::PACKAGING_UNSPECIFIED &&
      artifact.packaging != m.packaging) {
    return absl::InvalidArgumentError(
        "artifact: its packaging and its manifest's disagree");
  }
  if (m.packaging == v1::PACKAGING_FULL_ELF && !platform.full_elf) {
    return absl::InvalidArgumentError(
        absl::StrCat(platform.name, " (", platform.generation,
                     ") has no full-ELF dispatch; build for the xclbin chain"));
  }
  for (const std::string& name : artifact.symbols) {
    if (std::none_of(
            m.symbols.begin(), m.symbols.end(),
            [&](const XrtManifestSymbol& s) { return s.name == name; })) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact: symbol \"", name, "\" has no place in the manifest"));
    }
  }
  if (artifact.steps < 1) {
    return absl::InvalidArgumentError("artifact: steps must be >= 1");
  }
  return m;
}

}  // namespace

XrtDevice::XrtDevice(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

XrtDevice::~XrtDevice() = default;

absl::StatusOr<std::unique_ptr<XrtDevice>> XrtDevice::Open(
    XrtDeviceOptions options) {
  if (options.own_pid == 0) options.own_pid = static_cast<int>(::getpid());
  const unsigned int index = options.index;
  auto impl = std::make_unique<Impl>(std::move(options));
  try {
    impl->device = ::xrt::device(index);
    // xrt-smi reports on this NPU, not on its first: -d BDF.
    impl->options.smi.bdf = impl->device.get_info<::xrt::info::device::bdf>();
    impl->smi = XrtSmi(impl->options.smi);
  } catch (const std::exception& e) {
    return absl::FailedPreconditionError(
        absl::StrCat("xrt:", index, ": cannot open NPU ", index, ": ", e.what(),
                     " (is the amdxdna driver loaded and /dev/accel/accel",
                     index, " there? docs/npu-box.md)"));
  }
  if (impl->options.power_mode) {
    const PowerMode mode = *impl->options.power_mode;
    absl::Status set = impl->smi.SetPowerMode(mode);
    if (!set.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--power-mode ", A(PowerModeName(mode)), ": ", set.message()));
    }
  }
  auto device = std::unique_ptr<XrtDevice>(new XrtDevice(std::move(impl)));
  absl::StatusOr<Platform> platform = device->GetPlatform();
  if (!platform.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("xrt:", index, ": ", platform.status().message()));
  }
  device->impl_->opened = *platform;
  spdlog::info("xrt:{}: {} ({}, power mode {})", index, platform->name,
               platform->generation, PowerModeName(platform->power_mode));
  return device;
}

absl::StatusOr<Platform> XrtDevice::GetPlatform() {
  ASSIGN_OR_RETURN(const SmiPlatform smi, impl_->smi.ExaminePlatform());
  return PlatformOf(smi);
}

absl::StatusOr<std::unique_ptr<Image>> XrtDevice::Load(
    const Artifact& artifact) {
  ASSIGN_OR_RETURN(XrtManifest manifest,
                   CheckedManifest(artifact, impl_->opened));
  auto image =
      std::make_unique<XrtImage>(impl_.get(), artifact, std::move(manifest));
  RETURN_IF_ERROR(image->Open());
  return image;
}

absl::StatusOr<std::vector<int>> XrtDevice::OtherHolders() {
  return impl_->smi.HolderPids(impl_->options.own_pid);
}

int XrtDevice::contexts_held() const { return impl_->contexts; }

const TimingHygiene& XrtDevice::hygiene() const { return impl_->hygiene; }

}  // namespace irontune
