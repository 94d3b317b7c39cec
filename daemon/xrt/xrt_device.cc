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
#include <type_traits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "daemon/base/big_bytes.h"
#include "daemon/xrt/artifact_manifest.h"
#include "daemon/xrt/span_clock.h"
#include "daemon/xrt/stack_versions.h"
#include "spdlog/spdlog.h"
#include "xrt/experimental/xrt_elf.h"
#include "xrt/experimental/xrt_ext.h"
#include "xrt/experimental/xrt_xclbin.h"
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
absl::Status RunFailed(ert_cmd_state state, absl::string_view run) {
  const std::string what =
      absl::StrCat(run, " ended in ", StateName(state), ", not COMPLETED");
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
  StackVersions stack;

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

// How a failed hardware context is reported. The shim's ioctl wrapper
// throws xrt_core::system_error(-errno), a std::system_error whose code is
// the errno (amd/xdna-driver src/shim/host/platform_host.cpp and
// src/shim/shim_debug.h @856409ca; Xilinx/XRT src/runtime_src/core/common/
// error.h @963c58ee); xrt::hw_context's constructor lets it through
// (xrt_hw_context.cpp @963c58ee). What the errno means:
//   out-of-tree driver (aie2_ctx_runqueue.c @856409ca, aie2_rq_add):
//     ENOENT  past the context limit (6 on npu1, 32 on the npu4 family) or
//             out of real-time hardware contexts: the NPU is full;
//     EBUSY   a context of the whole array is running;
//     ENOSPC  the design needs more columns than the NPU has.
//   in-tree driver (torvalds/linux drivers/accel/amdxdna aie2_solver.c
//   @323bbfcf, aie2_message.c @00ffe45e):
//     ENODEV  no free partition of the design's width (or no firmware
//             channel);
//     EINVAL  the firmware refused the context (out of firmware contexts),
//             or the design is wider than the NPU.
absl::Status XrtDevice::Impl::ContextFailed(const std::exception& e) const {
  const auto* se = dynamic_cast<const std::system_error*>(&e);
  const int code = se != nullptr ? se->code().value() : 0;
  const std::string held =
      absl::StrCat("irontuned holds ", contexts, " hardware context",
                   contexts == 1 ? "" : "s", " of NPU ", options.index);
  if (code == ENOSPC) {
    return absl::InvalidArgumentError(
        absl::StrCat("the design needs more columns than NPU ", options.index,
                     " has (", opened.columns,
                     " usable columns): the driver refused its hardware "
                     "context (ENOSPC): ",
                     e.what()));
  }
  if (code == ENOENT || code == ENODEV || code == EINVAL || code == EBUSY ||
      code == ENOMEM) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no hardware context is free (", held,
        "; other processes may hold the rest: see `xrt-smi examine -r "
        "aie-partitions`",
        code == EINVAL ? absl::StrCat("; with the in-tree driver EINVAL also "
                                      "means a design wider than the NPU's ",
                                      opened.columns, " columns")
                       : "",
        "): ", e.what()));
  }
  return absl::InternalError(absl::StrCat("cannot create a hardware context (",
                                          held, "): ", e.what()));
}

