#include "daemon/base/beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "daemon/base/errno_code.h"

#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define IRONTUNE_HAVE_OPENAT2_H 1
#endif

namespace irontune {
namespace {

absl::string_view A(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// The file itself: read-only, never through a symlink, without blocking on
// a fifo, never a controlling terminal.
constexpr int kFileFlags =
    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
constexpr int kDirFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECTORY;

absl::Status Bad(absl::StatusCode code, std::string_view path,
                 std::string_view why) {
  return absl::Status(code, absl::StrCat("\"", A(path), "\": ", A(why)));
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "of an unknown kind";
}

// The components of `path` to open one after the other, without empty and
// "." ones.
absl::StatusOr<std::vector<std::string>> Components(std::string_view path) {
  const absl::StatusCode invalid = absl::StatusCode::kInvalidArgument;
  if (path.empty()) return absl::InvalidArgumentError("the path is empty");
  if (path.find('\0') != std::string_view::npos)
    return Bad(invalid, path, "holds a NUL byte");
  if (path.front() == '/')
    return Bad(invalid, path, "is absolute, not inside the directory");
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(A(path), '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..")
      return Bad(invalid, path, "has a \"..\" component, which may leave it");
    parts.emplace_back(part);
  }
  if (parts.empty()) return Bad(invalid, path, "names the directory itself");
  return parts;
}

// Why component `name` (the file itself when `last`) in directory `at`
// could not be opened with errno `err`.
absl::Status ComponentError(int at, const std::string& name,
                            std::string_view path, int err, bool last) {
  const std::string which = last ? std::string("the file")
                                 : absl::StrCat("a component (\"", name, "\")");
  struct stat st {};
  const bool is_link =
      ::fstatat(at, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISLNK(st.st_mode);
  if (is_link || err == ELOOP) {
    return Bad(absl::StatusCode::kFailedPrecondition, path,
               absl::StrCat(which, " is a symlink"));
  }
  switch (err) {
    case ENOENT:
      return Bad(absl::StatusCode::kNotFound, path,
                 absl::StrCat(which, " does not exist"));
    case ENOTDIR:
      return Bad(absl::StatusCode::kFailedPrecondition, path,
                 absl::StrCat(which, " is not a directory"));
    default:
      return Bad(ErrnoCode(err, absl::StatusCode::kInternal), path,
                 absl::StrCat(which, ": ", std::strerror(err)));
  }
}

// One component at a time from `dir_fd`, each opened with O_NOFOLLOW.
absl::StatusOr<UniqueFd> Walk(int dir_fd, const std::vector<std::string>& parts,
                              std::string_view path) {
  UniqueFd held;  // the directory reached so far, once below dir_fd
  int at = dir_fd;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const int fd =
        ::openat(at, parts[i].c_str(), last ? kFileFlags : kDirFlags);
    if (fd < 0) return ComponentError(at, parts[i], path, errno, last);
    if (last) return UniqueFd(fd);
    held.reset(fd);
    at = fd;
  }
  return absl::InternalError("no component to open");  // Components refuses
}

// openat2 beneath `dir_fd` with no symlink followed; -1 with errno set
// (ENOSYS where the kernel or the headers lack it).
int OpenAt2(int dir_fd, const std::string& path) {
#if defined(IRONTUNE_HAVE_OPENAT2_H) && defined(SYS_openat2)
  struct open_how how {};
  how.flags = kFileFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(
      ::syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof how));
#else
  (void)dir_fd;
  (void)path;
  errno = ENOSYS;
  return -1;
#endif
}

// `fd` as a BeneathFile when it is a regular file, made blocking again.
absl::StatusOr<BeneathFile> Regular(UniqueFd fd, std::string_view path) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Bad(absl::StatusCode::kInternal, path,
               absl::StrCat("cannot stat: ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return Bad(
        absl::StatusCode::kFailedPrecondition, path,
        absl::StrCat("is not a regular file (", KindOf(st.st_mode), ")"));
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return BeneathFile{std::move(fd), static_cast<uint64_t>(st.st_size)};
}

}  // namespace

absl::StatusOr<UniqueFd> OpenDirectory(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), kDirFlags));
  if (fd.valid()) return fd;
  const int err = errno;
  const std::string why =
      absl::StrCat("directory ", path, ": ",
                   err == ELOOP || err == ENOTDIR ? "not a directory (or a "
                                                    "symlink to one)"
                                                  : std::strerror(err));
  return absl::Status(ErrnoCode(err, absl::StatusCode::kFailedPrecondition),
                      why);
}

absl::StatusOr<BeneathFile> OpenBeneath(int dir_fd, std::string_view path,
                                        BeneathMethod method) {
  ASSIGN_OR_RETURN(const std::vector<std::string> parts, Components(path));
  UniqueFd fd;
  if (method == BeneathMethod::kBest) {
    fd.reset(OpenAt2(dir_fd, absl::StrJoin(parts, "/")));
  }
  // Whatever openat2 refused (or lacks), the walk resolves again: it is as
  // strict, and names the component at fault.
  if (!fd.valid()) {
    ASSIGN_OR_RETURN(fd, Walk(dir_fd, parts, path));
  }
  return Regular(std::move(fd), path);
}

}  // namespace irontune
