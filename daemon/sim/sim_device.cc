#include "daemon/sim/sim_device.h"

#include <algorithm>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/base/big_bytes.h"
#include "daemon/base/thread_roles.h"
#include "daemon/sim/kernels.h"

namespace irontune {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// One loaded artifact: its design, its buffers' host storage (allocated on
// first write or compute: an unwritten buffer reads as zeros) and its
// per-call values. Holds one of the device's contexts until destroyed.
class SimImage : public Image {
 public:
  SimImage(SimDevice* device, int64_t id, sim::SimDesign design,
           const Artifact& artifact, std::vector<std::vector<int>> step_buffers)
      : device_(device),
        id_(id),
        design_(std::move(design)),
        step_buffers_(std::move(step_buffers)),
        dirty_(step_buffers_.size(), true) {
    for (const std::string& symbol : artifact.symbols) symbols_.insert(symbol);
    for (size_t i = 0; i < artifact.buffers.size(); ++i) {
      const ArtifactBuffer& b = artifact.buffers[i];
      index_[b.name] = static_cast<int>(i);
      buffers_.push_back({b.nbytes, b.step, std::string(), nullptr});
      const bool in =
          b.op_buffer >= 0 && b.op_buffer < design_.op.buffers_size() &&
          design_.op.buffers(b.op_buffer).role() == v1::BUFFER_ROLE_IN &&
          !b.drains;
      only_read_.push_back(in);
    }
    for (const v1::Buffer& b : design_.op.buffers()) {
      has_inout_ |= b.role() == v1::BUFFER_ROLE_INOUT;
    }
  }
  ~SimImage() override {
    if (computing_.valid()) computing_.wait();
    device_->Release();
  }

  absl::Status WriteValues(
      const std::map<std::string, int64_t>& values) override {
    for (const auto& [symbol, value] : values) {
      if (!symbols_.contains(symbol)) {
        return absl::InvalidArgumentError(
            absl::StrCat("the image takes no value \"", symbol, "\""));
      }
    }
    for (const auto& [symbol, value] : values) {
      RETURN_IF_ERROR(Settle());
      auto [it, inserted] = values_.insert_or_assign(symbol, value);
      (void)it;
      (void)inserted;
    }
    std::fill(dirty_.begin(), dirty_.end(), true);
    return absl::OkStatus();
  }