namespace {

// Whether the xrt::elf of these headers lists its kernels (XRT master,
// since 99b8b9763b; 2.19 cannot tell an ELF kernel's arguments).
template <typename Elf, typename = void>
struct ElfListsKernels : std::false_type {};
template <typename Elf>
struct ElfListsKernels<
    Elf, std::void_t<decltype(std::declval<const Elf&>().get_kernels())>>
    : std::true_type {};

// The arguments the ELF declares for `kernel` ("main:sequence": kernel
// "main"), or -1 where the headers cannot tell. Throws what XRT throws.
template <typename Elf>
int ElfKernelArgs(const Elf& elf, const std::string& kernel) {
  if constexpr (ElfListsKernels<Elf>::value) {
    const std::string name = kernel.substr(0, kernel.find(':'));
    for (const auto& k : elf.get_kernels()) {
      if (k.get_name() == name) return static_cast<int>(k.get_num_args());
    }
    throw std::runtime_error("the ELF has no kernel \"" + name + "\"");
  } else {
    return -1;
  }
}

// One data buffer: its bo and where the artifact puts it. A full ELF's
// buffer is a view of its arena's bo at `offset`.
struct DataBuffer {
  ArtifactBuffer info;
  ::xrt::bo bo;
  uint64_t offset = 0;
};

class XrtImage : public Image {
 public:
  XrtImage(XrtDevice::Impl* device, const Artifact& artifact,
           XrtManifest manifest)
      : device_(device), artifact_(artifact), manifest_(std::move(manifest)) {}
  ~XrtImage() override;

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
  // Creates the image's hardware context from `design` (an xclbin's uuid
  // or an ELF) and counts it held; the device's ContextFailed status when
  // the driver refuses it.
  template <typename Design>
  absl::Status HoldContext(const Design& design) {
    try {
      context_ = ::xrt::hw_context(device_->device, design);
    } catch (const std::exception& e) {
      return device_->ContextFailed(e);
    }
    held_ = true;
    device_->ContextMade();
    return absl::OkStatus();
  }
  absl::Status MakeChainBuffers();
  absl::Status MakeArenas();
  absl::Status CheckArgCount() const;
  absl::Status MakeRuns();
  absl::Status MakeScratchpads();
  absl::Status WriteScratchpads(
      const std::vector<std::pair<const XrtManifestSymbol*, int32_t>>& writes);
  absl::StatusOr<DataBuffer*> Find(std::string_view name);
  absl::Status RunSteps();
  absl::Status Wait(size_t run);
  absl::Status Abort(size_t run, absl::string_view why);
  // "NPU run of step K" (xclbin chain), "NPU run of the full ELF".
  std::string RunName(size_t run) const {
    return chain() ? absl::StrCat("NPU run of step ", run)
                   : "NPU run of the full ELF";
  }

  XrtDevice::Impl* device_;
  const Artifact artifact_;
  const XrtManifest manifest_;
  bool held_ = false;
  ::xrt::hw_context context_;
  ::xrt::kernel kernel_;
  std::string kernel_name_;
  int kernel_args_ = -1;  // what the design declares; -1: unknown
  std::vector<uint32_t> insts_;
  ::xrt::bo insts_bo_;
  std::vector<DataBuffer> buffers_;
  std::vector<::xrt::bo> arenas_;  // full ELF: argument k is arenas_[k]
  // xclbin chain, per step: the indexes into buffers_ of its arguments 3...
  std::vector<std::vector<int>> step_args_;
  // One per step (xclbin chain), one in all (full ELF: the fused sequence
  // runs every step).
  std::vector<::xrt::run> runs_;
  // Started and neither waited to an end nor aborted: XRT requires abort()
  // before such a run is started again or destroyed (xrt_kernel.h @963c58ee,
  // run::wait; master's ~run_impl aborts the process otherwise).
  std::vector<bool> in_flight_;
  // Full ELF with scratchpad symbols: the run's ctrl scratchpad.
  std::vector<::xrt::bo> scratchpads_;
};

XrtImage::~XrtImage() {
  for (size_t r = 0; r < runs_.size(); ++r) {
    if (in_flight_[r]) Abort(r, "image unloaded").IgnoreError();
  }
  runs_.clear();
  scratchpads_.clear();
  buffers_.clear();
  arenas_.clear();
  kernel_ = ::xrt::kernel();
  if (held_) {
    context_ = ::xrt::hw_context();
    device_->ContextReleased();
  }
}

absl::Status XrtImage::Open() {
  RETURN_IF_ERROR(chain() ? OpenChain() : OpenElf());
  RETURN_IF_ERROR(chain() ? MakeChainBuffers() : MakeArenas());
  RETURN_IF_ERROR(CheckArgCount());
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
    // No kernel named: the xclbin's first, as mlir-aie's test utilities
    // take it (IRON names each design's kernel f<hash>_op<idx>).
    const auto kernels = xclbin.get_kernels();
    kernel_name_ = manifest_.kernel;
    if (kernel_name_.empty() && !kernels.empty())
      kernel_name_ = kernels.front().get_name();
    for (const auto& k : kernels) {
      if (k.get_name() == kernel_name_)
        kernel_args_ = static_cast<int>(k.get_num_args());
    }
    if (kernel_args_ < 0) {
      throw std::runtime_error("has no kernel \"" + kernel_name_ + "\"");
    }
    uuid = device_->device.register_xclbin(xclbin);
  }));
  RETURN_IF_ERROR(HoldContext(uuid));
  RETURN_IF_ERROR(Guard(absl::StrCat("kernel ", kernel_name_), [&] {
    kernel_ = ::xrt::kernel(context_, kernel_name_);
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
  kernel_name_ = kElfKernel;
  RETURN_IF_ERROR(Guard(absl::StrCat("ELF ", manifest_.elf), [&] {
    elf = ::xrt::elf(manifest_.elf);
    kernel_args_ = ElfKernelArgs(elf, kernel_name_);
  }));
  RETURN_IF_ERROR(HoldContext(elf));
  return Guard(absl::StrCat("kernel ", kElfKernel),
               [&] { kernel_ = ::xrt::ext::kernel(context_, kElfKernel); });
}

absl::Status AllocationFailed(absl::string_view what, uint64_t nbytes,
                              const absl::Status& made) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "cannot allocate ", what, " (", nbytes, " bytes): ", made.message()));
}

