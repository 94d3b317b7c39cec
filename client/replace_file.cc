#include "client/replace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace irontune {
namespace {

// The process's umask, read from /proc/self/status ("Umask:\t0022") so
// that it is not changed to be read; 077 where it cannot be read, the
// stricter guess.
mode_t CurrentUmask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view value = line;
    if (!absl::ConsumePrefix(&value, "Umask:")) continue;
    const std::string digits(absl::StripAsciiWhitespace(value));
    char* end = nullptr;
    const uint64_t mask = strtoull(digits.c_str(), &end, 8);
    if (!digits.empty() && *end == '\0') return mask & 0777;
  }
  return 077;
}

}  // namespace

FileReplacement::FileReplacement(std::string path)
    : path_(std::move(path)), temporary_(path_ + ".tmp.XXXXXX") {
  fd_ = mkostemp(temporary_.data(), O_CLOEXEC);
  if (fd_ < 0) {
    const int error = errno;
    temporary_.clear();  // nothing to remove
    Failed("cannot create a temporary file beside", error);
  }
}

FileReplacement::~FileReplacement() {
  if (fd_ >= 0) close(fd_);
  if (!committed_ && !temporary_.empty()) unlink(temporary_.c_str());
}

void FileReplacement::Failed(const std::string& what, int error) {
  if (!status_.ok()) return;
  status_ = absl::DataLossError(
      absl::StrCat(what, " ", path_, ": ", strerror(error)));
}

bool FileReplacement::Append(absl::string_view bytes) {
  while (status_.ok() && !bytes.empty()) {
    const ssize_t n = write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno != EINTR) Failed("cannot write", errno);
      continue;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return status_.ok();
}

absl::Status FileReplacement::Commit() {
  if (status_.ok() && fchmod(fd_, 0666 & ~CurrentUmask()) != 0) {
    Failed("cannot set the mode of", errno);
  }
  if (status_.ok() && fsync(fd_) != 0) Failed("cannot write", errno);
  if (fd_ >= 0) {
    if (close(fd_) != 0) Failed("cannot write", errno);
    fd_ = -1;
  }
  if (status_.ok() && rename(temporary_.c_str(), path_.c_str()) != 0) {
    Failed("cannot rename into place", errno);
  }
  committed_ = status_.ok();
  return status_;
}

absl::Status ReplaceFile(const std::string& path, absl::string_view text) {
  FileReplacement file(path);
  file.Append(text);
  return file.Commit();
}

}  // namespace irontune
