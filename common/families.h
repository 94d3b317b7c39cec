// The operator catalogue: IRON's operator classes as amd/IRON declares them
// (kIronCommit), the one home for operator rules. Per class: the params that
// name a profile entry (IRON's param() fields, with their defaults), the
// tunables a profile sets (auto() fields a caller may give), the fields IRON
// derives or fixes (refused in a profile), each tunable's domain rule
// (common/families_domain.h: Width, Divisors, Choices, Placement, Pinned,
// `when`), the constraints a setting must satisfy to build, the buffers in
// order with shape, dtype and layout, the per-call values and the accuracy
// gate. Adding a class is one entry in families_table.cc. Hardware facts come
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

#include "common/families_domain.h"
#include "irontune/v1/recording.pb.h"
#include "irontune/v1/value.pb.h"

namespace irontune {

// The amd/IRON commit the catalogue follows: the newest readable operator
// model, with domain rules (iron/common/declare/domain.py, placement.py,
// iron/common/elementwise.py, iron/operators/{gemm,gemv,mha,softmax,
// transpose,gqa}.py). A class whose file is read at another commit names
// it in Family::commit.
inline constexpr std::string_view kIronCommit =
    "607010e5a0ceffce6c804e1bc06d3e3a4d87117c";
// The commit the classes IRON declares no domain rule for were read at
// (their domains are irontune's lists, DomainRule::origin says so).
inline constexpr std::string_view kIronBaseCommit =
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
  DomainRule domain;  // the values the search tries (families_domain.h)
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
  // The amd/IRON commit `source` is read at; "" where the index that
  // served the file named none (its newest stored version).
  std::string commit;
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
// A row of GEMV's A above this many bytes resolves tile_size_input to 1
// (IRON's Target.L1_BANK_BYTES).
inline constexpr int64_t kGemvRowBankBytes = 8192;
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

// The spec of tunable `tunable` of `family`, or nullptr.
const TunableSpec* FindTunable(const Family& family, std::string_view tunable);

// A shape-free sample of `tunable`'s domain on `generation` ("npu1": 4
// columns, "npu2": 8), of the tunable's kind: a Width's powers of two up to
// the columns, widest first; a Choices' or Placement's options; for a
// Divisors or Pinned rule, which need a shape, one value: the tunable's
// catalogue default, else the rule's constant step, else 1. Empty for an
// unknown tunable or generation, or a tunable with no rule. For kinds and
// docs; the search asks OperatorDomain.
std::vector<v1::Value> FamilyDomain(const Family& family,
                                    std::string_view tunable,
                                    std::string_view generation);

// `tunable`'s resolved value on `op` (IRON's value after resolve on a
// device of `generation` with `columns` columns): the operator's own value
// where set, else the catalogue's default, else the class's resolve rule
// (the column count: the most columns at which `op` builds, as IRON's
// resolve_columns; GEMM tile_m: the widest of 64, 32, 16, 8 that splits M
// over the rows and the MAC block divides; GEMV tile_size_input: 2 rows,
// or 1 where a row is above kGemvRowBankBytes, tile_size_output: at least 2
// and a multiple of it; Softmax block: the row, or where the row is longer
// than 4096 the longest multiple of 32 up to 1024 dividing it, streamed:
// block < cols). nullopt for a tunable the catalogue cannot resolve.
std::optional<v1::Value> ResolvedTunable(const v1::Operator& op,
                                         std::string_view tunable,
                                         std::string_view generation,
                                         int columns);

// The values the search tries for `tunable` of `op` on `generation`, its
// rule (TunableSpec::domain) evaluated as IRON's Domain.values(op, dev,
// name) is: on `op` with every tunable resolved (ResolvedTunable), the
// device DomainDeviceOf(generation), in IRON's order, the resolved value
// among them. A rule gated `when` a bool param that is false (its
// default where the operator lacks it) yields the resolved value alone.
// Empty for an unknown class, tunable or generation, or a tunable the
// operator cannot resolve. A recording's own domain wins over this one
// (daemon/tune/settings.h). Values may be ones a shape's constraints
// refuse; ConstraintViolation prunes those.
std::vector<v1::Value> OperatorDomain(const v1::Operator& op,
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

// A gate as a `.rec` writes it (Operator.tolerance): "exact", "close atol
// 0.15 rtol 0.04", "bf16_ulps 1", "bf16_ulps 2 atol 1.17549e-38", then
// " max_mismatch_frac 0.005" when that is set; "none" when no gate is set.
std::string GateText(const v1::Tolerance& gate);

// docs/operators.md: the catalogue as Markdown, one section per class.
std::string CatalogueMarkdown();

}  // namespace irontune

#endif  // IRONTUNE_COMMON_FAMILIES_H_
