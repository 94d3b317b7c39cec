// The XRT artifact manifest: what Artifact.payload holds for a real NPU. A
// JSON object naming the files of one design in the artifact store
// (docs/npu-box.md, "The artifact manifest"):
//
//   {"format": "irontune-xrt-artifact/2",
//    "packaging": "xclbin_chain" | "full_elf",
//    "xclbin": "/abs/design.xclbin", "kernel": "f1a2b3c4_op0",  (xclbin_chain;
//    "insts": "/abs/insts.bin",           kernel optional: the xclbin's first)
//    "elf": "/abs/design.elf",                                   (full_elf)
//    "arenas": [{"name": "input", "nbytes": 8388608}, ...],      (full_elf)
//    "buffers": {"s0.A": {"arena": "input", "offset": 0,         (full_elf)
//                         "nbytes": 8388608}},
//    "symbols": [{"name": "seq_len", "insts_word": 57},          (xclbin_chain)
//                {"name": "pos", "scratchpad_word": 2,           (full_elf)
//                 "kind": "core" | "addr"}]}
//
// A full ELF is IRON's fused image (amd/IRON iron/common/image/fusion.py,
// ArgumentSizes): its runtime sequence "main:sequence" takes byte arenas
// input, output, scratch and, only when declared, feedback, as kernel
// arguments 0.. in that order; each operator buffer is a view (arena,
// offset, nbytes) into one of them (iron/common/image/artifacts.py,
// Artifacts.buffers). Its per-call values are words of the run's ctrl
// scratchpad, encoded by kind: "core" (read by a core) written shifted left
// by 2, "addr" as is (artifacts.py Parameter; mlir-aie
// runtime_lib/test_lib/parameter_scratchpad.h: the firmware masks the low
// bits of a core's word). XRT has no scalar arguments on ELF kernels, so a
// full ELF's symbol is never a kernel argument.
//
// A symbol of the xclbin chain is an int32 written into that word of the
// instruction stream.
//
// Format /1 (one buffer object per operator buffer, values as arguments)
// is refused: the artifact store rebuilds such an entry.
//
// Pure: no file is opened here. Threads: any.
#ifndef IRONTUNE_DAEMON_XRT_ARTIFACT_MANIFEST_H_
#define IRONTUNE_DAEMON_XRT_ARTIFACT_MANIFEST_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "irontune/v1/measurement.pb.h"

namespace irontune {

inline constexpr char kXrtManifestFormat[] = "irontune-xrt-artifact/2";

// How a per-call value is encoded in its ctrl scratchpad word.
enum class ValueKind { kNone, kCore, kAddr };

// "core", "addr" ("" for kNone).
const char* ValueKindName(ValueKind kind);

// The word a full ELF's ctrl scratchpad holds for `value` of `kind`:
// value << 2 for kCore, value for kAddr. InvalidArgument naming `name` when
// the encoded word does not fit a signed 32-bit word.
absl::StatusOr<int32_t> EncodeValue(absl::string_view name, int64_t value,
                                    ValueKind kind);

struct XrtManifestSymbol {
  std::string name;
  // Exactly one is >= 0.
  int insts_word = -1;       // xclbin chain: the instruction word patched
  int scratchpad_word = -1;  // full ELF: the ctrl scratchpad word
  ValueKind kind = ValueKind::kNone;  // full ELF: kCore or kAddr
};

// A full ELF's byte arena: kernel argument `index` of main:sequence.
struct XrtArena {
  std::string name;  // input, output, scratch, feedback
  uint64_t nbytes = 0;
};

// Where an operator buffer lives in a full ELF's arenas.
struct XrtView {
  int arena = 0;  // index into XrtManifest::arenas
  uint64_t offset = 0;
  uint64_t nbytes = 0;
};

struct XrtManifest {
  v1::Packaging packaging = v1::PACKAGING_UNSPECIFIED;
  std::string xclbin;  // xclbin chain
  std::string kernel;  // xclbin chain; empty: the xclbin's first kernel
  std::string insts;   // xclbin chain
  std::string elf;     // full ELF
  std::vector<XrtArena> arenas;          // full ELF, in argument order
  std::map<std::string, XrtView> views;  // full ELF, by buffer name
  std::vector<XrtManifestSymbol> symbols;
};

// The arena names of a full ELF in argument order (fusion.py): input,
// output, scratch, then feedback when declared.
const std::vector<std::string>& ArenaNames();

// Parses `payload`. InvalidArgument naming the field ("manifest.symbols[2]
// .insts_word: ...") for anything else: not JSON, another format (format /1
// named as such), a missing or relative path, arenas not input, output,
// scratch[, feedback], a view outside its arena, not 4-byte aligned or
// partly overlapping another, a symbol with the wrong place or kind for the
// packaging ("arg" on a full ELF included), a negative index, a symbol
// named twice.
absl::StatusOr<XrtManifest> ParseXrtManifest(absl::string_view payload);

// The manifest as JSON text (the inverse of ParseXrtManifest).
std::string XrtManifestJson(const XrtManifest& manifest);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_ARTIFACT_MANIFEST_H_
