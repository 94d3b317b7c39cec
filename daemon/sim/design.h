// The sim's artifact payload: what SimBuilder writes into Artifact.payload
// and SimDevice::Load reads back. Also typed access to an operator's params
// and tunables, shared by the builder's limits, the performance model and
// the kernels.
//
// Payload format (version 1), text header then the operator's bytes:
//
//   irontune-sim-design 1\n
//   generation <npu1|npu2>\n
//   packaging <full_elf|xclbin_chain>\n
//   steps <N>\n
//   distinct <0|1>\n
//   operator <nbytes>\n
//   <nbytes: v1::Operator, deterministic binary serialization>
//
// Decoding never crashes on malformed bytes: it returns InvalidArgument.
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_SIM_DESIGN_H_
#define IRONTUNE_DAEMON_SIM_DESIGN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "irontune/v1/measurement.pb.h"
#include "irontune/v1/recording.pb.h"

namespace irontune::sim {

// Abseil 20220623 on Debian 12 has its own string_view (not std::).
inline absl::string_view AsAbsl(std::string_view s) {
  return {s.data(), s.size()};
}

inline constexpr std::string_view kDesignMagic = "irontune-sim-design 1";

struct SimDesign {
  v1::Operator op;
  std::string generation;
  v1::Packaging packaging = v1::PACKAGING_FULL_ELF;
  int steps = 1;
  bool distinct = true;
};

std::string EncodeSimDesign(const SimDesign& design);
absl::StatusOr<SimDesign> DecodeSimDesign(std::string_view payload);

// Bytes per element of `dtype`; 0 for DTYPE_UNSPECIFIED or unknown.
int DTypeBytes(v1::DType dtype);
// The buffer's size in bytes: product(shape) * DTypeBytes(dtype); nullopt
// when it overflows 2^62.
std::optional<uint64_t> BufferBytes(const v1::Buffer& buffer);

// Per-call values by symbol (CallValue.symbol), as Image::WriteValues gets
// them.
using CallValues = std::map<std::string, int64_t>;

// Typed, read-only access to an operator's params and tunables, through
// common/op_access.h, with per-call values keyed by symbol. Holds a
// reference: `op` and `values` must outlive the view.
class OpView {
 public:
  OpView(const v1::Operator& op, const CallValues& values)
      : op_(op), values_(values) {}

  const v1::Operator& op() const { return op_; }
  const std::string& class_name() const { return op_.class_name(); }

  // An int (or bool) param's value, else `fallback`.
  int64_t Param(std::string_view name, int64_t fallback) const;
  bool HasParam(std::string_view name) const;
  // A string param's value, else `fallback`.
  std::string StringParam(std::string_view name,
                          std::string_view fallback) const;
  // An int (or bool) tunable's value, else `fallback`.
  int64_t Tunable(std::string_view name, int64_t fallback) const;
  bool HasTunable(std::string_view name) const;
  // Param `name` bounded by the per-call values: BoundExtentBySymbol, the
  // smallest value written to a symbol whose CallValue bounds `name`,
  // clamped to [1, param]; the param itself when no such value was written.
  int64_t Extent(std::string_view name, int64_t fallback) const;

 private:
  const v1::Operator& op_;
  const CallValues& values_;
};

}  // namespace irontune::sim

#endif  // IRONTUNE_DAEMON_SIM_DESIGN_H_
