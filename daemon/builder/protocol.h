// The builder protocol (docs/builder-protocol.md, irontune-builder/1): the
// request irontuned writes to a build command, the reply it reads back, and
// the recipe hash a build is stored under.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_BUILDER_PROTOCOL_H_
#define IRONTUNE_DAEMON_BUILDER_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/base/unique_fd.h"
#include "daemon/npu/builder.h"
#include "daemon/npu/platform.h"

namespace irontune {

inline constexpr int kBuilderProtocol = 1;

// A line of a build command's `--version` output, after its version line,
// saying it answers fit requests (FitRequestJson). A command without it is
// never sent one: its fit checks are builds.
inline constexpr char kFitCheckLine[] = "fit-check";

// A per-call value of a built image and where it is written: the word of
// the instruction stream (xclbin chain), or the word of the run's ctrl
// scratchpad (IRON's parameter table; full ELF), with its kind: "core" (a
// core reads it; written shifted left by 2) or "addr" (written as is).
// Exactly one of insts_word and scratchpad_word is >= 0. A full ELF's value
// is never a kernel argument: XRT has no scalar arguments on ELF kernels.
struct BuiltSymbol {
  std::string name;
  int64_t insts_word = -1;
  int64_t scratchpad_word = -1;
  std::string kind;  // full ELF: "core" or "addr"
};

// A full ELF's byte arena; the k-th is argument k of "main:sequence".
struct BuiltArena {
  std::string name;  // input, output, scratch[, feedback]
  uint64_t nbytes = 0;
};

// Where a full ELF's buffer lives: bytes [offset, offset + nbytes) of an
// arena.
struct BuiltView {
  std::string arena;
  uint64_t offset = 0;
};

// A file of a built design: its path as the reply named it, relative to
// the build's directory, and the descriptor ParseReply opened it by
// (daemon/base/beneath.h: inside the directory, no symlink followed, a
// regular file, not empty), through which it is read from then on.
// `path` empty: the packaging has no such file.
struct BuiltFile {
  std::string path;
  UniqueFd fd;
  uint64_t nbytes = 0;  // its size when opened
};

// The files of a built design. `kernel` (xclbin chain) may be empty: the
// xclbin's first kernel.
struct BuiltFiles {
  BuiltFile xclbin, insts;  // xclbin chain
  std::string kernel;       // xclbin chain
  BuiltFile elf;            // full ELF
};

// kFits answers a fit request only.
enum class ReplyStatus { kBuilt, kRefused, kFailed, kFits };

struct BuilderReply {
  ReplyStatus status = ReplyStatus::kFailed;
  std::string reason;
  std::string builder_artifact_hash;  // the builder's own, for diagnosis
  BuiltFiles files;
  std::vector<ArtifactBuffer> buffers;
  // Full ELF: the arenas, and each buffer's view (parallel to `buffers`).
  std::vector<BuiltArena> arenas;
  std::vector<BuiltView> views;
  std::vector<BuiltSymbol> symbols;
};

// The recipe hash of `request` built by a builder whose Environment() is
// `environment`: sha256 hex over the protocol's tag, the environment, the
// platform's name and generation, packaging, steps, distinct and
// DesignBytes(request.op). Known before building; the artifact store's key.
std::string BuildRecipeHash(const BuildRequest& request,
                            std::string_view environment);

// The request's JSON text (one line). `output_dir` is absolute.
std::string RequestJson(const BuildRequest& request,
                        std::string_view recipe_hash,
                        std::string_view output_dir);

// The JSON text (one line) of a fit request for `request`: RequestJson's
// fields without output_dir, with "check": "fit". Only for a command that
// announced kFitCheckLine.
std::string FitRequestJson(const BuildRequest& request,
                           std::string_view recipe_hash);

// Parses a reply to a fit request: status "fits", "refused" (with its
// reason) or "failed". InvalidArgument naming the field for anything else
// ("built" included: a fit request builds nothing).
absl::StatusOr<BuilderReply> ParseFitReply(std::string_view text);

// Parses and checks a reply to `request` (recipe `recipe_hash`). For a built
// design, also opens its files: each path, relative to `output_dir` (or
// absolute inside it), is resolved beneath it with no symlink followed and
// must be a regular, non-empty file (OpenBeneath); the reply holds their
// descriptors. Checks that each insts_word lies within the instruction
// stream; for a full ELF, that the arenas are input, output, scratch[,
// feedback] and each buffer a 4-byte aligned view inside one, overlapping
// no other unless identical to it, and that every symbol has a
// scratchpad_word and a kind (an "arg" is refused). InvalidArgument naming
// the field ("reply.buffers[2].nbytes: ...") for anything malformed, and
// the file and why for a file that may not be read ("reply.files.elf:
// artifact \"sub/x.elf\": a component (\"sub\") is a symlink").
absl::StatusOr<BuilderReply> ParseReply(std::string_view text,
                                        const BuildRequest& request,
                                        std::string_view recipe_hash,
                                        std::string_view output_dir);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BUILDER_PROTOCOL_H_
