// Opening a file that another program (a build command) wrote into a
// directory, by the path that program named, so that what is read is a
// regular file inside that directory and nothing else: the path is resolved
// component by component beneath the directory with no symlink followed
// (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS on Linux 5.6 and later; where openat2 is missing or
// refused, a walk opening one component at a time with O_NOFOLLOW from the
// directory's descriptor). The file is then read through the descriptor
// returned: a rename or a new symlink after the check changes nothing.
//
// Thread-safe (no state).
#ifndef IRONTUNE_DAEMON_BASE_BENEATH_H_
#define IRONTUNE_DAEMON_BASE_BENEATH_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "daemon/base/unique_fd.h"

namespace irontune {

// The directory `path`, opened (O_DIRECTORY | O_NOFOLLOW: its own last
// component may not be a symlink) for OpenBeneath. NotFound,
// PermissionDenied or FailedPrecondition naming it.
absl::StatusOr<UniqueFd> OpenDirectory(const std::string& path);

// A regular file opened for reading, and its size when opened.
struct BeneathFile {
  UniqueFd fd;
  uint64_t size = 0;
};

enum class BeneathMethod {
  kBest,  // openat2 where the kernel has it, else kWalk
  kWalk,  // the O_NOFOLLOW walk alone (tests run it where openat2 exists)
};

// Opens `path`, relative to the directory `dir_fd`, for reading. Empty and
// "." components are skipped. Errors name the path and why, e.g.
// `"sub/x.elf": a component ("sub") is a symlink`:
//   InvalidArgument: empty, absolute, or with a ".." component;
//   FailedPrecondition: a component is a symlink, or not a directory; the
//     file is not a regular file (a fifo, a device, a directory, a socket);
//   NotFound: a component does not exist; PermissionDenied; Internal.
// A fifo or device is opened non-blocking (and never as a controlling
// terminal) only to be refused; the descriptor returned blocks as usual.
absl::StatusOr<BeneathFile> OpenBeneath(
    int dir_fd, std::string_view path,
    BeneathMethod method = BeneathMethod::kBest);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_BENEATH_H_