// xclbin chain: one host-only bo per buffer, in the memory group of its
// argument position (3.. in op_buffer order).
absl::Status XrtImage::MakeChainBuffers() {
  const int steps = artifact_.distinct ? artifact_.steps : 1;
  step_args_.assign(artifact_.steps, {});
  std::vector<std::vector<int>> of_step(steps);
  for (const ArtifactBuffer& b : artifact_.buffers) {
    if (b.step < 0 || b.step >= steps) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact buffer ", b.name, ": step ", b.step, " of ", steps));
    }
    of_step[b.step].push_back(static_cast<int>(buffers_.size()));
    buffers_.push_back({b, {}, 0});
  }
  for (int s = 0; s < artifact_.steps; ++s) {
    std::vector<int> args = of_step[artifact_.distinct ? s : 0];
    std::sort(args.begin(), args.end(), [&](int a, int b) {
      return buffers_[a].info.op_buffer < buffers_[b].info.op_buffer;
    });
    step_args_[s] = std::move(args);
  }
  for (int s = 0; s < steps; ++s) {
    for (size_t k = 0; k < step_args_[s].size(); ++k) {
      DataBuffer& d = buffers_[step_args_[s][k]];
      const size_t size = std::max<uint64_t>(d.info.nbytes, 4);
      absl::Status made = Guard(absl::StrCat("buffer ", d.info.name), [&] {
        d.bo = ::xrt::bo(device_->device, size, ::xrt::bo::flags::host_only,
                         kernel_.group_id(3 + static_cast<int>(k)));
      });
      if (!made.ok()) {
        return AllocationFailed(absl::StrCat("buffer ", d.info.name),
                                d.info.nbytes, made);
      }
    }
  }
  return absl::OkStatus();
}

// Full ELF: one host-only bo per arena; each buffer a view of its arena.
absl::Status XrtImage::MakeArenas() {
  for (const ArtifactBuffer& b : artifact_.buffers) {
    const auto it = manifest_.views.find(b.name);
    if (it == manifest_.views.end() || it->second.nbytes != b.nbytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact buffer ", b.name, " (", b.nbytes,
          " bytes) has no view of that size in the manifest's arenas"));
    }
    buffers_.push_back({b, {}, it->second.offset});
  }
  for (const XrtArena& a : manifest_.arenas) {
    ::xrt::bo bo;
    absl::Status made = Guard(absl::StrCat("arena ", a.name), [&] {
      bo = ::xrt::ext::bo(device_->device, std::max<uint64_t>(a.nbytes, 4));
    });
    if (!made.ok()) {
      return AllocationFailed(absl::StrCat("arena ", a.name), a.nbytes, made);
    }
    arenas_.push_back(std::move(bo));
  }
  for (DataBuffer& d : buffers_) {
    d.bo = arenas_[manifest_.views.at(d.info.name).arena];
  }
  return absl::OkStatus();
}

// The buffers bound must be arguments the kernel has: XRT indexes its
// argument table past the end otherwise (xrt_kernel.cpp @963c58ee,
// kernel_impl::get_arg), and mlir-aie's test utilities check it too. A
// full ELF binds exactly its arenas.
absl::Status XrtImage::CheckArgCount() const {
  if (kernel_args_ < 0) return absl::OkStatus();
  size_t bound = arenas_.size();
  if (chain()) {
    bound = 0;
    for (const auto& args : step_args_) bound = std::max(bound, args.size());
    bound += 3;
  }
  const bool fits = chain() ? bound <= static_cast<size_t>(kernel_args_)
                            : bound == static_cast<size_t>(kernel_args_);
  if (fits) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "kernel ", kernel_name_, " of ",
      chain() ? manifest_.xclbin : manifest_.elf, " declares ", kernel_args_,
      " arguments, but the artifact binds ", bound,
      chain() ? " (opcode, instructions, their count and a step's buffers)"
              : " (its arenas)"));
}

