#include "daemon/edge/private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace irontune {
namespace {

// What `mode`'s forbidden bits let others do, and the chmod that stops it.
std::string Exposure(mode_t bad, const std::string& path) {
  std::string who, fix;
  if (bad & (S_IWGRP | S_IWOTH)) {
    who = "writable by other users";
    fix = absl::StrCat("chmod go-w ", path);
  }
  if (bad & (S_IRGRP | S_IROTH)) {
    if (!who.empty()) who += " and ";
    who += "readable by other users";
    fix = absl::StrCat("chmod go-rw ", path);
  }
  return absl::StrCat(who, "; ", fix);
}

}  // namespace

absl::StatusOr<std::string> ReadPrivateFile(const std::string& what,
                                            const std::string& path,
                                            const PrivateFileRules& rules) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    const std::string why = absl::StrCat(what, ": ", std::strerror(err));
    return err == EACCES ? absl::PermissionDeniedError(why)
                         : absl::NotFoundError(why);
  }
  struct stat st {};
  absl::Status bad;
  if (::fstat(fd, &st) != 0) {
    bad = absl::FailedPreconditionError(
        absl::StrCat(what, ": cannot stat: ", std::strerror(errno)));
  } else if (!S_ISREG(st.st_mode)) {
    bad = absl::FailedPreconditionError(
        absl::StrCat(what, ": not a regular file"));
  } else if (const mode_t m = st.st_mode & rules.forbidden; m != 0) {
    bad = absl::FailedPreconditionError(absl::StrFormat(
        "%s: mode %04o is %s", what, st.st_mode & 07777, Exposure(m, path)));
  } else if (static_cast<uint64_t>(st.st_size) > rules.max_bytes) {
    bad = absl::InvalidArgumentError(absl::StrCat(
        what, ": ", st.st_size, " bytes, more than ", rules.max_bytes));
  }
  std::string text;
  if (bad.ok()) {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  if (!bad.ok()) return bad;
  return text;
}

}  // namespace irontune
