// The operator catalogue: IRON's operator classes as amd/IRON declares them
// (kIronCommit), the one home for operator rules. Per class: the params that
// name a profile entry (IRON's param() fields, with their defaults), the
// tunables a profile sets (auto() fields a caller may give), the fields IRON
// derives or fixes (refused in a profile), domains per NPU generation, the
// constraints a setting must satisfy to build, the buffers in order with
// shape, dtype and layout, the per-call values and the accuracy gate.
// Adding a class is one entry in families_table.cc. Hardware facts come
// from docs/npu-facts.md; checks it only implies are marked [inferred].
// docs/operators.md is generated from this catalogue
// (make-operators-doc, tests/common/families_test.cc checks it is current).
// The CPU reference that judges outputs is daemon/ops/reference.h.
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

// The amd/IRON commit the catalogue follows (iron/operators/*,
// iron/common/elementwise.py, iron/common/declare/profile.py).
inline constexpr std::string_view kIronCommit =
    "0274eac8f0716c5a4cda92f80b22df8323720455";

struct Dim {
  std::string name;
  // Unset (kind_case() == KIND_NOT_SET) where the dim has no constant
  // default: IRON requires it, or computes it from other fields (`note`).
  v1::Value default_value;
  std::string note;  // e.g. "follows from num_heads"; "" when none
};

// A tunable: an IRON auto() field a caller or a profile may give.
struct TunableSpec {
  std::string name;
  v1::Value default_value;  // unset: IRON resolves it from the device/shape
  std::string note;
};

// One operand of an IRON class, in IRON's order.
struct BufferSpec {
  std::string name;
  v1::BufferRole role = v1::BUFFER_ROLE_IN;
  std::string shape;   // in the class's params, outermost first: "[M, K]"
  std::string dtype;   // "bf16", "i32", "u8"
  std::string layout;  // row-major unless said; when it is present
};

// A per-call value IRON writes into the image before a call.
struct ValueSpec {
  std::string name;
  std::string meaning;  // what it holds, e.g. "rows used: bounds rows"
  std::string bounds;   // the param it bounds, or ""
};

struct Family {
  std::string class_name;
  std::string summary;                // one line, what it computes
  std::vector<Dim> dims;              // in the order a profile entry lists them
  std::vector<std::string> tunables;  // in the order a profile entry lists them
  std::vector<TunableSpec> tunable_specs;  // the same, with defaults
  // Fields IRON derives or fixes (auto() fields resolve fills): a profile
  // naming one is refused.
  std::vector<std::string> derived;
  // Construction fields that are neither param() nor auto() (dtypes, walks):
  // a recording may carry them as params; a profile may not.
  std::vector<std::string> other_fields;
  std::vector<BufferSpec> buffers;
  std::vector<ValueSpec> values;
  std::string tolerance;  // IRON's accuracy gate, as text
  v1::Tolerance gate;     // the same as irontune's gate
  std::string refusals;   // the build constraints, as text (docs)
  std::string source;     // IRON path, e.g. "iron/operators/gemm.py"
};

// The family of `class_name`, or nullptr for a class irontune does not know.
const Family* FindFamily(std::string_view class_name);

// Every known family, in a fixed order (as docs/operators.md lists them).
const std::vector<Family>& AllFamilies();

// Whether `name` is a dim (param) / tunable / derived field of `family`.
bool IsDim(const Family& family, std::string_view name);
bool IsTunable(const Family& family, std::string_view name);
bool IsDerived(const Family& family, std::string_view name);

// docs/npu-facts.md "Memory and DMA": a core's L1 and the stack kept within it.
inline constexpr int64_t kL1Bytes = 64 * 1024;
inline constexpr int64_t kL1StackBytes = 3380;  // ~3.3 KiB
// Core rows per column, both generations (docs/npu-facts.md "Devices").
inline constexpr int64_t kCoreRows = 4;
// GEMM's L1 holds 2 A + 2 B + 1 or 2 C tiles; irontune counts 2 C tiles
// (output double-buffered), the stricter reading.
inline constexpr int kGemmCTiles = 2;
// IRON's elementwise line cap (iron/common/elementwise.py tile_cap; Rowwise
// 8192) and default line (DEFAULT_TILE).
inline constexpr int64_t kElementwiseTileCap = 4096;
inline constexpr int64_t kRowwiseTileCap = 8192;
inline constexpr int64_t kElementwiseDefaultTile = 256;

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

// The values the catalogue lets the search try for `tunable` of `family` on
// an NPU of `generation` ("npu1": 4 columns, "npu2": 8), in ascending order;
// empty when it has none (an unknown tunable or generation). A recording's
// own domain wins over this one (daemon/tune/settings.h). Domains may hold
// values a shape's constraints refuse; ConstraintViolation prunes those.
std::vector<v1::Value> FamilyDomain(const Family& family,
                                    std::string_view tunable,
                                    std::string_view generation);

// Why `op`, at its tunables' values, cannot build on an NPU of `generation`
// with `columns` usable columns, as a sentence a person can act on (e.g.
// "K 96 is not a multiple of tile_k = 64"); empty when it can. A tunable the
// operator lacks takes IRON's default (GEMM tiles 64, every column). Checks
// IRON's validate/compatible rules, MAC-shape multiples (npu1/npu2 only), the
// L1 budget, columns and positivity; not the device's physical transfer
// limits (memtile, shim descriptors), which its builder checks. For an
// unknown class only num_aie_columns <= columns, when present. Extents are
// the params' full values (a design is built for the whole extent).
std::string ConstraintViolation(const v1::Operator& op,
                                std::string_view generation, int columns);

// docs/operators.md: the catalogue as Markdown, one section per class.
std::string CatalogueMarkdown();

}  // namespace irontune

#endif  // IRONTUNE_COMMON_FAMILIES_H_
