// The Device seam: everything irontuned asks of an NPU. Like leveldb's Env,
// it exists so that the simulated NPU (daemon/sim/), a real NPU's backend
// and test doubles (DeviceWrapper) are interchangeable.
//
// Threads: a Device and its Images are used by one thread at a time (in
// irontuned, the device worker). Implementations need not be thread-safe.
// Failure: every call returns a Status; none throws or aborts on bad input.
#ifndef IRONTUNE_DAEMON_NPU_DEVICE_H_
#define IRONTUNE_DAEMON_NPU_DEVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/npu/platform.h"
#include "irontune/v1/measurement.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune {

// One operator buffer of one step of an artifact, as the host sees it.
struct ArtifactBuffer {
  std::string name;   // unique within the artifact, e.g. "s3.b"
  int step = 0;       // the step it belongs to (the first, when shared)
  int op_buffer = 0;  // index into the operator's buffers
  uint64_t nbytes = 0;
  bool fills = false;   // the host writes it before a run
  bool drains = false;  // the step writes it
};

// What a Builder produces: one operator setting packaged as a runlist of
// `steps` steps, loadable by the Device it was built for.
struct Artifact {
  std::string recipe_hash;    // sha256 hex of what the design is built from
  std::string artifact_hash;  // sha256 hex of `payload`
  v1::Packaging packaging = v1::PACKAGING_UNSPECIFIED;
  int steps = 1;
  // Every step runs on buffers of its own (else all steps share step 0's).
  bool distinct = true;
  std::vector<ArtifactBuffer> buffers;
  // The per-call value symbols the image takes (CallValue.symbol).
  std::vector<std::string> symbols;
  // Device-specific bytes: an xclbin or ELF for XRT, a design for the sim.
  std::string payload;
};

// What one call of an image reports.
struct RunResult {
  double elapsed_us = 0;  // host time around start + wait
  // How long the completion waited for a CPU to be scheduled; irontune
  // refuses figures whose calls waited longer than CPU_WAIT_US.
  double cpu_wait_us = 0;
};

// A loaded artifact. Holds one hardware context from Load until destroyed.
class Image {
 public:
  virtual ~Image() = default;

  // Writes per-call values by symbol. InvalidArgument for a symbol the
  // artifact does not take.
  virtual absl::Status WriteValues(
      const std::map<std::string, int64_t>& values) = 0;
  // Replaces the contents of buffer `name`. REQUIRES: bytes.size() equals
  // the buffer's nbytes (else InvalidArgument).
  virtual absl::Status WriteBuffer(std::string_view name,
                                   std::string_view bytes) = 0;
  // As WriteBuffer, for contents that no run changes (an input buffer) and
  // that other images may share, such as seeded inputs. The default copies
  // them; an implementation may keep the pointer instead.
  virtual absl::Status ShareBuffer(std::string_view name,
                                   std::shared_ptr<const std::string> bytes) {
    return WriteBuffer(name, *bytes);
  }
  // The buffer's present contents.
  virtual absl::StatusOr<std::string> ReadBuffer(std::string_view name) = 0;
  // As ReadBuffer, for a caller that reads the buffer once and not again
  // before the next Run: the image may hand over its own storage instead
  // of copying it, and the buffer's contents are then unspecified until
  // the next Run, which makes them as it would have. The default is
  // ReadBuffer.
  virtual absl::StatusOr<std::string> TakeBuffer(std::string_view name) {
    return ReadBuffer(name);
  }
  // One call: runs every step once. Fails (Internal, Unavailable) when the
  // device reports an error for the call.
  virtual absl::StatusOr<RunResult> Run() = 0;
  // A hint, after a Run: the outputs will be read (ReadBuffer) later, after
  // more runs that leave them as they are. An implementation may start
  // making them ready now, on threads of its own, so the caller does not
  // wait when it reads; every other call still sees the image as if the
  // outputs were ready. The default does nothing.
  virtual void PrepareOutputs() {}
};

class Device {
 public:
  virtual ~Device() = default;

  // The platform as it is now: the power mode may change while we run.
  virtual absl::StatusOr<Platform> GetPlatform() = 0;
  // The versions of the firmware, driver and runtime under the device, as
  // read when it was opened (they cannot change while it is open); each
  // "" where the device could not tell. Never fails.
  virtual StackVersions GetStackVersions() = 0;
  // Loads `artifact` into a new image holding one hardware context.
  // ResourceExhausted when every context is taken; InvalidArgument for an
  // artifact built for another device.
  virtual absl::StatusOr<std::unique_ptr<Image>> Load(
      const Artifact& artifact) = 0;
  // The pids of processes other than this one holding NPU contexts.
  virtual absl::StatusOr<std::vector<int>> OtherHolders() = 0;
};

// Forwards every call to a target, so a test overrides just the one it
// wants to fault. The target is not owned and must outlive the wrapper.
// Images are passed through WrapImage, which a test overrides to fault an
// image's calls (see ImageWrapper).
class DeviceWrapper : public Device {
 public:
  explicit DeviceWrapper(Device* target) : target_(target) {}

  absl::StatusOr<Platform> GetPlatform() override {
    return target_->GetPlatform();
  }
  StackVersions GetStackVersions() override {
    return target_->GetStackVersions();
  }
  absl::StatusOr<std::unique_ptr<Image>> Load(
      const Artifact& artifact) override;
  absl::StatusOr<std::vector<int>> OtherHolders() override {
    return target_->OtherHolders();
  }

 protected:
  // The image Load returns; the default returns `image` itself.
  virtual std::unique_ptr<Image> WrapImage(std::unique_ptr<Image> image,
                                           const Artifact& artifact);
  Device* target() const { return target_; }

 private:
  Device* target_;
};

// Forwards every call to an owned image.
class ImageWrapper : public Image {
 public:
  explicit ImageWrapper(std::unique_ptr<Image> target)
      : target_(std::move(target)) {}

  absl::Status WriteValues(
      const std::map<std::string, int64_t>& values) override {
    return target_->WriteValues(values);
  }
  absl::Status WriteBuffer(std::string_view name,
                           std::string_view bytes) override {
    return target_->WriteBuffer(name, bytes);
  }
  absl::Status ShareBuffer(std::string_view name,
                           std::shared_ptr<const std::string> bytes) override {
    return target_->ShareBuffer(name, std::move(bytes));
  }
  absl::StatusOr<std::string> ReadBuffer(std::string_view name) override {
    return target_->ReadBuffer(name);
  }
  absl::StatusOr<std::string> TakeBuffer(std::string_view name) override {
    return target_->TakeBuffer(name);
  }
  void PrepareOutputs() override { target_->PrepareOutputs(); }
  absl::StatusOr<RunResult> Run() override { return target_->Run(); }

 protected:
  Image* target() const { return target_.get(); }

 private:
  std::unique_ptr<Image> target_;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_NPU_DEVICE_H_