  absl::Status WriteBuffer(std::string_view name,
                           std::string_view bytes) override {
    ASSIGN_OR_RETURN(int index, Find(name));
    Stored& b = buffers_[index];
    if (bytes.size() != b.nbytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffer \"", sim::AsAbsl(name), "\" holds ", b.nbytes,
                       " bytes, not ", bytes.size()));
    }
    RETURN_IF_ERROR(Settle());
    b.shared.reset();
    AssignBytes(b.bytes, bytes);
    MarkDirty(index);
    return absl::OkStatus();
  }

  absl::Status ShareBuffer(std::string_view name,
                           std::shared_ptr<const std::string> bytes) override {
    ASSIGN_OR_RETURN(int index, Find(name));
    if (!only_read_[index]) return WriteBuffer(name, *bytes);
    Stored& b = buffers_[index];
    if (bytes->size() != b.nbytes) return WriteBuffer(name, *bytes);
    RETURN_IF_ERROR(Settle());
    b.bytes.clear();
    b.shared = std::move(bytes);
    MarkDirty(index);
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> ReadBuffer(std::string_view name) override {
    ASSIGN_OR_RETURN(int index, Find(name));
    RETURN_IF_ERROR(Settle());
    const Stored& b = buffers_[index];
    if (b.shared) return CopyBytes(*b.shared);
    if (b.bytes.empty()) return ZeroBytes(b.nbytes);
    return CopyBytes(b.bytes);
  }

  // Hands over the storage of an output a run computed, and marks the
  // steps that write it to compute it again when next observed. Copies
  // (ReadBuffer) an input, a buffer never written, and every buffer of an
  // image that changes a buffer in place: its next run reads what the last
  // one left.
  absl::StatusOr<std::string> TakeBuffer(std::string_view name) override {
    ASSIGN_OR_RETURN(int index, Find(name));
    RETURN_IF_ERROR(Settle());
    Stored& b = buffers_[index];
    if (has_inout_ || b.shared || b.bytes.empty() || only_read_[index]) {
      return ReadBuffer(name);
    }
    std::string out = std::move(b.bytes);
    b.bytes.clear();
    MarkDirty(index);
    ran_ = true;
    return out;
  }

  absl::StatusOr<RunResult> Run() override {
    const Clock::time_point started = Clock::now();
    // Outputs are computed when first observed (Settle), so timing loops
    // that never read them cost no CPU work; an in-place buffer changes with
    // every run and is computed at once.
    if (has_inout_) {
      RETURN_IF_ERROR(Compute());
    } else {
      ran_ = true;
    }
    return device_->TimeRun(id_, design_, values_, started);
  }

  // Computes the outputs of the runs so far on a thread of its own, unless
  // they are computed already; Settle waits for it.
  void PrepareOutputs() override {
    if (!ran_ || computing_.valid()) return;
    if (std::find(dirty_.begin(), dirty_.end(), true) == dirty_.end()) return;
    ran_ = false;
    computing_ = std::async(std::launch::async, [this] {
      BecomeHelperThread();
      return Compute();
    });
  }

 private:
  struct Stored {
    uint64_t nbytes;
    int step;
    std::string bytes;  // empty until written or computed
    // Shared, unchanging contents (ShareBuffer) of an input buffer; when set,
    // `bytes` is unused.
    std::shared_ptr<const std::string> shared;
  };

  absl::StatusOr<int> Find(std::string_view name) const {
    auto it = index_.find(sim::AsAbsl(name));
    if (it == index_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the image has no buffer \"", sim::AsAbsl(name), "\""));
    }
    return it->second;
  }

  // The steps reading buffer `index` must compute again.
  void MarkDirty(int index) {
    for (size_t s = 0; s < step_buffers_.size(); ++s) {
      const std::vector<int>& refs = step_buffers_[s];
      if (std::find(refs.begin(), refs.end(), index) != refs.end()) {
        dirty_[s] = true;
      }
    }
  }

  // Computes the outputs of the runs so far, before anything observes or
  // changes the buffers.
  absl::Status Settle() {
    if (computing_.valid()) RETURN_IF_ERROR(computing_.get());
    if (!ran_) return absl::OkStatus();
    ran_ = false;
    return Compute();
  }

  // Recomputes the steps whose inputs or values changed since they last
  // ran (outputs are a function of them); steps sharing step 0's buffers
  // compute once, unless a buffer is read and written in place.
  absl::Status Compute() {
    sim::OpView view(design_.op, values_);
    for (size_t s = 0; s < step_buffers_.size(); ++s) {
      if (!dirty_[s] && !has_inout_) continue;
      std::vector<sim::StepBuffer> step;
      for (int op_buffer = 0; op_buffer < design_.op.buffers_size();
           ++op_buffer) {
        Stored& b = buffers_[step_buffers_[s][op_buffer]];
        // Kernels only read input buffers, so a shared one is passed as is.
        std::string* bytes =
            b.shared ? const_cast<std::string*>(b.shared.get()) : &b.bytes;
        step.push_back({&design_.op.buffers(op_buffer), bytes, b.nbytes});
      }
      RETURN_IF_ERROR(sim::ComputeStep(view, step));
      dirty_[s] = false;
    }
    return absl::OkStatus();
  }

  SimDevice* device_;  // not owned; outlives the image
  const int64_t id_;
  const sim::SimDesign design_;
  // Per distinct step (one when steps share step 0's buffers), the index in
  // buffers_ of each operator buffer.
  const std::vector<std::vector<int>> step_buffers_;
  std::vector<bool> dirty_;
  bool has_inout_ = false;
  bool ran_ = false;  // a run's outputs are not computed yet
  std::vector<Stored> buffers_;
  std::vector<bool> only_read_;  // by buffers_ index: an input no step writes
  absl::flat_hash_map<std::string, int> index_;
  std::set<std::string, std::less<>> symbols_;
  sim::CallValues values_;
  // The outputs being computed (PrepareOutputs); last, so it is waited for
  // before the members it uses are destroyed.
  std::future<absl::Status> computing_;
};

