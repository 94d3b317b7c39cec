// The XRT artifact manifest: what Artifact.payload holds for a real NPU. A
// JSON object naming the files of one design in the artifact store
// (docs/npu-box.md, "The artifact manifest"):
//
//   {"format": "irontune-xrt-artifact/1",
//    "packaging": "xclbin_chain" | "full_elf",
//    "xclbin": "/abs/design.xclbin", "kernel": "MLIR_AIE",
//    "insts": "/abs/insts.bin",                 (xclbin_chain)
//    "elf": "/abs/design.elf",                  (full_elf)
//    "symbols": [{"name": "seq_len", "insts_word": 57},   (xclbin_chain)
//                {"name": "seq_len", "arg": 5},           (full_elf)
//                {"name": "pos", "scratchpad_word": 2}]}  (full_elf)
//
// A symbol of the xclbin chain is an int32 written into that word of the
// instruction stream; one of a full ELF is either that kernel argument or
// that 32-bit word of the run's ctrl scratchpad (IRON's parameter table:
// docs/builder-protocol.md).
//
// Pure: no file is opened here. Threads: any.
#ifndef IRONTUNE_DAEMON_XRT_ARTIFACT_MANIFEST_H_
#define IRONTUNE_DAEMON_XRT_ARTIFACT_MANIFEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "irontune/v1/measurement.pb.h"

namespace irontune {

inline constexpr char kXrtManifestFormat[] = "irontune-xrt-artifact/1";

struct XrtManifestSymbol {
  std::string name;
  // Exactly one is >= 0.
  int insts_word = -1;       // xclbin chain: the instruction word patched
  int arg = -1;              // full ELF: the kernel argument index
  int scratchpad_word = -1;  // full ELF: the ctrl scratchpad word
};

struct XrtManifest {
  v1::Packaging packaging = v1::PACKAGING_UNSPECIFIED;
  std::string xclbin;  // xclbin chain
  std::string kernel;  // xclbin chain
  std::string insts;   // xclbin chain
  std::string elf;     // full ELF
  std::vector<XrtManifestSymbol> symbols;
};

// Parses `payload`. InvalidArgument naming the field ("manifest.symbols[2]
// .insts_word: ...") for anything else: not JSON, another format, a
// missing or relative path, a symbol with the wrong index kind for the
// packaging or with two places, a negative index, a symbol named twice.
absl::StatusOr<XrtManifest> ParseXrtManifest(absl::string_view payload);

// The manifest as JSON text (the inverse of ParseXrtManifest).
std::string XrtManifestJson(const XrtManifest& manifest);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_XRT_ARTIFACT_MANIFEST_H_
