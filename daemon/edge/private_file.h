// Reading a file that holds a secret (the tokens file, the TLS key): the
// file is opened once and judged on what was opened (fstat of the open
// descriptor, so a rename between the check and the read changes nothing),
// refused where other users could change it or, where asked, read it.
//
// Thread-safe (no state).
#ifndef IRONTUNE_DAEMON_EDGE_PRIVATE_FILE_H_
#define IRONTUNE_DAEMON_EDGE_PRIVATE_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace irontune {

struct PrivateFileRules {
  // Mode bits the file may not have: group or others may write it, by
  // default; add S_IROTH for a key others may not read.
  mode_t forbidden = 0022;
  uint64_t max_bytes = 1 << 20;
};

// The contents of `path`, named `what` in errors ("--tokens FILE"). NotFound
// or PermissionDenied where it cannot be opened; FailedPrecondition for no
// regular file, or for a forbidden mode bit, saying which and how to fix
// it (`chmod go-w FILE`); InvalidArgument past max_bytes.
absl::StatusOr<std::string> ReadPrivateFile(const std::string& what,
                                            const std::string& path,
                                            const PrivateFileRules& rules);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_EDGE_PRIVATE_FILE_H_