SimDevice::SimDevice(const sim::SimPreset& preset, const SimOptions& options)
    : preset_(preset),
      options_(options),
      noise_(options.seed, options.noise),
      mode_(options.power_mode),
      created_(Clock::now()) {
  if (options.clock != SimOptions::Clock::kRealTime) return;
  timing_cpus_ = SpareTimingCpu();
  if (timing_cpus_.empty()) return;
  ReserveTimingCpus(timing_cpus_);
  wait_ = sim::PreciseWait(kSpinWholeRun);
}

SimDevice::~SimDevice() = default;

absl::StatusOr<Platform> SimDevice::GetPlatform() {
  Platform p;
  p.name = preset_.name;
  p.generation = preset_.generation;
  p.power_mode = mode_;
  p.columns = preset_.columns;
  p.core_mhz = core_mhz();
  p.hw_contexts = preset_.hw_contexts;
  p.full_elf = preset_.full_elf;
  return p;
}

StackVersions SimDevice::GetStackVersions() {
  return {absl::StrCat("sim-", kSimStackVersion), "sim", "sim"};
}

absl::StatusOr<sim::SimDesign> SimDevice::CheckedDesign(
    const Artifact& artifact) const {
  ASSIGN_OR_RETURN(sim::SimDesign design,
                   sim::DecodeSimDesign(artifact.payload));
  if (design.generation != preset_.generation) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the artifact was built for ", design.generation, ", this is ",
        preset_.name, " (", preset_.generation, ")"));
  }
  if (design.packaging == v1::PACKAGING_FULL_ELF && !preset_.full_elf) {
    return absl::InvalidArgumentError(absl::StrCat(
        preset_.name, " has no full-ELF dispatch (xclbin chain only)"));
  }
  if (artifact.packaging != design.packaging ||
      artifact.steps != design.steps || artifact.distinct != design.distinct) {
    return absl::InvalidArgumentError(
        "the artifact's packaging, steps or distinct disagree with its "
        "payload");
  }
  return design;
}

absl::StatusOr<std::unique_ptr<Image>> SimDevice::Load(
    const Artifact& artifact) {
  ASSIGN_OR_RETURN(sim::SimDesign design, CheckedDesign(artifact));
  // Map every (step, operator buffer) to one of the artifact's buffers.
  const int op_buffers = design.op.buffers_size();
  const int steps = design.distinct ? design.steps : 1;
  std::vector<std::vector<int>> step_buffers(steps,
                                             std::vector<int>(op_buffers, -1));
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < artifact.buffers.size(); ++i) {
    const ArtifactBuffer& b = artifact.buffers[i];
    if (b.step < 0 || b.step >= steps || b.op_buffer < 0 ||
        b.op_buffer >= op_buffers || step_buffers[b.step][b.op_buffer] != -1 ||
        !names.insert(b.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact buffer \"", b.name, "\" (step ", b.step,
          ", operator buffer ", b.op_buffer, ") is out of range or repeated"));
    }
    const std::optional<uint64_t> want =
        sim::BufferBytes(design.op.buffers(b.op_buffer));
    if (!want || *want != b.nbytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("artifact buffer \"", b.name, "\" holds ", b.nbytes,
                       " bytes; its operator buffer needs ", want.value_or(0)));
    }
    step_buffers[b.step][b.op_buffer] = static_cast<int>(i);
  }
  for (int s = 0; s < steps; ++s) {
    for (int o = 0; o < op_buffers; ++o) {
      if (step_buffers[s][o] == -1) {
        return absl::InvalidArgumentError(
            absl::StrCat("the artifact has no buffer for step ", s,
                         ", operator buffer ", o));
      }
    }
  }
  if (live_images_ >= preset_.hw_contexts) {
    return absl::ResourceExhaustedError(
        absl::StrCat("every hardware context of ", preset_.name, " is taken (",
                     preset_.hw_contexts, ")"));
  }
  ++live_images_;
  return std::make_unique<SimImage>(this, next_image_id_++, std::move(design),
                                    artifact, std::move(step_buffers));
}

