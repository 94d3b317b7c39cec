// ArtifactStore: the designs a build command produced, kept in the state
// dir under their recipe hash, so a design is built once per box
// (docs/builder-protocol.md, "The recipe hash and the artifact store").
//
//   DIR/<recipe_hash>/entry.json   what was checked: each file's size and
//                                  sha256, the buffers and symbols
//   DIR/<recipe_hash>/<files>      irontuned's copies of what the builder
//                                  wrote: design.elf, or design.xclbin and
//                                  insts.bin
//   DIR/.tmp/<recipe_hash>-<n>/    builds in progress, entries being made
//
// An entry appears atomically (made in .tmp, renamed into place); its files
// are read through descriptors opened beneath their directory with no
// symlink followed (daemon/base/beneath.h), the builder's and the store's. An
// entry that is missing its entry.json, cannot be read, or whose files are
// missing or changed is deleted by Lookup, which reports a miss, so the design
// is rebuilt. After an insert, least recently used entries are deleted until
// the store is within its cap; the entry just inserted never is.
//
// Threads: thread-safe; one mutex serialises every operation (a lookup
// hashes the entry's files under it).
#ifndef IRONTUNE_DAEMON_BUILDER_ARTIFACT_STORE_H_
#define IRONTUNE_DAEMON_BUILDER_ARTIFACT_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/builder/protocol.h"
#include "daemon/npu/builder.h"

namespace irontune {

class ArtifactStore {
 public:
  // Opens (creating) the store in `dir`, deleting builds a crash left in
  // DIR/.tmp. `max_bytes` caps the total size of the entries; 0: no cap.
  // FailedPrecondition naming the directory when it cannot be made.
  static absl::StatusOr<std::unique_ptr<ArtifactStore>> Open(
      std::string dir, uint64_t max_bytes);

  // The artifact stored under `recipe_hash`, as `request` (its steps,
  // distinct and packaging) asks for it; nullopt when there is none or the
  // entry was broken (then it is deleted). Marks the entry used.
  absl::StatusOr<std::optional<Artifact>> Lookup(const std::string& recipe_hash,
                                                 const BuildRequest& request);

  // A new, empty directory for one build of `recipe_hash`; absolute.
  absl::StatusOr<std::string> NewBuildDir(const std::string& recipe_hash);

  // Makes the entry of `reply`, a build in `build_dir` (a NewBuildDir), and
  // returns its artifact: its files are copied, and hashed as they are,
  // through the descriptors ParseReply opened (never reopened by a path in
  // `build_dir`) into a new directory of irontuned's, which gets entry.json
  // and is then renamed into place. When another build of the recipe got
  // there first, keeps that one. `build_dir` is deleted in every case.
  // Internal naming the file when one cannot be copied or changed size
  // since it was opened.
  absl::StatusOr<Artifact> Insert(const std::string& recipe_hash,
                                  const std::string& build_dir,
                                  const BuilderReply& reply,
                                  const BuildRequest& request);

  // Deletes a build directory that will not be inserted.
  void Discard(const std::string& build_dir);

  // The total size of the entries, in bytes.
  uint64_t TotalBytes();

  const std::string& dir() const { return dir_; }

 private:
  ArtifactStore(std::string dir, uint64_t max_bytes)
      : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  absl::StatusOr<std::optional<Artifact>> LoadEntry(
      const std::string& recipe_hash, const BuildRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A new, empty directory DIR/.tmp/<recipe_hash>-<pid>-<n>, mode 0700.
  absl::StatusOr<std::string> NewTmpDir(const std::string& recipe_hash)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Evict(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const uint64_t max_bytes_;
  absl::Mutex mu_;
  uint64_t next_build_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BUILDER_ARTIFACT_STORE_H_
