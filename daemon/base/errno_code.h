// The status code of the errno a file or process call failed with, as
// irontuned reports such failures: ENOENT is NotFound, EACCES and EPERM
// are PermissionDenied, any other errno the caller's `otherwise`.
//
// Thread-safe (a pure function).
#ifndef IRONTUNE_DAEMON_BASE_ERRNO_CODE_H_
#define IRONTUNE_DAEMON_BASE_ERRNO_CODE_H_

#include <cerrno>

#include "absl/status/status.h"

namespace irontune {

inline absl::StatusCode ErrnoCode(int err, absl::StatusCode otherwise) {
  switch (err) {
    case ENOENT:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
      return absl::StatusCode::kPermissionDenied;
    default:
      return otherwise;
  }
}

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_ERRNO_CODE_H_
