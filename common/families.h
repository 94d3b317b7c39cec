// The operator families irontune knows: IRON's classes, with the params that
// name a profile entry (dims), the tunables a profile sets, their domains per
// NPU generation and the constraints a setting must satisfy to resolve on a
// device. Facts from docs/npu-facts.md ("GEMM", "GEMV",
// "Memory and DMA"); checks docs/npu-facts.md only implies are marked
// [inferred] in families.cc. The CPU reference that judges outputs is
// daemon/ops/reference.h.
//
// Immutable after construction; every function is thread-safe.
#ifndef IRONTUNE_COMMON_FAMILIES_H_
#define IRONTUNE_COMMON_FAMILIES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "irontune/v1/recording.pb.h"
#include "irontune/v1/value.pb.h"

namespace irontune {

struct Dim {
  std::string name;
  // Unset (kind_case() == KIND_NOT_SET) where the dim has no default: an
  // entry always names it.
  v1::Value default_value;
};

struct Family {
  std::string class_name;
  std::vector<Dim> dims;              // in the order a profile entry lists them
  std::vector<std::string> tunables;  // in the order a profile entry lists them
};

// The family of `class_name`, or nullptr for a class irontune does not know.
const Family* FindFamily(std::string_view class_name);

// Every known family, in a fixed order.
const std::vector<Family>& AllFamilies();

// docs/npu-facts.md "Memory and DMA": a core's L1 and the stack kept within it.
inline constexpr int64_t kL1Bytes = 64 * 1024;
inline constexpr int64_t kL1StackBytes = 3380;  // ~3.3 KiB
// Core rows per column, both generations (docs/npu-facts.md "Devices").
inline constexpr int64_t kCoreRows = 4;
// GEMM's L1 holds 2 A + 2 B + 1 or 2 C tiles; irontune counts 2 C tiles
// (output double-buffered), the stricter reading.
inline constexpr int kGemmCTiles = 2;

// A kernel's MAC shape (r, s, t): a tile_m x tile_k x tile_n tile is
// computed in r x s x t blocks.
struct MacShape {
  int r = 4;
  int s = 8;
  int t = 4;
};

// The bf16 GEMM MAC shape of `generation`: npu1 (4, 8, 4) (docs/npu-facts.md
// "GEMM"), npu2 (4, 8, 8) [inferred]; nullopt for another generation.
std::optional<MacShape> Bf16MacShape(std::string_view generation);

// Element bytes of a dtype param's name ("bf16", "i8", "f32", ...); 2 for
// an unknown name (bf16 is IRON's default, docs/npu-facts.md "GEMM").
int DTypeNameBytes(std::string_view name);

// The values the search may try for `tunable` of `family` on an NPU of
// `generation` ("npu1": 4 columns, "npu2": 8), in ascending order; empty
// when the registry has none (an unknown tunable or generation): the
// recording's domain applies then. Domains may hold values a shape's
// constraints refuse; ConstraintViolation prunes those.
std::vector<v1::Value> FamilyDomain(const Family& family,
                                    std::string_view tunable,
                                    std::string_view generation);

// Why `op`, at its tunables' values, cannot resolve on an NPU of
// `generation` with `columns` usable columns, as a sentence a person can
// act on (e.g. "K 96 is not a multiple of tile_k = 64"); empty when it can.
// A tunable the operator lacks takes IRON's default (GEMM tiles 64, every
// column). Checks divisibility, MAC-shape multiples (npu1/npu2 only), the
// L1 budget, columns and positivity; not the device's physical transfer
// limits (memtile, shim descriptors), which its builder checks. For an
// unknown class only num_aie_columns <= columns, when present. Extents are
// the params' full values (a design is built for the whole extent).
std::string ConstraintViolation(const v1::Operator& op,
                                std::string_view generation, int columns);

}  // namespace irontune

#endif  // IRONTUNE_COMMON_FAMILIES_H_