absl::StatusOr<std::vector<int>> SimDevice::OtherHolders() {
  if (options_.clock == SimOptions::Clock::kVirtual) {
    virtual_us_ += options_.holders_query_us;
  }
  return noise_.HoldersAt(now_us());
}

absl::Status SimDevice::SetPowerMode(PowerMode mode) {
  if (mode == PowerMode::kTurbo && live_images_ > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("turbo is refused while a hardware context is active (",
                     live_images_, " loaded)"));
  }
  mode_ = mode;
  return absl::OkStatus();
}

void SimDevice::ScriptInterference(const sim::InterferenceScript& script) {
  noise_.AddInterference(script);
}

void SimDevice::ScriptCpuWait(const sim::CpuWaitScript& script) {
  noise_.AddCpuWait(script);
}

absl::StatusOr<double> SimDevice::TrueStepUs(
    const Artifact& artifact, const sim::CallValues& values) const {
  ASSIGN_OR_RETURN(sim::SimDesign design, CheckedDesign(artifact));
  sim::OpView view(design.op, values);
  return sim::StepUs(view, {&preset_, core_mhz(), mode_});
}

absl::StatusOr<double> SimDevice::TrueRunUs(const Artifact& artifact,
                                            const sim::CallValues& values,
                                            sim::Switching switching) const {
  ASSIGN_OR_RETURN(sim::SimDesign design, CheckedDesign(artifact));
  sim::OpView view(design.op, values);
  const double step = sim::StepUs(view, {&preset_, core_mhz(), mode_});
  return sim::RunUs(preset_, design.packaging, design.steps, step,
                    sim::ColumnsUsed(view, preset_), switching);
}

double SimDevice::now_us() const {
  if (options_.clock == SimOptions::Clock::kVirtual) return virtual_us_;
  return std::chrono::duration<double, std::micro>(Clock::now() - created_)
      .count();
}

RunResult SimDevice::TimeRun(int64_t image_id, const sim::SimDesign& design,
                             const sim::CallValues& values,
                             Clock::time_point started) {
  sim::OpView view(design.op, values);
  const double step = sim::StepUs(view, {&preset_, core_mhz(), mode_});
  const sim::Switching switching = last_image_id_ == image_id
                                       ? sim::Switching::kSameDesign
                                       : sim::Switching::kFromOtherDesign;
  const double model = sim::RunUs(preset_, design.packaging, design.steps, step,
                                  sim::ColumnsUsed(view, preset_), switching);
  if (options_.hang_after_runs >= 0 && calls_ >= options_.hang_after_runs) {
    while (true) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  const sim::Noise::Draw draw = noise_.Apply(model, now_us(), calls_);
  ++calls_;
  last_image_id_ = image_id;
  if (options_.clock == SimOptions::Clock::kVirtual) {
    virtual_us_ += draw.elapsed_us;
  } else {
    const ScopedPin pin(timing_cpus_);
    wait_.Until(started + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double, std::micro>(
                                  draw.elapsed_us)));
  }
  return RunResult{draw.elapsed_us, draw.cpu_wait_us};
}

absl::StatusOr<std::unique_ptr<SimDevice>> MakeSimDevice(std::string_view spec,
                                                         SimOptions options) {
  const sim::SimPreset* preset = sim::FindSimPreset(spec);
  if (preset == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown simulated device \"", sim::AsAbsl(spec),
                     "\" (known: sim:npu2, sim:npu1)"));
  }
  return std::make_unique<SimDevice>(*preset, options);
}

}  // namespace irontune