absl::Status XrtImage::MakeRuns() {
  const int runs = chain() ? artifact_.steps : 1;
  RETURN_IF_ERROR(Guard("kernel arguments", [&] {
    for (int s = 0; s < runs; ++s) {
      ::xrt::run run(kernel_);
      if (chain()) {
        run.set_arg(0, kOpcode);
        run.set_arg(1, insts_bo_);
        run.set_arg(2, static_cast<uint32_t>(insts_.size()));
        for (size_t k = 0; k < step_args_[s].size(); ++k) {
          run.set_arg(3 + static_cast<int>(k), buffers_[step_args_[s][k]].bo);
        }
      } else {
        for (size_t k = 0; k < arenas_.size(); ++k) {
          run.set_arg(static_cast<int>(k), arenas_[k]);
        }
      }
      runs_.push_back(std::move(run));
    }
  }));
  in_flight_.assign(runs_.size(), false);
  return absl::OkStatus();
}

// The run's ctrl scratchpad, when a symbol is written there, with the
// symbols' words zeroed and synced to the device. XRT makes it with the run
// from the ELF's "scratch-pad-ctrl" symbol, and get_ctrl_scratchpad_bo()
// syncs it from the device before returning it (xrt_module.cpp @963c58ee).
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

// Each value encoded by its kind (EncodeValue: a core's value << 2).
absl::Status XrtImage::WriteValues(
    const std::map<std::string, int64_t>& values) {
  std::vector<std::pair<const XrtManifestSymbol*, int32_t>> writes;
  for (const auto& [name, value] : values) {
    const auto it = std::find_if(
        manifest_.symbols.begin(), manifest_.symbols.end(),
        [&name = name](const XrtManifestSymbol& s) { return s.name == name; });
    if (it == manifest_.symbols.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the image takes no per-call value \"", name, "\""));
    }
    ASSIGN_OR_RETURN(const int32_t word, EncodeValue(name, value, it->kind));
    writes.emplace_back(&*it, word);
  }
  if (writes.empty()) return absl::OkStatus();
  if (!chain()) return WriteScratchpads(writes);
  return Guard("per-call values", [&] {
    for (const auto& [sym, v] : writes) {
      insts_[sym->insts_word] = static_cast<uint32_t>(v);
    }
    std::memcpy(insts_bo_.map<void*>(), insts_.data(), insts_.size() * 4);
    insts_bo_.sync(XCL_BO_SYNC_BO_TO_DEVICE);
  });
}

absl::StatusOr<DataBuffer*> XrtImage::Find(std::string_view name) {
  for (DataBuffer& d : buffers_)
    if (d.info.name == name) return &d;
  return absl::InvalidArgumentError(
      absl::StrCat("the image has no buffer \"", A(name), "\""));
}

// Writes at the buffer's view and syncs only that range.
absl::Status XrtImage::WriteBuffer(std::string_view name,
                                   std::string_view bytes) {
  ASSIGN_OR_RETURN(DataBuffer * d, Find(name));
  if (bytes.size() != d->info.nbytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer ", A(name), " holds ", d->info.nbytes,
                     " bytes, not ", bytes.size()));
  }
  return Guard(absl::StrCat("buffer ", A(name)), [&] {
    std::memcpy(d->bo.map<char*>() + d->offset, bytes.data(), bytes.size());
    d->bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, bytes.size(), d->offset);
  });
}

absl::StatusOr<std::string> XrtImage::ReadBuffer(std::string_view name) {
  ASSIGN_OR_RETURN(DataBuffer * d, Find(name));
  std::string out = ZeroBytes(d->info.nbytes);
  RETURN_IF_ERROR(Guard(absl::StrCat("buffer ", A(name)), [&] {
    d->bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE, out.size(), d->offset);
    std::memcpy(out.data(), d->bo.map<char*>() + d->offset, out.size());
  }));
  return out;
}

