// UniqueFd: an open file descriptor, owned: closed when the UniqueFd goes.
// Move-only. Not thread-safe (one owner).
#ifndef IRONTUNE_DAEMON_BASE_UNIQUE_FD_H_
#define IRONTUNE_DAEMON_BASE_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace irontune {

class UniqueFd {
 public:
  UniqueFd() = default;
  // Takes `fd` (-1: none).
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held, then holds `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_UNIQUE_FD_H_