// Aborts run `r`, which did not end: XRT leaves a timed-out command
// running, and it must be aborted before the run is started again or
// destroyed (xrt_kernel.h @963c58ee, run::wait and run::abort).
absl::Status XrtImage::Abort(size_t r, absl::string_view why) {
  ert_cmd_state state = ERT_CMD_STATE_ABORT;
  const absl::Status aborted =
      Guard("abort", [&] { state = runs_[r].abort(); });
  if (aborted.ok()) in_flight_[r] = false;
  spdlog::warn("xrt:{}: {} {}; {}", device_->options.index, RunName(r),
               std::string(why),
               aborted.ok() ? "aborted" : std::string(aborted.message()));
  return aborted.ok() ? absl::OkStatus() : aborted;
}

// Waits for run `r` to end COMPLETED; a timeout aborts it.
absl::Status XrtImage::Wait(size_t r) {
  const auto timeout = device_->options.run_timeout;
  const std::string late = absl::StrCat(RunName(r), " did not complete within ",
                                        timeout.count(), " ms");
  if (chain()) {
    // ERT_CMD_STATE_TIMEOUT is both "the wait timed out" and a command
    // that ended so; abort() returns at once for the latter.
    const ert_cmd_state state = runs_[r].wait(timeout);
    if (state == ERT_CMD_STATE_TIMEOUT) {
      const absl::Status aborted = Abort(r, "timed out");
      return absl::UnavailableError(
          absl::StrCat(late, " (", StateName(state), "); ",
                       aborted.ok() ? "aborted" : aborted.message()));
    }
    in_flight_[r] = false;
    return state == ERT_CMD_STATE_COMPLETED ? absl::OkStatus()
                                            : RunFailed(state, RunName(r));
  }
  if (runs_[r].wait2(timeout) == std::cv_status::timeout) {
    const absl::Status aborted = Abort(r, "timed out");
    return absl::UnavailableError(
        absl::StrCat(late, "; ", aborted.ok() ? "aborted" : aborted.message()));
  }
  in_flight_[r] = false;
  return absl::OkStatus();
}

// Every run: start, then wait for it. Inside the timed span: nothing else.
absl::Status XrtImage::RunSteps() {
  for (size_t r = 0; r < runs_.size(); ++r) {
    try {
      runs_[r].start();
      in_flight_[r] = true;
      RETURN_IF_ERROR(Wait(r));
    } catch (const ::xrt::run::command_error& e) {
      in_flight_[r] = false;
      return RunFailed(e.get_command_state(), RunName(r));
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat(RunName(r), ": ", e.what()));
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

// The stack under NPU `index` (stack_versions.h); what cannot be read is
// left "" with a warning.
StackVersions ReadStack(const ::xrt::device& device, unsigned int index,
                        const std::string& bdf, const std::string& sys_root) {
  StackVersions stack;
  std::string host_info;
  const absl::Status asked = Guard("xrt::device::get_info<host>", [&] {
    host_info = device.get_info<::xrt::info::device::host>();
  });
  const absl::StatusOr<XrtHostVersions> host =
      asked.ok() ? ParseXrtHostInfo(host_info, KernelRelease())
                 : absl::StatusOr<XrtHostVersions>(asked);
  if (host.ok()) {
    stack.xrt = host->xrt;
    stack.driver = host->driver;
  } else {
    spdlog::warn("xrt:{}: the XRT and driver versions are unknown: {}", index,
                 std::string(host.status().message()));
  }
  absl::StatusOr<std::string> firmware = ReadFirmwareVersion(sys_root, bdf);
  if (firmware.ok()) {
    stack.firmware = *firmware;
  } else {
    spdlog::warn("xrt:{}: the NPU firmware's version is unknown: {}", index,
                 std::string(firmware.status().message()));
  }
  return stack;
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
  device->impl_->stack =
      ReadStack(device->impl_->device, index, device->impl_->options.smi.bdf,
                device->impl_->options.sys_root);
  spdlog::info("xrt:{}: {} ({}, power mode {})", index, platform->name,
               platform->generation, PowerModeName(platform->power_mode));
  return device;
}

absl::StatusOr<Platform> XrtDevice::GetPlatform() {
  ASSIGN_OR_RETURN(const SmiPlatform smi, impl_->smi.ExaminePlatform());
  return PlatformOf(smi);
}

StackVersions XrtDevice::GetStackVersions() { return impl_->stack; }

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
